"""Issue 13: the private Ray instance leaves nothing behind and says nothing of its own.

- its `fsray-*` temp dir is gone after a normal end, a stop (SIGINT) and on resume after a kill;
- Ray's token-authentication notice is not printed (token authentication stays on);
- it runs without the dashboard: Ray 2.60 always starts `dashboard.py` (the API server; with
  `include_dashboard=False` it loads only its usage-stats module and no web frontend) and the
  DashboardAgent, which the raylet fate-shares with, so no sweep can run without those two;
  what is checked is that the dashboard's web UI and its modules are never loaded.
"""

from __future__ import annotations

import logging
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from pipeline.sweep import actors
from pipeline.sweep.orphans import (
    SESSIONS_FILE,
    TEMP_PREFIX,
    remove_ray_temp_dir,
    stop_orphans,
)
from tests.reliability.harness import SweepHarness

TINY = ("+panel=sim", "sim.configs=1", "arms=[j,q]", "repeats=2", "scenario=small")
TIMEOUT_S = 240.0
AUTH_NOTICE = "Token authentication is enabled"


def _leftovers(harness: SweepHarness) -> list[Path]:
    return sorted(harness.ray_tmp.glob(f"{TEMP_PREFIX}*"))


def _run_watching(harness: SweepHarness, overrides: list[str]) -> tuple[int, str, list[str]]:
    """Run a sweep to its end; also returns every marked process's command line seen."""
    proc = harness.start(overrides)
    seen: set[str] = set()
    deadline = time.monotonic() + TIMEOUT_S
    while proc.poll() is None and time.monotonic() < deadline:
        seen.update(harness.cmdline(pid) for pid in harness.marked_pids())
        time.sleep(0.2)
    if proc.poll() is None:
        harness.kill(proc)
        raise AssertionError("the sweep did not end in time")
    _, err = proc.communicate()
    harness.reap(grace_s=10.0)
    return proc.returncode, err.decode(errors="replace"), sorted(seen)


@pytest.mark.slow
@pytest.mark.ray
def test_a_sweep_leaves_no_ray_temp_dir_prints_no_ray_notice_and_loads_no_dashboard(
    harness: SweepHarness, tmp_path: Path
) -> None:
    code, stderr, seen = _run_watching(harness, [*TINY, f"out_dir={tmp_path}"])
    assert code == 0, stderr[-3000:]
    assert _leftovers(harness) == []
    assert AUTH_NOTICE not in stderr and "RAY_AUTH_MODE" not in stderr
    api_servers = [c for c in seen if "dashboard/dashboard.py" in c]
    assert api_servers, "no Ray API server seen: did the sweep start Ray at all?"
    for command in api_servers:
        assert "--disable-frontend" in command and "--modules-to-load=UsageStatsHead" in command


@pytest.mark.slow
@pytest.mark.ray
def test_a_stopped_sweep_leaves_no_ray_temp_dir(harness: SweepHarness, tmp_path: Path) -> None:
    slow = [*TINY, "repeats=6", "sim.latency_s=0.3", f"out_dir={tmp_path}"]
    proc = harness.start(slow)
    deadline = time.monotonic() + TIMEOUT_S
    while not any("raylet" in harness.cmdline(p) for p in harness.marked_pids()):
        assert time.monotonic() < deadline and proc.poll() is None, "Ray never started"
        time.sleep(0.2)
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=TIMEOUT_S)
    harness.reap(grace_s=10.0)
    assert proc.returncode == 130
    assert _leftovers(harness) == []


def test_resume_removes_the_temp_dirs_of_earlier_sessions(tmp_path: Path) -> None:
    run_dir, session = tmp_path / "run", tmp_path / f"{TEMP_PREFIX}0123456789"
    (session / "session_latest" / "logs").mkdir(parents=True)
    (session / "session_latest" / "logs" / "raylet.out").write_text("x", encoding="utf-8")
    (run_dir / SESSIONS_FILE).parent.mkdir(parents=True)
    (run_dir / SESSIONS_FILE).write_text(f"{session}\n", encoding="utf-8")
    stop_orphans(run_dir)
    assert not session.exists()


def test_only_a_foldsweep_ray_temp_dir_is_ever_removed(tmp_path: Path) -> None:
    other = tmp_path / "ray"
    other.mkdir()
    with pytest.raises(ValueError, match="not a foldsweep Ray temp dir"):
        remove_ray_temp_dir(str(other))
    assert other.is_dir()


class _RecordingInit:
    def __init__(self) -> None:
        self.kwargs: dict[str, Any] = {}
        self.auth_level_during: int | None = None

    def __call__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.auth_level_during = logging.getLogger(actors.AUTH_NOTICE_LOGGER).getEffectiveLevel()


@pytest.fixture
def recorded_init(monkeypatch: pytest.MonkeyPatch) -> _RecordingInit:
    init = _RecordingInit()
    monkeypatch.setattr(actors.ray, "is_initialized", lambda: False)
    monkeypatch.setattr(actors.ray, "init", init)
    return init


def test_the_private_instance_starts_quietly_without_its_dashboard(
    recorded_init: _RecordingInit,
) -> None:
    actors.init_ray("local", 1, "/tmp/fsray-x")
    assert recorded_init.kwargs["include_dashboard"] is False
    assert recorded_init.auth_level_during == logging.ERROR
    assert logging.getLogger(actors.AUTH_NOTICE_LOGGER).level == logging.NOTSET  # restored


def test_the_dashboard_starts_when_asked_for(recorded_init: _RecordingInit) -> None:
    actors.init_ray("local", 1, None, dashboard=True)
    assert recorded_init.kwargs["include_dashboard"] is True


def test_joining_a_cluster_is_left_as_ray_does_it(recorded_init: _RecordingInit) -> None:
    actors.init_ray("auto")
    assert recorded_init.kwargs == {
        "log_to_driver": False,
        "configure_logging": False,
        "address": "auto",
    }
    assert recorded_init.auth_level_during != logging.ERROR


def test_resume_stops_a_local_server_that_a_killed_driver_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A llama-server runs in its own session, so it outlives a SIGKILLed driver; it carries
    the run's marker (set before any server starts), and the resume's sweep stops it."""
    import os
    import subprocess

    from pipeline.endpoints.local import server_environment
    from pipeline.sweep.orphans import MARKER_VAR, ray_temp_dir, record_session

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    temp_dir = ray_temp_dir(run_dir)
    record_session(run_dir, temp_dir)
    monkeypatch.setenv(MARKER_VAR, temp_dir)
    server = subprocess.Popen(
        ["sleep", "60"], env=server_environment("key"), start_new_session=True
    )
    try:
        stopped = stop_orphans(run_dir)
        assert server.pid in stopped
        assert server.wait(timeout=5) == -signal.SIGKILL
    finally:
        if server.poll() is None:
            os.kill(server.pid, signal.SIGKILL)
            server.wait()
