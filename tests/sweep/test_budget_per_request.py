"""The budget is checked before every request: the rule, its overshoot bound, every study."""

from __future__ import annotations

import asyncio
import random
from dataclasses import replace
from typing import Any

import pytest

from pipeline.carrier.study import CarrierStudy
from pipeline.chat.messages import ChatRequest, ChatResponse, Usage
from pipeline.config import BudgetConfig, EndpointConfig, RetryConfig, TimeoutConfig, load
from pipeline.config.schema import Prices
from pipeline.study import Study, UnitSpec
from pipeline.sweep.budget import BudgetLedger, BudgetStop, LocalGate
from pipeline.sweep.worker import EndpointWorkerCore, WorkerSettings
from tests.endpoints.conftest import endpoint_config, user_request
from tests.sweep.boundary_kit import Priced, boundary, spec


def test_a_request_is_admitted_only_while_spend_and_reservations_stay_under() -> None:
    ledger = BudgetLedger(BudgetConfig(usd=1.0))
    first = ledger.admit()
    assert first == 0.0  # nothing is known yet: reserve nothing
    ledger.settle(first, 0.4)
    assert ledger.admit() == 0.4  # the dearest request so far
    assert ledger.state().in_flight == 1
    # spent 0.4 + reserved 0.4 + 0.4 more would reach the budget: refused, for good
    assert ledger.admit() is None and ledger.state().stopped
    ledger.settle(0.4, 0.1)
    assert ledger.admit() is None


def test_a_request_budget_is_never_exceeded() -> None:
    ledger = BudgetLedger(BudgetConfig(requests=3), requests=1)
    admitted = [ledger.admit() for _ in range(5)]
    assert admitted == [0.0, 0.0, None, None, None]


def test_a_zero_budget_admits_nothing() -> None:
    assert BudgetLedger(BudgetConfig(usd=0.0)).admit() is None


async def test_a_refused_request_stops_the_unit_unsent() -> None:
    inner = Priced(cost=1.0)
    ledger = BudgetLedger(BudgetConfig(usd=1.5))
    b = boundary(inner, gate=LocalGate(ledger))
    await b.complete(user_request())
    with pytest.raises(BudgetStop):
        await b.complete(user_request())
    assert len(inner.sent) == 1 and b.bill.bill().requests == 1 and len(b.records) == 1


class Jittery(Priced):
    """Priced replies at a random cost and delay, so many requests are in flight at once."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng = rng
        self.in_flight = 0
        self.peak = 0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.rng.uniform(0.001, 0.02))
        finally:
            self.in_flight -= 1
        cost = self.rng.uniform(0.001, 0.01)
        return ChatResponse("x", "stop", Usage(10, 10), cost_usd=cost)


async def overshoot_at_200(endpoint: EndpointConfig) -> tuple[float, int, float]:
    """200 units of 20 requests at once under a $0.50 budget: (overshoot, peak, dearest)."""
    budget = 0.5
    ledger = BudgetLedger(BudgetConfig(usd=budget))
    gate = LocalGate(ledger)
    inner = Jittery(random.Random(7))
    dearest = 0.0

    async def unit(i: int) -> None:
        nonlocal dearest
        b = boundary(inner, endpoint=endpoint, gate=gate, unit=spec(repeat=i))
        try:
            for _ in range(20):
                reply = await b.complete(user_request())
                dearest = max(dearest, reply.cost_usd)
        except BudgetStop:
            return

    await asyncio.gather(*(unit(i) for i in range(200)))
    overshoot = ledger.spent_usd - budget
    assert ledger.state().stopped and ledger.state().in_flight == 0
    print(f"\nbudget ${budget}: spent ${ledger.spent_usd:.4f}, overshoot ${overshoot:.4f}, "
          f"peak in flight {inner.peak}, dearest ${dearest:.4f}, "
          f"bound ${inner.peak * dearest:.4f}")  # fmt: skip
    return overshoot, inner.peak, dearest


async def test_overshoot_stays_within_in_flight_times_dearest_at_concurrency_200() -> None:
    overshoot, peak, dearest = await overshoot_at_200(endpoint_config())  # no prices known
    assert peak >= 100  # the test really had many requests in flight
    assert 0 < overshoot <= peak * dearest


async def test_with_prices_the_worst_case_reservation_leaves_no_overshoot() -> None:
    priced = endpoint_config(prices=Prices(input_per_mtok=1000, output_per_mtok=1000))
    overshoot, peak, _ = await overshoot_at_200(priced)
    assert peak >= 20 and overshoot <= 0


# -- every study stops at its next request, as not run ----------------------------------------
class PricedScripted(Priced):
    """Any study's endpoint: renders templates and answers chats at a fixed price."""

    async def apply_template(self, request: ChatRequest) -> str:
        return "<rendered>" + " ".join(
            str(m.get("content", "")) for m in request.wire_messages or ()
        )


def core_for(study: Study, budget_usd: float, client: Any) -> EndpointWorkerCore:
    settings = WorkerSettings(
        endpoint=EndpointConfig("c", "m", "f"),
        study=study,
        publication_date=None,
        temperature=0.0,
        base_seed=166,
        simulated=True,
        retry=RetryConfig(),
        timeouts=TimeoutConfig(),
        budget=LocalGate(BudgetLedger(BudgetConfig(usd=budget_usd))),
    )
    return EndpointWorkerCore(settings, client=client)


async def stops_at_budget(study: Study, arm: str, cost: float = 0.01) -> None:
    client = PricedScripted(cost=cost)
    core = core_for(study, budget_usd=2.5 * cost, client=client)
    records = await core.run(UnitSpec("run", "c", "m", "f", arm, 0, 0, 0))
    assert records.cut == "budget_exhausted" and records.row == {}
    assert records.outcome.invalid_reason == "budget_exhausted"
    assert records.bill.spent_usd == pytest.approx(2 * cost)  # two requests, then the stop
    assert len(records.requests) == len(client.sent) + sum(
        r["kind"] == "template" for r in records.requests
    )


async def test_a_carrier_trajectory_stops_at_the_budget_as_not_run() -> None:
    cfg = load(["arms=[m]", "study.fixture_seed=1"])
    await stops_at_budget(CarrierStudy.from_node(cfg.study), "m")


async def test_a_traces_unit_stops_at_the_budget_as_not_run() -> None:
    from pipeline.studies.traces import DEFINITION

    node = {"name": "traces", "arms": ["naive"], "compression": {"real_per_band": 1,
            "synthetic_per_band": 1, "longest_chars": 17000}}  # fmt: skip
    study = replace(DEFINITION.configure(node), template_loader=lambda _endpoint: None)
    await stops_at_budget(study, "naive")


async def test_a_toolout_live_unit_stops_at_the_budget_as_not_run() -> None:
    from tests.toolout.test_live import runner, transcript

    class LiveStudy:
        """The toolout study's live runner over two scripted transcripts."""

        def __init__(self) -> None:
            self._runner = runner(
                "exact", "openai", "gpt-4o", [transcript("t/0"), transcript("t/1")]
            )

        def __getattr__(self, name: str) -> Any:
            raise AttributeError(name)

        def runner(self, endpoint: EndpointConfig) -> Any:
            return self._runner

    await stops_at_budget(LiveStudy(), "exact")  # type: ignore[arg-type]
