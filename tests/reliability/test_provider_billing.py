"""Issue 31 end to end: a carrier sweep against an endpoint that bills like a provider.

A real SimServer answers the protocol; a BillingProxy in front of it strips usage, states its
own charge, runs out of credits or rate-limits. Each test holds the run's `requests` table and
manifest against the proxy's own bill.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.carrier.config import ScenarioConfig
from pipeline.carrier.fixture import generate
from pipeline.carrier.sim_model import CarrierSimModel, profiles_for
from pipeline.config.load import conf_dir
from pipeline.config.schema import EndpointConfig, Limits
from pipeline.config.strict import build
from pipeline.endpoints.sim import SimOptions, SimServer, SimServerThread
from pipeline.sweep.execute import in_flight_cap
from tests.reliability.billing_proxy import BillingProxy
from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness
from tests.reliability.tables import view

pytestmark = [pytest.mark.slow, pytest.mark.ray]

PRICE = 50.0  # USD per million tokens, in and out: a request costs about 10 cents
CONCURRENCY = 4


@contextmanager
def billed(**proxy: Any) -> Iterator[BillingProxy]:
    data = yaml.safe_load((conf_dir() / "scenario" / "small.yaml").read_text())
    planted = tuple(generate(build(ScenarioConfig, data, "scenario"), 1).planted)
    model = CarrierSimModel(profiles_for(1, 7)[0], planted)
    with SimServerThread([SimServer(model, SimOptions(latency_s=0.05))]) as sim:
        server = BillingProxy(
            sim.base_urls[0], input_per_mtok=PRICE, output_per_mtok=PRICE, **proxy
        )
        server.start()
        server.model = sim.servers[0].model  # type: ignore[attr-defined]
        try:
            yield server
        finally:
            server.stop()


def overrides(server: BillingProxy, tmp_path: Path, *extra: str) -> list[str]:
    panel = tmp_path / "panel.yaml"
    config = {
        "config_id": "billing-proxy",
        "model": server.model,  # type: ignore[attr-defined]
        "family": "proxy",
        "base_url": server.base_url,
        "prices": {"input_per_mtok": PRICE, "output_per_mtok": PRICE},
        "limits": {"concurrency": CONCURRENCY},
    }
    panel.write_text(yaml.safe_dump({"configs": [config]}))
    return [
        "+panel=endpoint",
        f"endpoint.panel_file={panel}",
        "arms=[j,q]",
        "probe.samples=1",
        "progress=false",
        f"out_dir={tmp_path / 'runs'}",
        *extra,
    ]


def requests_of(run_dir: Path) -> list[dict[str, Any]]:
    return pq.read_table(run_dir / "requests").to_pylist()


def test_usageless_replies_are_billed_at_an_estimate_and_the_budget_stops(
    harness: SweepHarness, tmp_path: Path
) -> None:
    with billed(strip_usage=True) as server:
        result = harness.run(
            overrides(server, tmp_path, "repeats=8", "budget.usd=2"), timeout_s=SWEEP_TIMEOUT_S
        )
        stub_bill = server.billed_usd
    assert result.returncode == 0 and result.run_dir is not None, result.stderr[-3000:]
    run = view(result.run_dir)
    assert run.manifest.status == "budget_exhausted"
    chat = [r for r in requests_of(result.run_dir) if r["kind"] == "chat" and r["status"] == 200]
    assert chat and all(r["usage_reported"] is False for r in chat)
    assert all(r["cost_usd"] > 0 and r["spent_usd"] == r["cost_usd"] for r in chat)
    dearest = max(r["spent_usd"] for r in chat)
    spent = sum(r["spent_usd"] for r in chat)
    print(f"stub bill ${stub_bill:.4f}, estimated spend ${spent:.4f}, dearest ${dearest:.4f}")
    # the endpoint's own bill stays within the budget's bound: budget + in flight x dearest
    assert stub_bill <= 2.0 + CONCURRENCY * dearest, (stub_bill, dearest)
    # and the estimate is an upper one: never below what the endpoint charged
    assert spent >= stub_bill
    assert "Cost USD 0.0000" not in result.stderr


def test_the_providers_charge_is_what_the_run_spends(harness: SweepHarness, tmp_path: Path) -> None:
    with billed(charge_factor=0.5) as server:  # the provider bills half the panel's prices
        result = harness.run(overrides(server, tmp_path, "repeats=1"), timeout_s=SWEEP_TIMEOUT_S)
        charges = list(server.charges)
    assert result.returncode == 0 and result.run_dir is not None, result.stderr[-3000:]
    chat = [r for r in requests_of(result.run_dir) if r["kind"] == "chat"]
    swept = charges[-len(chat) :]  # the probes' replies come first and are not the sweep's
    assert sorted(r["billed_usd"] for r in chat) == pytest.approx(sorted(swept))
    assert all(r["spent_usd"] == r["billed_usd"] for r in chat)
    assert all(r["cost_usd"] == pytest.approx(2 * r["billed_usd"]) for r in chat)
    rows = pq.read_table(result.run_dir / "rows").to_pylist()
    assert sum(r["billed_usd"] for r in rows) == pytest.approx(sum(swept))
    # the run's spend is every charge, the probes' included
    assert f"Cost USD {sum(charges):.4f}" in result.stderr


def test_out_of_credits_stops_the_sweep_and_prints_the_resume_command(
    harness: SweepHarness, tmp_path: Path
) -> None:
    with billed(credits_after=6) as server:
        result = harness.run(overrides(server, tmp_path, "repeats=4"), timeout_s=SWEEP_TIMEOUT_S)
        refused = server.refused_402
    assert result.returncode == 0 and result.run_dir is not None, result.stderr[-3000:]
    run = view(result.run_dir)
    assert run.manifest.status == "budget_exhausted"
    counts = run.manifest.counts
    assert counts is not None and counts.not_run.get("provider_credits", 0) > 0
    assert not counts.invalid  # never recorded as a unit's own invalidity
    assert "Insufficient credits" in result.stderr
    assert f"sweep resume={result.run_dir}" in result.stderr.replace("\n", " ")
    # never retried, and nothing dispatched after the stop: one refusal per unit in flight
    endpoint = EndpointConfig("x", "m", "f", limits=Limits(concurrency=CONCURRENCY))
    assert refused <= in_flight_cap(endpoint)
    errors = [r for r in requests_of(result.run_dir) if r["status"] == 402]
    assert len(errors) == refused and all(r["error"] == "provider_credits" for r in errors)


def test_a_request_retried_after_a_429_has_a_row_per_attempt(
    harness: SweepHarness, tmp_path: Path
) -> None:
    with billed(rate_limit_every=5) as server:
        result = harness.run(overrides(server, tmp_path, "repeats=1"), timeout_s=SWEEP_TIMEOUT_S)
        limited, sent = server.limited_429, server.chat_requests
    assert result.returncode == 0 and result.run_dir is not None, result.stderr[-3000:]
    rows = requests_of(result.run_dir)
    chat = [r for r in rows if r["kind"] == "chat"]
    retried = [r for r in chat if r["status"] == 429]
    assert limited > 0 and len(retried) == limited
    assert all(r["attempt_in_request"] == 0 and r["spent_usd"] == 0 for r in retried)
    assert all(r["server_wait_s"] == 0.0 for r in retried)
    probes = sent - len(chat)  # the probes' requests do not pass the boundary
    assert len(chat) + probes == sent
    answered = {(r["row_id"], r["position"]) for r in chat if r["status"] == 200}
    assert all((r["row_id"], r["position"]) in answered for r in retried)
    assert any(r["attempt_in_request"] == 1 for r in chat)
