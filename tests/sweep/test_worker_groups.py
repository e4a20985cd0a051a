"""`ray.endpoints_per_worker`: several endpoints in one EndpointWorker process."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config import ConfigError
from pipeline.config.load import load
from pipeline.store.manifest import load_manifest
from pipeline.store.reader import read_table
from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness
from tests.store.layouts import CARRIER_LAYOUT


def test_endpoints_per_worker_below_one_is_rejected_with_the_key_named() -> None:
    with pytest.raises(ConfigError, match=r"ray\.endpoints_per_worker must be at least 1"):
        load(["+panel=sim", "ray.endpoints_per_worker=0"])


@pytest.mark.slow
@pytest.mark.ray
def test_a_sweep_with_three_endpoints_in_two_workers_completes_every_trajectory(
    tmp_path: Path,
) -> None:
    h = SweepHarness()
    try:
        result = h.run(
            [
                "+panel=sim",
                "sim.configs=3",
                "arms=[j,q]",
                "repeats=2",
                "sim.latency_s=0.01",
                "ray.endpoints_per_worker=2",
                f"out_dir={tmp_path}",
            ],
            timeout_s=SWEEP_TIMEOUT_S,
        )
    finally:
        h.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.run_dir is not None
    assert load_manifest(result.run_dir).status == "completed"
    rows = read_table(result.run_dir, "rows", CARRIER_LAYOUT).to_pylist()
    assert {row["config_id"] for row in rows} == {"sim-00", "sim-01", "sim-02"}
    assert len(rows) == 3 * 2 * 2 and all(row["valid"] for row in rows)
