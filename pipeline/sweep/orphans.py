"""Ray processes a killed sweep left behind, found again and stopped on resume.

A sweep on a private Ray instance (ray.address=local) owns that instance. Ray binds its
processes' fate to the driver, but a SIGKILL that lands while Ray is still starting can leave
a few orphans (seen in tests/reliability/test_kill_resume.py). Before starting Ray, the
driver records in the run directory the temp directory it gives Ray; a resume stops every live
process whose command line names that directory, so leaks never accumulate across resumes.
The local llama-servers run in their own sessions; each dies with the driver's thread that
launched it (endpoints.parent_death: PR_SET_PDEATHSIG, issue 32 §9b). As a backstop (another
OS, a server left by an older foldsweep) the marker is set before they start and passed to
them (endpoints.local's environment allow-list), so the same resume stops them too.
Linux only (/proc); elsewhere nothing is found.

A session's temp dir (`/tmp/fsray-<digest>`: sockets, session files, Ray's logs) is removed
when the sweep ends, normally or not (`remove_ray_temp_dir`, after `ray.shutdown`, which
waits for Ray's processes), and on resume after its orphans are stopped. Only directories
this module named are ever removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path

SESSIONS_FILE = "logs/ray_sessions.txt"
TEMP_PREFIX = "fsray-"
REMOVE_WAIT_S = 5.0  # a process Ray is still stopping may write a last file meanwhile
MARKER_VAR = "FOLDSWEEP_RAY_TEMP_DIR"  # set before Ray starts; every Ray process inherits it


def ray_temp_dir(run_dir: Path) -> str:
    """A short temp dir for this run's private Ray (Ray's unix sockets allow ~107 bytes)."""
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:10]
    return str(Path(tempfile.gettempdir()) / f"{TEMP_PREFIX}{digest}")


def record_session(run_dir: Path, session_dir: str) -> None:
    path = run_dir / SESSIONS_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(session_dir + "\n")


def _mentions(pid: str, sessions: list[str]) -> bool:
    """Does the process name a session in its command line or carry its marker variable?

    Ray renames its processes (`ray::DashboardAgent`), so the command line alone misses some.
    """
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    markers = {f"{MARKER_VAR}={s}".encode() for s in sessions}
    return any(s.encode() in command for s in sessions) or any(e in markers for e in environ)


def remove_ray_temp_dir(temp_dir: str, wait_s: float = REMOVE_WAIT_S) -> bool:
    """Delete a private Ray session's temp dir; False if something kept re-creating files in
    it for `wait_s`. Refuses any directory `ray_temp_dir` would not have named."""
    path = Path(temp_dir)
    if not path.name.startswith(TEMP_PREFIX):
        raise ValueError(f"not a foldsweep Ray temp dir: {temp_dir}")
    deadline = time.monotonic() + wait_s
    while True:
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def stop_orphans(run_dir: Path) -> list[int]:
    """SIGKILL live processes of this run's earlier Ray sessions and remove those sessions'
    temp dirs; returns the pids stopped."""
    path = run_dir / SESSIONS_FILE
    if not path.exists() or not Path("/proc").is_dir():
        return []
    sessions = [s for s in path.read_text(encoding="utf-8").splitlines() if s.strip()]
    stopped = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        if _mentions(entry, sessions):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry), signal.SIGKILL)
                stopped.append(int(entry))
    for session in sessions:
        if Path(session).name.startswith(TEMP_PREFIX):
            remove_ray_temp_dir(session)
    return stopped
