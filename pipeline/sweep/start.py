"""What the CLI hands the engine to start a sweep: the study, resolved once, and its config.

The engine never looks a study up (import-linter forbids `pipeline.studies` to it): the entry
point (pipeline.commands.start) resolves the study by name or from a resumed run's manifest,
composes the config once and configures the study, then passes this value down. On a resume
it first takes the run dir's lock (pipeline/sweep/claim.py) and hands it down with the rest.
`prepare` (pipeline.sweep.run) takes it from there: panel, probes' static rules, secrets, run dir.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.config import RunConfig
from pipeline.config.schema import AnalysisConfig
from pipeline.store.manifest import Manifest
from pipeline.store.run_lock import HeldLock
from pipeline.study import Study, StudyDefinition


@dataclass(frozen=True)
class SweepStart:
    """A sweep's inputs as the entry point resolved them; nothing has been checked further.

    `overrides` are the session's effective ones (on a resume the recorded ones first, then
    the command line's, then `resume=RUN_DIR`; a study's default panel appended), `resolved`
    the one composition of them and `cfg` the typed config built from that same dict.

    `finish` and `nothing_ran_cause` are the registry's rule for a run's end, bound to the
    study (pipeline.studies): the run's analysis and report once (the nothing-ran report for
    a run without rows), and why a run has no attempt at all, in one line."""

    overrides: tuple[str, ...]
    resolved: dict[str, Any]
    cfg: RunConfig
    definition: StudyDefinition
    study: Study
    finish: Callable[[Path, AnalysisConfig], Path]
    nothing_ran_cause: Callable[[Path], str]
    resume_dir: Path | None = None
    manifest: Manifest | None = None  # the resumed run's, as it was found
    lock: HeldLock | None = None  # the resumed run dir's, held by the entry point until the end
