"""Fixtures of the reliability suite: a per-test sweep harness and one shared unbroken run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.harness import SweepHarness

KILL_RESUME_SWEEP = (
    "+panel=sim",
    "sim.configs=2",
    "arms=[j,q]",
    "repeats=6",
    "sim.latency_s=0.4",
    "sim.concurrency=1",  # two trajectories in flight per endpoint: the sweep takes many waves
)
"""A small sweep that still lasts long enough to be killed mid-work many times."""

SWEEP_TIMEOUT_S = 240.0
"""Ray alone took 15 s to start on the loaded 2-core CI machine; a sweep gets 16x that."""


@pytest.fixture(scope="session")
def unbroken_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """KILL_RESUME_SWEEP run once without interruption: the reference for the kill/resume soak,
    and a valid run dir the bad-input tests copy and damage."""
    h = SweepHarness()
    try:
        out = tmp_path_factory.mktemp("unbroken")
        result = h.run([*KILL_RESUME_SWEEP, f"out_dir={out}"], timeout_s=SWEEP_TIMEOUT_S)
    finally:
        h.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.run_dir is not None
    return result.run_dir
