"""A local sweep SIGKILLed mid-run leaves no llama-server alive after 5 s (issue 32 §9b).

The servers run in their own session, so they never saw the driver's death: four orphans, 8
to 11 minutes old, were found after local sweeps stopped by `timeout`. Each server now dies
with the driver (pipeline/endpoints/parent_death.py). Only the driver is killed here, as the
kernel's OOM killer or a `kill -9` would; the harness reaps whatever else it started.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests.reliability.harness import SweepHarness

pytestmark = [pytest.mark.slow, pytest.mark.local_model, pytest.mark.ray]


def _servers(harness: SweepHarness) -> list[int]:
    return [pid for pid in harness.marked_pids() if "llama-server" in harness.cmdline(pid)]


def test_a_sigkilled_local_sweep_leaves_no_llama_server_alive_after_5_s(tmp_path: Path) -> None:
    harness = SweepHarness()
    log = tmp_path / "sweep.log"
    proc = harness.start(["arms=[m]", "repeats=1", f"out_dir={tmp_path / 'runs'}"], log=log)
    try:
        deadline = time.monotonic() + 400
        while "probing " not in log.read_text(errors="replace"):  # servers up and self-tested
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the local servers never came up"
            time.sleep(0.5)
        assert _servers(harness), "no llama-server found by the harness's marker"
        os.kill(proc.pid, signal.SIGKILL)  # the driver alone, mid-run
        proc.wait(timeout=30)
        time.sleep(5.0)
        left = _servers(harness)
        assert left == [], f"llama-server outlived its driver: {left}"
    finally:
        if proc.poll() is None:
            harness.kill(proc)
        harness.close()
