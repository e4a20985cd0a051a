"""The EndpointWorker core in-process, with a scripted client (no Ray, no HTTP)."""

from __future__ import annotations

import asyncio

import pytest

from pipeline.carrier.study import CarrierStudy
from pipeline.chat.errors import TransportFault
from pipeline.chat.messages import ChatRequest, ChatResponse, Usage
from pipeline.config import EndpointConfig, RetryConfig, TimeoutConfig, load
from pipeline.study import UnitSpec
from pipeline.sweep.worker import EndpointWorkerCore, WorkerSettings, unit_seed


class Recording:
    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return ChatResponse(
            text="## Goal\nkeep going", finish_reason="stop", usage=Usage(10, 5), cost_usd=0.01
        )


def settings(max_output_tokens: int | None) -> WorkerSettings:
    cfg = load(["arms=[m]", "study.fixture_seed=1"])
    return WorkerSettings(
        endpoint=EndpointConfig(
            config_id="c", model="m", family="f", max_output_tokens=max_output_tokens
        ),
        study=CarrierStudy.from_node(cfg.study),
        publication_date="2026-01-01",
        temperature=0.0,
        base_seed=166,
        simulated=False,
        retry=RetryConfig(),
        timeouts=TimeoutConfig(),
    )


async def test_worker_runs_one_attempt_into_table_records() -> None:
    client = Recording()
    core = EndpointWorkerCore(settings(None), client=client)
    spec = UnitSpec("run", "c", "m", "f", "m", 0, 1, 0, attempt=2)
    records = await core.run(spec)
    assert records.row["row_id"] == "c/m/g0/r1/a2"
    assert records.row["seed"] == unit_seed(166, spec)
    assert {r.seed for r in client.requests} == {unit_seed(166, spec)}
    assert records.row["publication_date"] == "2026-01-01"
    assert len(records.tables["folds"]) == 3 and len(records.tables["checks"]) == 14
    assert {r["row_id"] for t in records.tables.values() for r in t} == {spec.row_id}
    assert len(client.requests) == 4
    assert records.row["requests"] == 4 and records.row["cost_usd"] == pytest.approx(0.04)
    assert records.bill.requests == 4 and records.bill.spent_usd == pytest.approx(0.04)
    assert [r["position"] for r in records.requests] == [0, 1, 2, 3]


async def test_endpoint_output_cap_lowers_max_tokens_of_every_request() -> None:
    client = Recording()
    core = EndpointWorkerCore(settings(200), client=client)
    await core.run(UnitSpec("run", "c", "m", "f", "m", 0, 0, 0))
    assert {r.max_tokens for r in client.requests} == {200}


class Gated:
    """Answers each request only when the test lets it through (one `asyncio.Event` each)."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.arrived: list[ChatRequest] = []
        self.gates: list[asyncio.Event] = []
        self.fail_at = fail_at

    async def complete(self, request: ChatRequest) -> ChatResponse:
        gate = asyncio.Event()
        self.arrived.append(request)
        self.gates.append(gate)
        await gate.wait()
        if len(self.arrived) - 1 == self.fail_at:
            raise TransportFault("connection reset")
        return ChatResponse(
            text="## Goal\nkeep going", finish_reason="stop", usage=Usage(10, 5), cost_usd=0.01
        )

    async def answer_next(self) -> None:
        """Let the waiting request through and wait until the next one arrives (or none)."""
        waiting = len(self.arrived)
        self.gates[-1].set()
        for _ in range(100):
            await asyncio.sleep(0)
            if len(self.arrived) > waiting:
                return


async def arrived(client: Gated, n: int) -> None:
    for _ in range(100):
        if len(client.arrived) >= n:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"only {len(client.arrived)} of {n} requests arrived")


async def test_counting_client_counts_requests_and_folds_as_they_happen() -> None:
    client = Gated()
    core = EndpointWorkerCore(settings(None), client=client)
    spec = UnitSpec("run", "c", "m", "f", "m", 0, 0, 0)
    task = asyncio.create_task(core.run(spec))
    await arrived(client, 1)
    live = core.live()
    assert live.steps_per_unit == 3
    counts = live.attempts[spec.row_id]
    assert (counts.sent, counts.completed, counts.steps, counts.open) == (1, 0, 0, 1)
    assert not counts.finished
    await client.answer_next()  # fold 0 answered, fold 1 sent
    counts = core.live().attempts[spec.row_id]
    assert (counts.sent, counts.completed, counts.steps) == (2, 1, 1)
    assert counts.tokens == 15 and counts.cost_usd == pytest.approx(0.01)
    await client.answer_next()
    await client.answer_next()  # the three folds answered; the recall request is out
    counts = core.live().attempts[spec.row_id]
    assert (counts.sent, counts.completed, counts.steps) == (4, 3, 3)
    assert client.arrived[-1].purpose == "recall"
    assert live.attempts[spec.row_id].sent == 1  # a snapshot is a copy, not a view
    await client.answer_next()
    records = await task
    # the counts follow the row's own definitions, so the row replaces them exactly
    assert records.row["requests"] == 4 and records.row["folds"] == 3
    assert core.live().attempts == {}  # returned: it is a row now, not live


async def test_a_held_attempt_stays_live_until_released_and_failures_are_counted() -> None:
    client = Gated(fail_at=1)  # the second fold request fails after the client's retries
    core = EndpointWorkerCore(settings(None), client=client)
    spec = UnitSpec("run", "c", "m", "f", "m", 0, 0, 0)
    task = asyncio.create_task(core.run(spec, hold=True))
    await arrived(client, 1)
    await client.answer_next()
    client.gates[-1].set()
    records = await task
    assert records.row["retryable"] and records.row["requests"] == 2
    counts = core.live().attempts[spec.row_id]  # in a batch that is still running
    assert counts.finished and (counts.sent, counts.completed, counts.failed) == (2, 1, 1)
    assert counts.open == 0
    core.release(spec)
    assert core.live().attempts == {}
