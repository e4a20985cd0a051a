"""A limit group through a whole sweep (issue 13): two configurations on one key, one actor.

The key is one simulated server (it enforces 13 requests per 1 s sliding window, stricter than
600/min over 60 s); the panel file puts two configurations on it, each allowed 600 rpm alone
and both in one 600-rpm group. With `ray.endpoints_per_worker=1` the group still shares one
EndpointWorker, and so one bucket: the server answers no 429 and every trajectory is valid.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import studies
from pipeline.config import load
from pipeline.endpoints.sim import SimOptions, SimServer, SimServerThread
from pipeline.store.reader import read_table
from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness
from tests.store.layouts import CARRIER_LAYOUT

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ARMS = "arms=[j,q]"
MODEL = "sim-model-key-1"


def panel_file(tmp_path: Path, base_url: str) -> Path:
    group = "{name: openrouter-key-1, rpm: 600}"
    entries = "\n".join(
        f"  - {{config_id: key-1-{name}, model: {MODEL}, family: sim, quantization: {name},\n"
        f"     base_url: '{base_url}', response_format: json_schema,\n"
        f"     limits: {{rpm: 600, concurrency: 4, group: {group}}}}}"
        for name in ("a", "b")
    )
    path = tmp_path / "panel.yaml"
    path.write_text(f"configs:\n{entries}\n", encoding="utf-8")
    return path


def test_a_sweep_of_two_configurations_in_one_600_rpm_group_draws_no_429(tmp_path: Path) -> None:
    cfg = load([ARMS, "scenario=small"])
    study = studies.definition(cfg.study_name).configure(cfg.study)
    (model,) = study.sim_models([("key-1", MODEL)], cfg.sim.seed)
    server = SimServer(model, SimOptions(rpm_limit=13, rpm_window_s=1.0))
    h = SweepHarness()
    with SimServerThread([server]) as thread:
        (url,) = thread.base_urls
        try:
            result = h.run(
                [
                    "+panel=endpoint",
                    f"endpoint.panel_file={panel_file(tmp_path, url)}",
                    ARMS,
                    "scenario=small",
                    "repeats=3",
                    "ray.endpoints_per_worker=1",
                    "retry.request_attempts=1",  # a 429 would end its trajectory as invalid
                    f"out_dir={tmp_path / 'runs'}",
                ],
                timeout_s=SWEEP_TIMEOUT_S,
            )
        finally:
            h.close()
        (counters,) = thread.counters()
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.run_dir is not None
    rows = read_table(result.run_dir, "rows", CARRIER_LAYOUT).to_pylist()
    assert len(rows) == 2 * 2 * 3
    assert counters.rate_limited_429 == 0
    assert counters.requests >= 2 * 2 * 3 * 4  # four requests a trajectory: the group was busy
