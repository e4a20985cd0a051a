"""Resolve a sweep's study once, at the entry point, and hand it to the engine.

`resolve_start(overrides)` is where `study=NAME` (or a resumed run's manifest) becomes a
StudyDefinition, through the registry (pipeline.studies), and the registry's rule for a
run's end is bound to it (`finish`, `nothing_ran_cause`), so the engine runs it without looking
a study up. The config is composed once: the study is known before composing (the
last `study=NAME`, else conf/config.yaml's default), so its default panel goes into that one
composition. A resume refuses another study in one line before composing (composing the
recorded overrides under another study's node gives unrelated key errors), and a manifest
whose study disagrees with its recorded config is refused by the registry (`study_of`).

A session (`claimed_start`) takes a resumed run dir's lock before it reads anything of it and
holds it to the end, so a second session on a live run is refused before its manifest is read
(issue 19); the engine gets the lock with the start (`SweepStart.lock`) and locks a new run's
directory itself, where it creates it. `resume=RUN_DIR` is parsed here alone (`resume_dir_of`).
`execute_sweep` and `run_sweep` here take overrides, like the command line, for tests and
scripts; the engine's own take the resolved SweepStart.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline import studies
from pipeline.config import compose, selects_panel, study_choice
from pipeline.store.reader import RunDirError, validate_run_dir
from pipeline.sweep.start import SweepStart

if TYPE_CHECKING:
    from pipeline.store.run_lock import HeldLock
    from pipeline.sweep.execute import SweepEnd
    from pipeline.sweep.run import Prepared


def resume_dir_of(overrides: Sequence[str]) -> Path | None:
    """The run dir `resume=RUN_DIR` names (None: a new run; `resume=null` too)."""
    for item in overrides:
        if item.startswith("resume=") and item.split("=", 1)[1] not in ("", "null"):
            return Path(item.split("=", 1)[1])
    return None


def resolve_start(overrides: Sequence[str]) -> SweepStart:
    """Resolve the study and compose the config once; UserErrors in one line on bad input.

    A resumed run dir is read without its lock (`probe`, tests); a sweep takes
    `claimed_start`."""
    return _resolved(overrides, resume_dir_of(overrides), lock=None)


@contextlib.contextmanager
def claimed_start(overrides: Sequence[str]) -> Iterator[SweepStart]:
    """A sweep session's start, for the `with` block: a resumed run dir is locked (RunDirInUse
    while a live session holds it) before anything of it is read, and stays locked."""
    from pipeline.sweep.claim import locked_resume

    resume_dir = resume_dir_of(overrides)
    with contextlib.ExitStack() as held:
        lock = None
        if resume_dir is not None and resume_dir.is_dir():  # a missing one: refused resolving
            lock = held.enter_context(locked_resume(resume_dir))
        yield _resolved(overrides, resume_dir, lock)


def _resolved(
    overrides: Sequence[str], resume_dir: Path | None, lock: HeldLock | None
) -> SweepStart:
    from pipeline.store.manifest import load_manifest

    manifest = None
    effective = list(overrides)
    if resume_dir is not None:
        if not resume_dir.is_dir():
            raise RunDirError(f"run directory {resume_dir} does not exist")
        manifest = load_manifest(resume_dir)
        recorded_study = studies.study_of(manifest)
        recorded = [str(o) for o in manifest.extra.get("overrides", [])]
        effective = [*recorded, *[o for o in overrides if not o.startswith("resume=")]]
        studies.check_tables_belong(resume_dir, studies.definition(recorded_study))
        chosen = study_choice(effective)  # the command line's study=, else the recorded one's
        if chosen != recorded_study:  # the one study check, before the parts are validated
            raise RunDirError(f"resume cannot change study: {recorded_study} -> {chosen}")
        validate_run_dir(resume_dir, studies.layout(studies.definition(recorded_study)))
        effective.append(f"resume={resume_dir}")
    definition = studies.definition(study_choice(effective))
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
        finish=functools.partial(studies.analyze_and_report, definition),
        nothing_ran_cause=studies.nothing_ran_cause,
        resume_dir=resume_dir,
        manifest=manifest,
        lock=lock,
    )


def execute_sweep(overrides: Sequence[str], **options: Any) -> SweepEnd:
    """`pipeline.sweep.execute.execute_sweep` of these overrides' claimed start (a SweepEnd):
    the `sweep` command's session."""
    from pipeline.sweep.execute import execute_sweep as execute

    with claimed_start(overrides) as start:
        return execute(start, **options)


def run_sweep(overrides: Sequence[str], **options: Any) -> Path:
    """`execute_sweep` of these overrides: the run directory."""
    return execute_sweep(overrides, **options).run_dir


def prepare(overrides: Sequence[str]) -> Prepared:
    """`pipeline.sweep.run.prepare` of these overrides (tests, `probe`, benchmarks)."""
    from pipeline.sweep.run import prepare as prepare_start

    return prepare_start(resolve_start(overrides))
