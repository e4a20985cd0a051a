"""Resolve a sweep's study once, at the entry point, and hand it to the engine.

`resolve_start(overrides)` is where `study=NAME` (or a resumed run's manifest) becomes a
StudyDefinition, through the registry (pipeline.studies), inside the shared outcome frame
(jobs.outcome_frame). The config is composed once: the study is known before composing (the
last `study=NAME`, else conf/config.yaml's default), so its default panel goes into that one
composition. A resume refuses another study in one line before composing (composing the
recorded overrides under another study's node gives unrelated key errors), and a manifest
whose study disagrees with its recorded config is refused by the registry (`study_of`).

`execute_sweep` and `run_sweep` here take overrides, like the command line, for tests and
scripts; the engine's own take the resolved SweepStart.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.outcome_frame import framed
from pipeline import studies
from pipeline.config import compose, selects_panel, study_choice
from pipeline.store.reader import RunDirError, validate_run_dir
from pipeline.sweep.start import SweepStart

if TYPE_CHECKING:
    from pipeline.sweep.execute import SweepEnd
    from pipeline.sweep.run import Prepared


def _resume_dir(overrides: Sequence[str]) -> Path | None:
    for item in overrides:
        if item.startswith("resume=") and item.split("=", 1)[1] not in ("", "null"):
            return Path(item.split("=", 1)[1])
    return None


def resolve_start(overrides: Sequence[str]) -> SweepStart:
    """Resolve the study and compose the config once; UserErrors in one line on bad input."""
    from pipeline.store.manifest import load_manifest

    resume_dir = _resume_dir(overrides)
    manifest = None
    effective = list(overrides)
    if resume_dir is not None:
        if not resume_dir.is_dir():
            raise RunDirError(f"run directory {resume_dir} does not exist")
        manifest = load_manifest(resume_dir)
        recorded_study = studies.study_of(manifest)
        asked = [o.split("=", 1)[1] for o in overrides if o.startswith("study=")]
        if asked and asked[-1] != recorded_study:
            raise RunDirError(f"resume cannot change study: {recorded_study} -> {asked[-1]}")
        studies.check_tables_belong(resume_dir, studies.definition(recorded_study))
        validate_run_dir(resume_dir, studies.layout(studies.definition(recorded_study)))
        recorded = [str(o) for o in manifest.extra.get("overrides", [])]
        effective = [*recorded, *[o for o in overrides if not o.startswith("resume=")]]
        effective.append(f"resume={resume_dir}")
    definition = framed(studies.definition(study_choice(effective)))  # the shared outcome frame
    if definition.default_panel is not None and not selects_panel(effective):
        effective.append(f"+panel={definition.default_panel}")
    composed = compose(effective)
    study = definition.configure(composed.cfg.study)
    return SweepStart(
        overrides=composed.overrides,
        resolved=composed.data,
        cfg=composed.cfg,
        definition=definition,
        study=study,
        resume_dir=resume_dir,
        manifest=manifest,
    )


def execute_sweep(overrides: Sequence[str], **options: Any) -> SweepEnd:
    """`pipeline.sweep.execute.execute_sweep` of these overrides (a SweepEnd)."""
    from pipeline.sweep.execute import execute_sweep as execute

    return execute(overrides, resolve=resolve_start, **options)


def run_sweep(overrides: Sequence[str], **options: Any) -> Path:
    """`pipeline.sweep.execute.run_sweep` of these overrides: the run directory."""
    from pipeline.sweep.execute import run_sweep as run

    return run(overrides, resolve=resolve_start, **options)


def prepare(overrides: Sequence[str]) -> Prepared:
    """`pipeline.sweep.run.prepare` of these overrides (tests, `probe`, benchmarks)."""
    from pipeline.sweep.run import prepare as prepare_start

    return prepare_start(resolve_start(overrides))
