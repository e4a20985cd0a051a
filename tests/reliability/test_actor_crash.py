"""Actor crash: SIGKILL one EndpointWorker process while its trajectories are in flight.

The worker is found among the processes carrying this test's marker: Ray titles an actor
process `ray::EndpointWorker.run` while it executes a trajectory, or `.run_batch` for a batch
of them (`.probe` while probing), so the first process whose title starts with
`ray::EndpointWorker.run` has trajectories in flight. With sim latency 0.5 s a
trajectory takes about 2 s, and every trajectory of an endpoint is in flight at once (the
in-flight cap is 2 x concurrency), so the kill lands mid-trajectory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness, run_dir_from
from tests.reliability.tables import key_of, view

pytestmark = [pytest.mark.slow, pytest.mark.ray]

CRASH = (
    "+panel=sim",
    "sim.configs=2",
    "arms=[j,q]",
    "repeats=3",
    "sim.latency_s=0.5",
)
WORKER_TITLE = "ray::EndpointWorker.run"


def running_worker(h: SweepHarness) -> int | None:
    for pid in h.marked_pids():
        if h.cmdline(pid).startswith(WORKER_TITLE):
            return pid
    return None


def test_killed_endpoint_worker_requeues_in_flight_trajectories_and_sweep_completes(
    harness: SweepHarness, tmp_path: Path
) -> None:
    log = tmp_path / "sweep.log"
    proc = harness.start([*CRASH, f"out_dir={tmp_path / 'out'}"], log=log)
    deadline = time.monotonic() + SWEEP_TIMEOUT_S
    victim = None
    while victim is None and proc.poll() is None and time.monotonic() < deadline:
        victim = running_worker(harness)
        time.sleep(0.05)
    assert victim is not None, "no EndpointWorker ever ran a trajectory"
    time.sleep(0.3)  # let the coordinator hand it more of its trajectories
    os.kill(victim, signal.SIGKILL)
    try:
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        harness.kill(proc)
        raise
    output = log.read_text(errors="replace")
    assert proc.returncode == 0, output[-3000:]
    run_dir = run_dir_from(output)
    assert run_dir is not None
    run = view(run_dir)

    lost = [r for r in run.rows if r["invalid_reason"] == "infrastructure:worker_lost"]
    assert lost, "killing a worker mid-trajectory produced no worker_lost row"
    assert len({r["config_id"] for r in lost}) == 1, "only the killed worker's trajectories"
    print(f"actor crash: {len(lost)} worker_lost rows re-queued, {len(run.rows)} rows in all")
    finals = run.finals()
    for row in lost:
        assert row["retryable"] and not row["valid"]
        # One crash costs a trajectory one attempt: re-queued attempts wait for the restart
        # instead of failing against the restarting actor (regression: they burned 2 of 3).
        assert row["attempt"] == 0, row["row_id"]
        assert finals[key_of(row)]["attempt"] > row["attempt"], f"{row['row_id']} not re-queued"
    assert run.manifest.status == "completed"
    assert run.manifest.counts is not None
    assert run.manifest.counts.valid == len(run.plan)
    assert all(final["valid"] for final in finals.values())
