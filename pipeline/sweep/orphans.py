"""Ray processes a killed sweep left behind, found again and stopped on resume.

A sweep on a private Ray instance (ray.address=local) owns that instance. Ray binds its
processes' fate to the driver, but a SIGKILL that lands while Ray is still starting can leave
a few orphans (seen in tests/reliability/test_kill_resume.py). Before starting Ray, the
driver records in the run directory the temp directory it gives Ray; a resume stops every live
process whose command line names that directory, so leaks never accumulate across resumes.
Linux only (/proc); elsewhere nothing is found.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import tempfile
from pathlib import Path

SESSIONS_FILE = "logs/ray_sessions.txt"
MARKER_VAR = "FOLDSWEEP_RAY_TEMP_DIR"  # set before Ray starts; every Ray process inherits it


def ray_temp_dir(run_dir: Path) -> str:
    """A short temp dir for this run's private Ray (Ray's unix sockets allow ~107 bytes)."""
    digest = hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:10]
    return str(Path(tempfile.gettempdir()) / f"fsray-{digest}")


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


def stop_orphans(run_dir: Path) -> list[int]:
    """SIGKILL live processes of this run's earlier Ray sessions; returns their pids."""
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
    return stopped
