"""What the CLI hands the engine to start a sweep: the study, resolved once, and its config.

The engine never looks a study up (import-linter forbids `pipeline.studies` to it): the entry
point (pipeline.commands.start) resolves the study by name or from a resumed run's manifest,
composes the config once and configures the study, then passes this value down. `prepare`
(pipeline.sweep.run) takes it from there: panel, probes' static rules, secrets, run dir.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.config import RunConfig
from pipeline.store.manifest import Manifest
from pipeline.study import AnalysedStudy, Study


@dataclass(frozen=True)
class SweepStart:
    """A sweep's inputs as the entry point resolved them; nothing has been checked further.

    `overrides` are the session's effective ones (on a resume the recorded ones first, then
    the command line's, then `resume=RUN_DIR`; a study's default panel appended), `resolved`
    the one composition of them and `cfg` the typed config built from that same dict."""

    overrides: tuple[str, ...]
    resolved: dict[str, Any]
    cfg: RunConfig
    definition: AnalysedStudy
    study: Study
    resume_dir: Path | None = None
    manifest: Manifest | None = None  # the resumed run's, as it was found


StartResolver = Callable[[Sequence[str]], SweepStart]
"""The entry point's resolution of a session's overrides (pipeline.commands.start), which the
engine calls once it holds the run dir's lock (pipeline/sweep/claim.py)."""
