"""Kill -9 mid-unit, then resume: the response cache means nothing is paid twice.

One simulated endpoint runs in the test process for the whole test, so its own counters span
both sessions of the run (a sweep's own sim servers restart with each session). It counts
every answered chat body by digest (`SimOptions.count_bodies`). A carrier sweep on it
(`+panel=endpoint`) is SIGKILLed, process group and Ray with it, once about half of its
requests were answered, with every unit mid-flight; then `resume=RUN_DIR` finishes it.

Asserted, against an uninterrupted run of the same sweep on a second server:
- every (unit, request position), that is every distinct body, was served exactly once across
  both sessions, and the killed-and-resumed run was served exactly as many requests as the
  uninterrupted one;
- the resumed run's rows, checks and folds equal the uninterrupted run's on every column but
  the session-dependent ones (`cache_hits`, `spent_usd`, and the golden form's run id and
  wall-clock columns);
- the resume's requests are cache hits for what the first session had answered.

Before the kill the server holds its unsent replies for a moment (`SimServer.hold`), so no
reply is on the wire when the sweep dies: every reply the server delivered had reached the
client and been stored. The requests in flight at the kill reach the server, but their
client is gone before the reply is ready; the server counts them apart
(`abandoned_bodies`: a provider would bill them), and the resume must send each once more.
Without the hold, a kill in the millisecond between a reply's arrival and its storing would
pay that reply twice, and the test would measure the timing of the kill, not the cache
(docs/reliability.md).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from pipeline.carrier.config import ScenarioConfig
from pipeline.carrier.fixture import generate
from pipeline.carrier.sim_model import CarrierSimModel, profiles_for
from pipeline.config.load import conf_dir
from pipeline.config.strict import build
from pipeline.endpoints.sim import SimOptions, SimServer, SimServerThread
from tests.golden.normalise import normalise
from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness

pytestmark = [pytest.mark.slow, pytest.mark.ray]

SESSION_COLUMNS = ("cache_hits", "spent_usd")
# time for a reply already sent to be stored by its client before the kill: ~1 ms unloaded
SETTLE_S = 2.0


def sim_server() -> SimServerThread:
    import yaml

    data = yaml.safe_load((conf_dir() / "scenario" / "small.yaml").read_text())
    planted = tuple(generate(build(ScenarioConfig, data, "scenario"), 1).planted)
    model = CarrierSimModel(profiles_for(1, 7)[0], planted)
    return SimServerThread([SimServer(model, SimOptions(latency_s=1.0, count_bodies=True))])


def overrides(server: SimServerThread, out: Path) -> list[str]:
    return [
        "+panel=endpoint",
        f"endpoint.base_url={server.base_urls[0]}",
        f"endpoint.model={server.servers[0].model}",
        "arms=[j,q]",
        "repeats=2",
        "probe.samples=1",
        "progress=false",
        f"out_dir={out}",
    ]


def served(server: SimServerThread) -> dict[str, int]:
    return server.servers[0].served_bodies()


def comparable(run_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """rows, checks, folds and plan in golden form, without the session-dependent columns."""
    texts = normalise(run_dir)
    out = {}
    for name in ("rows", "checks", "folds", "plan"):
        records = [json.loads(line) for line in texts[f"{name}.jsonl"].splitlines() if line]
        out[name] = [{k: v for k, v in r.items() if k not in SESSION_COLUMNS} for r in records]
    return out


def test_kill_then_resume_serves_every_request_exactly_once(
    harness: SweepHarness, tmp_path: Path
) -> None:
    with sim_server() as reference:
        whole = harness.run(overrides(reference, tmp_path / "whole"), timeout_s=SWEEP_TIMEOUT_S)
        assert whole.returncode == 0 and whole.run_dir is not None, whole.stderr[-3000:]
        expected = served(reference)
    with sim_server() as server:
        out = tmp_path / "killed"
        proc = harness.start(overrides(server, out), log=tmp_path / "killed.log")
        deadline = time.monotonic() + SWEEP_TIMEOUT_S
        while sum(served(server).values()) < len(expected) // 2:
            assert proc.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        server.hold()
        time.sleep(SETTLE_S)
        harness.kill(proc)
        harness.reap(grace_s=30.0)  # every process of the sweep, Ray's included, is gone
        time.sleep(SETTLE_S)  # and the server has seen their connections close
        before = sum(served(server).values())
        server.release()
        (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
        resumed = harness.run([f"resume={run_dir}"], timeout_s=SWEEP_TIMEOUT_S)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        counts = served(server)
        abandoned = server.servers[0].abandoned_bodies()
    twice = {d: n for d, n in counts.items() if n != 1}
    total = sum(counts.values())
    print(f"\nplanned requests {sum(expected.values())}; served before the kill {before}, "
          f"after the resume {total}; in flight at the kill {sum(abandoned.values())}; "
          f"served more than once: {len(twice)}")  # fmt: skip
    assert not twice, f"{len(twice)} request(s) were served more than once"
    assert total == sum(expected.values())
    assert set(abandoned) <= set(counts)  # each request cut by the kill was sent again, once
    assert comparable(run_dir) == comparable(whole.run_dir)
    requests = pq.read_table(run_dir / "requests").to_pylist()
    hits = [r for r in requests if r["cache_hit"]]
    assert hits and all(r["session"] == 1 and r["spent_usd"] == 0 for r in hits)
