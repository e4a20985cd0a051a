"""One writer per run directory: an exclusive lock held for a whole sweep session.

Why: two sessions on one run directory (a resume started while the sweep still runs, or two
resumes after a kill) each dispatch the owed units, so the run gains duplicate rows, and the
resume's orphan cleanup kills the live session's Ray processes. A session therefore takes
`RUN_DIR/session.lock` before it reads or cleans anything and keeps it until it has written
its report; a second session is refused in one line (`RunDirInUse`, exit 2).

The lock is `fcntl.flock` on that file: the kernel drops it when the holder dies, however it
dies, so a killed sweep never leaves a lock that blocks its resume. The file also records the
holder (PID, host, process start tick, start time) as JSON, for two reasons:
- the refusal names who holds the run dir;
- a second, record-based layer for filesystems where `flock` is not shared between hosts (some
  NFS set-ups; docs/cluster.md): a record left by a live process on this host, or by any
  process on another host, is respected even when `flock` was granted.
A record whose process is gone (same host; PID dead or reused, told apart by the process
start tick) is stale: it is taken over and the takeover is returned to the caller to record.
On a clean release the record is emptied, not deleted: deleting a flock'd file lets two
later sessions lock two different inodes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.store.reader import RunDirError

LOCK_FILE = "session.lock"


class RunDirInUse(RunDirError):
    """Another live session holds the run directory."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) a run directory's lock."""

    pid: int
    host: str
    started_at: str  # UTC ISO time the session took the lock
    start_tick: int | None = None  # the process's start time in clock ticks (/proc), if known

    @staticmethod
    def me() -> Holder:
        return Holder(
            pid=os.getpid(),
            host=socket.gethostname(),
            started_at=datetime.now(UTC).isoformat(timespec="seconds"),
            start_tick=process_start_tick(os.getpid()),
        )

    def describe(self) -> str:
        since = self.started_at[11:16] if len(self.started_at) >= 16 else self.started_at
        return f"PID {self.pid} on host {self.host} since {since} UTC"


@dataclass(frozen=True)
class HeldLock:
    """A lock this process holds; `took_over` is the stale holder it replaced, if any."""

    path: Path
    holder: Holder
    took_over: Holder | None


def process_start_tick(pid: int) -> int | None:
    """Field 22 of /proc/PID/stat (Linux): tells a live process from a reused PID."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _alive_here(holder: Holder) -> bool:
    """Is the recorded holder (on this host) still the same live process?"""
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    if holder.start_tick is None:
        return True
    return process_start_tick(holder.pid) == holder.start_tick


def _read_holder(handle: Any) -> Holder | None:
    handle.seek(0)
    text = handle.read()
    if not text.strip():
        return None
    try:
        data = json.loads(text)
        return Holder(
            pid=int(data["pid"]),
            host=str(data["host"]),
            started_at=str(data["started_at"]),
            start_tick=None if data.get("start_tick") is None else int(data["start_tick"]),
        )
    except (ValueError, KeyError, TypeError):
        return None  # a torn or foreign record: the flock alone decides


def _settled_holder(handle: Any, wait_s: float = 1.0) -> Holder | None:
    """The live holder's record, waiting up to `wait_s` for it: a holder that has just taken
    the flock writes its record a moment later, and until then the file is empty or names
    the stale holder it is taking over (found by tests/reliability/test_run_lock_processes)."""
    deadline = time.monotonic() + wait_s
    while True:
        handle.seek(0)
        holder = _read_holder(handle)
        live = holder is not None and (holder.host != socket.gethostname() or _alive_here(holder))
        if live or time.monotonic() >= deadline:
            return holder if live else None
        time.sleep(0.05)


def _write_holder(handle: Any, holder: Holder | None) -> None:
    handle.seek(0)
    handle.truncate()
    if holder is not None:
        handle.write(json.dumps(asdict(holder)))
    handle.flush()
    os.fsync(handle.fileno())


def _refusal(run_dir: Path, holder: Holder | None, *, by_record: bool = False) -> RunDirInUse:
    who = holder.describe() if holder is not None else "another process"
    fix = "wait for it or stop it"
    if by_record:  # flock did not see it: another host, or a filesystem without shared locks
        fix += f" (if it is gone, delete {run_dir / LOCK_FILE})"
    return RunDirInUse(f"run dir {run_dir} in use by {who}; {fix}")


def _live_elsewhere(previous: Holder | None, me: Holder) -> bool:
    """Does a record the flock did not protect still name a live session?"""
    if previous is None or previous == me:
        return False
    return previous.host != me.host or _alive_here(previous)


def live_writer(run_dir: Path) -> Holder | None:
    """The live session of another process that holds `run_dir` (a sweep still writing it),
    or None. A reader's check (`analyze`, a report): it never takes the lock for more than a
    probe, so a sweep starting at that instant is refused only in that instant's race; and
    this process's own session (a sweep analysing its own run) is never another writer."""
    try:
        fd = os.open(run_dir / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None  # no lock file: no session ever held it
    with os.fdopen(fd, "r", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _settled_holder(handle)
        else:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            holder = _read_holder(handle)  # the record layer: another host's session
            holder = holder if holder is not None and _live_elsewhere(holder, Holder.me()) else None
    if holder is not None and holder.pid == os.getpid() and holder.host == socket.gethostname():
        return None
    return holder


@contextlib.contextmanager
def run_lock(run_dir: Path) -> Iterator[HeldLock]:
    """Hold `run_dir`'s session lock for the `with` block, or raise RunDirInUse at once."""
    path = run_dir / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as exc:
        raise RunDirError(f"cannot lock run dir {run_dir}: {exc.strerror}") from None
    with os.fdopen(fd, "r+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _refusal(run_dir, _settled_holder(handle)) from None
        try:
            me = Holder.me()
            previous = _read_holder(handle)
            if _live_elsewhere(previous, me):
                raise _refusal(run_dir, previous, by_record=True)
            _write_holder(handle, me)
            try:
                yield HeldLock(path, me, previous)
            finally:  # any exit of a live process is a release; only a kill leaves a record
                _write_holder(handle, None)
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
