"""Run `python -m pipeline sweep` as a bounded subprocess and clean up after it.

Every sweep a reliability test starts runs in its own session (`start_new_session=True`) with
two markers in its environment, which every descendant inherits (driver, GCS, raylet, Ray
workers):
- `FOLDSWEEP_TEST_MARKER=<uuid>`: how `marked_pids` finds exactly the processes this test
  started (never by name: another sweep may be running on the machine);
- `RAY_TMPDIR=<short private dir>`: Ray's session files (logs, sockets) land there, so the
  secrets test can grep Ray's logs too, and nothing is shared with other Ray instances.

Time is bounded by each call's `timeout_s`: on expiry the process group and every marked
process are SIGKILLed and the test fails. Nothing leaves 127.0.0.1: sim servers bind loopback
and Ray runs with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]
MARKER_VAR = "FOLDSWEEP_TEST_MARKER"
RUN_DIR_PREFIX = "run directory: "


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep process."""

    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    run_dir: Path | None


def run_dir_from(stderr: str, stdout: str = "") -> Path | None:
    """The run directory a sweep announced (stderr) or printed last (stdout)."""
    for line in stderr.splitlines():
        if line.startswith(RUN_DIR_PREFIX):
            return Path(line[len(RUN_DIR_PREFIX) :].strip())
    lines = [line for line in stdout.splitlines() if line.strip()]
    return Path(lines[-1].strip()) if lines else None


class SweepHarness:
    """Starts marked sweep processes; kills and reaps only what it started."""

    def __init__(self, extra_env: Mapping[str, str] | None = None) -> None:
        self.marker = uuid.uuid4().hex
        # Short: Ray puts unix sockets under it (108-byte path limit).
        self.ray_tmp = Path(tempfile.mkdtemp(prefix="fsr", dir="/tmp"))
        self.env = {
            **os.environ,
            MARKER_VAR: self.marker,
            "RAY_TMPDIR": str(self.ray_tmp),
            "TMPDIR": str(self.ray_tmp),  # the sweep puts its private Ray under TMPDIR
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
            "PYTHONPATH": str(PROJECT),
            **(extra_env or {}),
        }
        self.leftovers_killed: list[int] = []

    def command(self, overrides: Sequence[str]) -> list[str]:
        return [sys.executable, "-m", "pipeline", "sweep", "progress=false", *overrides]

    def start(self, overrides: Sequence[str], log: Path | None = None) -> subprocess.Popen[bytes]:
        """Start a sweep in its own session; output to pipes, or to `log` (a process killed
        while nobody reads its pipes must never block on a full pipe)."""
        if log is None:
            return subprocess.Popen(
                self.command(overrides),
                cwd=PROJECT,
                env=self.env,
                start_new_session=True,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        with open(log, "wb") as sink:
            return subprocess.Popen(
                self.command(overrides),
                cwd=PROJECT,
                env=self.env,
                start_new_session=True,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )

    def run(self, overrides: Sequence[str], timeout_s: float) -> SweepResult:
        """Run a sweep to its end; a sweep still running after `timeout_s` fails the test."""
        started = time.monotonic()
        proc = self.start(overrides)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.kill(proc)
            out, err = proc.communicate()
            raise AssertionError(
                f"sweep exceeded {timeout_s}s: {overrides}\n{err.decode(errors='replace')[-3000:]}"
            ) from None
        finally:
            self.reap(grace_s=10.0)
        wall = time.monotonic() - started
        stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
        return SweepResult(proc.returncode, stdout, stderr, wall, run_dir_from(stderr, stdout))

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL the sweep's process group (a crash, not a graceful stop)."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def marked_pids(self) -> list[int]:
        """Live processes (not this one) whose environment carries this harness's marker."""
        needle = f"{MARKER_VAR}={self.marker}".encode()
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:  # gone, or not ours to read
                continue
            if needle in environ.split(b"\0") and state != "Z":
                found.append(int(entry))
        return found

    def cmdline(self, pid: int) -> str:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            return ""

    def reap(self, grace_s: float) -> list[int]:
        """Wait up to `grace_s` for marked processes to exit, then SIGKILL the rest.

        Returns the pids that had to be killed (they outlived their sweep: a leak).
        """
        deadline = time.monotonic() + grace_s
        while self.marked_pids() and time.monotonic() < deadline:
            time.sleep(0.25)
        leftovers = self.marked_pids()
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.leftovers_killed += leftovers
        return leftovers

    def close(self) -> None:
        self.reap(grace_s=5.0)
        shutil.rmtree(self.ray_tmp, ignore_errors=True)


def tree_digest(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its bytes: equal digests mean nothing was written."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def files_containing(root: Path, needle: bytes) -> list[Path]:
    """Files under `root` whose bytes contain `needle` (sockets and fifos skipped)."""
    hits = []
    for path in root.rglob("*"):
        try:
            if path.is_file() and needle in path.read_bytes():
                hits.append(path)
        except OSError:
            continue
    return hits


@pytest.fixture
def harness() -> Iterator[SweepHarness]:
    """A SweepHarness per test, closed after it (kills and reaps only what it started)."""
    h = SweepHarness()
    try:
        yield h
    finally:
        h.close()
