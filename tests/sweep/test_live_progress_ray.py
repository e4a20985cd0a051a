"""Live counters through a real EndpointWorker actor: they reach the driver mid-trajectory."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import pytest

from pipeline.study import UnitSpec
from pipeline.sweep import actors
from pipeline.sweep.progress import LiveCounts

pytestmark = [pytest.mark.ray, pytest.mark.slow]


def test_live_counters_reach_the_driver_before_the_trajectory_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ray

    from pipeline.commands.start import prepare
    from pipeline.sweep.run import publication_dates, worker_settings
    from pipeline.sweep.servers import EndpointServers

    monkeypatch.setattr(actors, "LIVE_EVERY_S", 0.1)
    p = prepare(
        [
            "+panel=sim",
            "sim.configs=1",
            "sim.latency_s=0.6",  # each request takes 0.6 s: several snapshots per trajectory
            "scenario=small",
            "arms=[q]",
            "progress=false",
            f"out_dir={tmp_path}",
        ]
    )
    endpoints = [inc.endpoint for inc in p.resolution.included]
    ray_tmp = tempfile.mkdtemp(prefix="fsl", dir="/tmp")  # short: Ray's unix sockets go there
    assert not ray.is_initialized()
    pairs = [(ep.config_id, ep.model) for ep in endpoints]
    models = p.study.sim_models(pairs, p.cfg.sim.seed)
    servers = EndpointServers(
        "sim", endpoints, p.cfg, tmp_path, sim_models=models, sim_servers="thread"
    )
    with servers:
        dates = publication_dates(p.resolution)
        settings = {ep.config_id: worker_settings(p, ep, dates) for ep in servers.endpoints}
        (config_id,) = settings
        actors.init_ray("local", num_cpus=1, temp_dir=ray_tmp)
        try:
            workers = actors.start_workers(settings, 1)
            dispatcher = actors.RayDispatcher(workers, {config_id: 2})
            spec = UnitSpec("run", config_id, "m", "f", "q", 0, 0, 0)
            dispatcher.submit(spec)
            seen: list[LiveCounts] = []
            completions = []
            deadline = time.monotonic() + 120
            while not completions and time.monotonic() < deadline:
                view = dispatcher.live().get(config_id)
                if view is not None and spec.row_id in view.attempts:
                    seen.append(view.attempts[spec.row_id].copy())
                completions = dispatcher.poll(0.05)
            ray.get([w.close.remote() for w in actors.distinct(workers)])
        finally:
            ray.shutdown()
            shutil.rmtree(ray_tmp, ignore_errors=True)
    assert completions, "the trajectory did not finish in 120 s"
    (done,) = completions
    assert done.records is not None
    row = done.records.row
    assert any(0 < c.steps < row["folds"] for c in seen), seen  # folds seen as they happened
    assert len({c.sent for c in seen}) >= 2, seen  # and requests, more than one snapshot
    assert max(c.sent for c in seen) <= row["requests"]
    assert dispatcher.live_view[config_id].attempts == {}  # a row now, not live
