"""How the served viewer follows a run that is still being written: a cheap fingerprint of
what a writer changes, and the status a running run's overview polls.

A sweep changes a run directory in three ways only (`pipeline.store.parts`): it renames a
whole new part into a table's folder, it replaces `manifest.json` or `plan.parquet` by rename,
and a resume deletes the parts of a batch that never committed. A part's name is never used
twice (its batch number continues across resumes), so the fingerprint is the manifest's and
the plan's (inode, size, mtime) and each table's committed part names: a directory listing per
table and two `stat`s, no file opened. Every write is a rename of a complete, synced file, so
whatever the fingerprint leads the viewer to re-read is never torn; the `.tmp-*` file of a
write in progress is neither counted nor read.

The viewer re-reads nothing while the fingerprint holds; when it changes, it re-reads the
manifest and drops its cached tables, which are read again (footers checked, as ever) by the
next page that needs them. It never re-validates the whole run on a request: see
docs/reliability.md, "Live runs in the served viewer", for what each costs.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pipeline.store.parts import PLAN_FILE, TMP_PREFIX
from pipeline.store.reader import MANIFEST_FILE

RUNNING = "running"


def _stat(path: Path) -> tuple[int, ...]:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return ()
    return (found.st_ino, found.st_size, found.st_mtime_ns)


def _parts(folder: Path) -> Iterable[str]:
    try:
        with os.scandir(folder) as entries:
            names = [e.name for e in entries if e.name.endswith(".parquet")]
    except FileNotFoundError:
        return []
    return sorted(n for n in names if not n.startswith(TMP_PREFIX))


def fingerprint(run_dir: Path, tables: Sequence[str]) -> str:
    """A digest that changes whenever a writer commits anything to `run_dir` (module doc)."""
    digest = hashlib.sha256()
    for name in (MANIFEST_FILE, PLAN_FILE):
        digest.update(f"{name}{_stat(run_dir / name)}\n".encode())
    for table in tables:
        digest.update(f"\n{table}:".encode() + "\0".join(_parts(run_dir / table)).encode())
    return digest.hexdigest()[:16]


def finished(manifest: dict[str, Any]) -> bool:
    """Whether the run's last session has ended: any status but running (completed, stopped,
    failed, budget_exhausted, nothing_ran). A killed sweep leaves `running` behind; the
    viewer cannot tell it from a live one without probing the session lock, which could
    refuse a sweep starting at that instant, so it keeps asking."""
    return bool(manifest.get("status", RUNNING) != RUNNING)


def status(manifest: dict[str, Any], version: str) -> dict[str, Any]:
    """The body of `/run/{i}/status`, what a running run's overview polls. It reads no table:
    the page reloads when `version` changes and counts the tables then. `counts` are the
    manifest's, which it holds once the run has finished (None before)."""
    return {
        "status": manifest.get("status", RUNNING),
        "finished": finished(manifest),
        "finished_at": manifest.get("finished_at"),
        "version": version,
        "counts": manifest.get("counts"),
    }
