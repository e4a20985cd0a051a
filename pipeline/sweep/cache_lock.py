"""Who may rewrite a shared response cache directory: no one while a sweep uses it (issue 32).

Sweeps append to a cache directory without locks (each process writes a segment of its own:
pipeline/sweep/response_cache.py), but `cache prune` rewrites segments and `cache clear`
deletes them. Run under a live sweep, a prune kept 9 of 24 paid replies and the resume paid
for 16 again. A run's own cache (RUN_DIR/cache) is covered by the run dir's session lock
(pipeline/store/run_lock.py), which `cache prune|clear RUN_DIR` take. A shared directory
(`cache.scope=shared`) is used by many sweeps at once, so it has a lock file of its own,
`DIR/cache.lock`:

- a sweep holds it shared (`flock` LOCK_SH) for its session and registers itself in
  `DIR/holders/<host>-<pid>-<random>.json` (its PID, host and start), a file it keeps locked;
- `prune` and `clear` take it exclusively without waiting, or refuse in one line naming the
  sweeps that hold it. A registration nobody keeps locked was left by a killed sweep (the
  kernel drops a dead process's locks): it names no one and is removed;
- a sweep that starts while a prune holds the directory waits for it (`WAIT_S`), then refuses.

Whether `flock` reaches across hosts depends on the filesystem (docs/cluster.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from pipeline.store.run_lock import Holder
from pipeline.usererror import UserError

LOCK_FILE = "cache.lock"
HOLDERS_DIR = "holders"
WAIT_S = 30.0  # a prune or clear takes seconds; a sweep waits this long for one to finish


class CacheDirInUse(UserError):
    """A cache directory is in use by a sweep (or being pruned); one line naming who."""


@contextlib.contextmanager
def cache_shared(root: Path, wait_s: float = WAIT_S) -> Iterator[None]:
    """A sweep's hold on a shared cache directory, for its whole session."""
    root.mkdir(parents=True, exist_ok=True)
    with _locked(root, fcntl.LOCK_SH, wait_s), _registered(root):
        yield


@contextlib.contextmanager
def cache_alone(root: Path) -> Iterator[None]:
    """The directory to oneself (prune, clear), or CacheDirInUse naming its users."""
    if not root.is_dir():  # nothing to rewrite: nothing to lock, and nothing created
        yield
        return
    with _locked(root, fcntl.LOCK_EX, 0.0), _registered(root):
        live_holders(root)  # removes what killed sweeps left
        yield


@contextlib.contextmanager
def _locked(root: Path, mode: int, wait_s: float) -> Iterator[None]:
    try:
        fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise CacheDirInUse(f"cannot lock cache dir {root}: {exc.strerror}") from None
    try:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, mode | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise _refusal(root) from None
                time.sleep(0.2)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


@contextlib.contextmanager
def _registered(root: Path) -> Iterator[None]:
    """This process's registration, kept locked while it holds the directory."""
    holder = Holder.me()
    folder = root / HOLDERS_DIR
    folder.mkdir(exist_ok=True)
    path = folder / f"{holder.host}-{holder.pid}-{uuid.uuid4().hex[:8]}.json"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, json.dumps(asdict(holder)).encode())
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)


def live_holders(root: Path) -> list[Holder]:
    """The registered processes that still hold their registration; stale ones are removed."""
    live: list[Holder] = []
    folder = root / HOLDERS_DIR
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        with contextlib.suppress(FileNotFoundError), open(path, "rb") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # its process is alive and holds it
                holder = _holder(handle.read())
                if holder is not None:
                    live.append(holder)
                continue
            path.unlink(missing_ok=True)  # left by a killed process
    return live


def _holder(data: bytes) -> Holder | None:
    try:
        fields = json.loads(data)
        return Holder(
            pid=int(fields["pid"]),
            host=str(fields["host"]),
            started_at=str(fields["started_at"]),
            start_tick=fields.get("start_tick"),
        )
    except (ValueError, KeyError, TypeError):
        return None  # a registration caught mid-write: it names no one


def _refusal(root: Path) -> CacheDirInUse:
    holders = live_holders(root)
    who = ", ".join(h.describe() for h in holders) if holders else "another process"
    return CacheDirInUse(f"cache dir {root} in use by {who}; wait for it or stop it")
