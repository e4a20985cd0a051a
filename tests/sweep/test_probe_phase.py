"""The probe phase of a large panel: an estimate first, a bounded window, and a stop that is
honoured, leaving a run dir marked failed with the reason (issue 32 §6, §9).

A 10,000-configuration panel was still probing after 3 minutes (7,645 requests, 2.96 GB, no
plan); SIGTERM was ignored and left the run dir `running` without a plan, unresumable.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest
from aiohttp import web

from pipeline.config.schema import EndpointConfig, LimitGroup, Limits
from pipeline.sweep.probe_phase import PROBE_WINDOW, estimate_probing
from tests.reliability.harness import SweepHarness
from tests.reliability.servers import _Served

CONFIGS = 10_000


def _endpoint(
    cid: str, rpm: float | None = None, group: LimitGroup | None = None
) -> EndpointConfig:
    return EndpointConfig(cid, "m", "f", limits=Limits(rpm=rpm, group=group))


def test_the_estimate_counts_requests_and_takes_the_slower_of_waves_and_rate_limits() -> None:
    free = {f"c{i}": (_endpoint(f"c{i}"), 3) for i in range(CONFIGS)}
    estimate = estimate_probing(free, samples=3)
    assert (estimate.requests_min, estimate.requests_max) == (30_000, 90_000)
    waves = -(-CONFIGS // PROBE_WINDOW)
    assert estimate.seconds == pytest.approx(waves * 3 * 2.0)
    assert not estimate.rate_bound
    assert estimate.line().startswith(
        "probing 10,000 configurations: 30,000 to 90,000 requests, about "
    )
    # one key's group at 60 rpm: 30,000 requests take 500 minutes, whatever the window
    group = LimitGroup("key", rpm=60)
    grouped = {f"c{i}": (_endpoint(f"c{i}", group=group), 3) for i in range(CONFIGS)}
    slow = estimate_probing(grouped, samples=1)
    assert slow.seconds == pytest.approx(30_000.0) and slow.rate_bound
    assert "8.3 h" in slow.line() and "rate limits" in slow.line()


class SlowChat(_Served):
    """Answers every chat request after `delay_s`, counting them."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.requests = 0

    def app(self) -> web.Application:
        async def chat(request: web.Request) -> web.StreamResponse:
            self.requests += 1
            await asyncio.sleep(self.delay_s)
            body = {
                "id": "x",
                "object": "chat.completion",
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": '{"ok": "yes"}'},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
            }
            return web.json_response(body)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", chat)
        return app


def _vm_hwm_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


@pytest.mark.slow
@pytest.mark.ray
def test_a_10000_configuration_panel_says_how_long_probing_takes_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    server = SlowChat(delay_s=0.5)
    base_url = server.start()
    panel = tmp_path / "panel.yaml"
    lines = ["configs:"]
    lines += [
        f'  - {{config_id: "c{i:05d}", model: m, family: f, base_url: "{base_url}", '
        "context_length: 32768}"
        for i in range(CONFIGS)
    ]
    panel.write_text("\n".join(lines) + "\n", encoding="utf-8")
    harness = SweepHarness()
    log = tmp_path / "sweep.log"
    proc = harness.start(
        [
            "+panel=endpoint",
            f"endpoint.panel_file={panel}",
            "arms=[j,q]",
            "repeats=1",
            "ray.num_cpus=2",
            f"out_dir={tmp_path / 'runs'}",
        ],
        log=log,
    )
    try:
        deadline = time.monotonic() + 300
        while "probing 10,000 configurations" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "no probe estimate within 300 s"
            time.sleep(0.5)
        while server.requests < 200:  # probing is under way
            assert time.monotonic() < deadline, f"{server.requests} probe requests"
            time.sleep(0.5)
        peak_mb = _vm_hwm_mb(proc.pid)
        os.kill(proc.pid, signal.SIGTERM)
        code = proc.wait(timeout=120)
        sent_at_stop = server.requests
        time.sleep(2)
        assert server.requests - sent_at_stop < 2 * PROBE_WINDOW  # nothing new is started
    finally:
        if proc.poll() is None:
            harness.kill(proc)
        harness.close()
        server.stop()
    text = log.read_text(errors="replace")
    assert code == 143, text[-3000:]
    errors = [line for line in text.splitlines() if line.startswith("error: ")]
    assert errors == [
        "error: stopped by SIGTERM before the plan was written; this run dir has no plan and "
        "cannot be resumed: start a new sweep"
    ], text[-3000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert "before the plan was written" in manifest["extra"]["error"]
    assert not (run_dir / "plan.parquet").exists()
    assert peak_mb < 1024, f"driver peak {peak_mb:.0f} MB while probing"
