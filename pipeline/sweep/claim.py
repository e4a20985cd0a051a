"""A session's hold on its run directory: locked before it is read or cleaned, until the end.

The order matters (issue 19): a resume takes the run dir's lock (pipeline/store/run_lock.py)
before its manifest is read and before `prepare_run_dir` stops "orphaned" Ray processes, so a
second session never cleans up, or writes under, a live one. The entry point takes it
(`locked_resume`, from pipeline.commands.start) before it resolves the study from the manifest,
and hands it down on `SweepStart.lock`; the engine refuses a resume that does not hold it. A new
run's directory is claimed by an exclusive `mkdir` and locked at once, here. A stale lock taken
over (its holder was killed) is printed and recorded in the manifest's `extra.lock_takeovers`.
A session with `cache.scope=shared` also holds its cache directory shared
(pipeline/sweep/cache_lock.py), so no `cache prune|clear` rewrites it under the session.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator
from pathlib import Path

from pipeline.store.manifest import load_manifest, write_manifest
from pipeline.store.run_lock import HeldLock, run_lock
from pipeline.sweep.cache_lock import cache_shared
from pipeline.sweep.run import Prepared, cache_dir, prepare, prepare_run_dir
from pipeline.sweep.start import SweepStart


def record_takeover(run_dir: Path, held: HeldLock) -> None:
    """Say that a stale lock was taken over, and add it to the manifest (if there is one)."""
    stale = held.took_over
    if stale is None:
        return
    print(f"resume: took over the stale lock of {stale.describe()}", file=sys.stderr)
    if not (run_dir / "manifest.json").is_file():
        return  # not a run dir: resolving the start says so in one line
    manifest = load_manifest(run_dir)
    entry = {"stale": dataclasses.asdict(stale), "by": dataclasses.asdict(held.holder)}
    takeovers = [*manifest.extra.get("lock_takeovers", []), entry]
    write_manifest(
        run_dir,
        dataclasses.replace(manifest, extra={**manifest.extra, "lock_takeovers": takeovers}),
    )


@contextlib.contextmanager
def locked_resume(run_dir: Path) -> Iterator[HeldLock]:
    """Hold a resumed run dir's lock for the `with` block (RunDirInUse if a live session has
    it), a stale holder's takeover recorded: taken before anything of the run dir is read."""
    with run_lock(run_dir) as held:
        record_takeover(run_dir, held)
        yield held


@contextlib.contextmanager
def claimed_session(start: SweepStart) -> Iterator[Prepared]:
    """Prepare the sweep and hold its run dir for the `with` block (RunDirInUse if taken).

    A resume arrives holding its run dir's lock (`start.lock`, taken by the entry point before
    it read the manifest); a new run's directory is created and locked here."""
    if start.resume_dir is not None and (
        start.lock is None or start.lock.path.parent != start.resume_dir
    ):
        raise ValueError(f"resume of {start.resume_dir} without its lock: take `locked_resume`")
    with contextlib.ExitStack() as held:
        # a resume cleans orphans and uncommitted files under its lock; a new run claims a
        # fresh directory (nobody else can hold it) and locks it at once
        p = prepare_run_dir(prepare(start))
        if not p.resuming:
            held.enter_context(run_lock(p.run_dir))
        shared = cache_dir(p) if p.cfg.cache.scope == "shared" else None
        if shared is not None:  # no `cache prune|clear` of it meanwhile (issue 32)
            held.enter_context(cache_shared(Path(shared)))
        yield p
