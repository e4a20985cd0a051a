"""What every study's decision says about its run: its name, its inputs and whether it is real.

A study's `decide` builds its answers from its own outputs; the rest of a `StudyDecision` is
the same for every study and is read here, once, from the manifest the engine wrote: the
input digest (`fixture_sha256`: a fixture's, a corpus's or a template set's SHA-256, so two
runs on other inputs are never pooled) and whether its rows are simulated or replayed
recordings (either way no recommendation stands: pipeline/decision.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jobs import io
from jobs.provenance_header import run_is_simulated
from pipeline.decision import Answer, StudyDecision

REPLAYED_PANEL = "replay"  # +panel=replay serves recorded replies: not a measurement


def study_decision(
    run_dir: Path,
    study: str,
    answers: Sequence[Answer],
    *,
    rows_simulated: bool,
    missing: Sequence[str] = (),
    inputs: str | None = None,
) -> StudyDecision:
    """The run's decision; `inputs` is the digest to use when the manifest records none."""
    manifest = io.read_manifest(run_dir) or {}
    panel = ((manifest.get("config") or {}).get("panel") or {}).get("kind")
    simulated = run_is_simulated(manifest, rows_simulated=rows_simulated)
    return StudyDecision(
        study=study,
        run_dir=str(run_dir),
        run_name=run_dir.name,
        inputs=manifest.get("fixture_sha256") or inputs,
        simulated=simulated or panel == REPLAYED_PANEL,
        answers=tuple(answers),
        missing=tuple(missing),
    )
