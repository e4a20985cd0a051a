"""Names of new run directories: sortable by start time, and never shared by two sweeps.

A name starts with the UTC start second (`20261201T201750-...`), so a listing sorts runs by
when they started. Two sweeps started in the same second with the same panel and inputs would
compute the same name, so a directory is claimed with an exclusive `mkdir`: the first sweep
gets the plain name, a later one the first free `NAME-2`, `NAME-3`, ... (the plain name sorts
before its suffixed siblings). The claim is atomic on POSIX, so it also holds across processes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pipeline.store.reader import RunDirError

STAMP_FORMAT = "%Y%m%dT%H%M%S"
MAX_SAME_NAME = 1000  # sweeps of one name started in one second; beyond it something is wrong


def utc_now() -> datetime:
    """The clock run names are stamped with (tests replace it)."""
    return datetime.now(UTC)


def run_stamp() -> str:
    return utc_now().strftime(STAMP_FORMAT)


def claim_run_dir(candidate: Path) -> Path:
    """Create and return `candidate`, or its first free `-N` sibling if another sweep has it."""
    try:
        candidate.parent.mkdir(parents=True, exist_ok=True)
        for n in range(1, MAX_SAME_NAME + 1):
            path = candidate if n == 1 else candidate.with_name(f"{candidate.name}-{n}")
            try:
                path.mkdir()
            except FileExistsError:
                continue
            return path
    except OSError as exc:  # a file, a path under a file, /proc, /sys, a read-only filesystem
        raise out_dir_error(candidate.parent, exc) from None
    raise RunDirError(
        f"{candidate} and {MAX_SAME_NAME - 1} siblings already exist; choose another out_dir"
    )


def out_dir_error(out_dir: Path, exc: OSError) -> RunDirError:
    """One line for an out_dir no run directory can be made in (issue 19)."""
    why = exc.strerror or type(exc).__name__
    if isinstance(exc, FileExistsError | NotADirectoryError):
        why = "it, or a folder on its path, is a file"
    return RunDirError(
        f"out_dir {str(out_dir)!r}: cannot create a run directory there ({why}); "
        "choose a writable directory, e.g. out_dir=runs"
    )
