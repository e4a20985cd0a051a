"""The EndpointWorker core in-process, with a scripted client (no Ray, no HTTP)."""

from __future__ import annotations

import pytest

from pipeline.carrier.chat import ChatRequest, ChatResponse, Usage
from pipeline.carrier.fixture import fixture_json, generate
from pipeline.config import EndpointConfig, RetryConfig, TimeoutConfig, load
from pipeline.sweep.plan import TrajectorySpec
from pipeline.sweep.worker import EndpointWorkerCore, WorkerSettings, trajectory_seed


class Recording:
    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return ChatResponse(
            text="## Goal\nkeep going", finish_reason="stop", usage=Usage(10, 5), cost_usd=0.01
        )


def settings(max_output_tokens: int | None) -> WorkerSettings:
    cfg = load(["arms=[m]"])
    fixture = generate(cfg.scenario, 1)
    return WorkerSettings(
        endpoint=EndpointConfig(
            config_id="c", model="m", family="f", max_output_tokens=max_output_tokens
        ),
        arms=dict(cfg.arms),
        fixture_json=fixture_json(fixture),
        fixture_sha256="f" * 64,
        scenario="small",
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
    spec = TrajectorySpec("run", "c", "m", "f", "m", 0, 1, 0, attempt=2)
    records = await core.run(spec)
    assert records.row["row_id"] == "c/m/g0/r1/a2"
    assert records.row["seed"] == trajectory_seed(166, spec)
    assert {r.seed for r in client.requests} == {trajectory_seed(166, spec)}
    assert records.row["publication_date"] == "2026-01-01"
    assert len(records.folds) == 3 and len(records.checks) == 14
    assert len(client.requests) == 4
    assert records.row["requests"] == 4 and records.row["cost_usd"] == pytest.approx(0.04)


async def test_endpoint_output_cap_lowers_max_tokens_of_every_request() -> None:
    client = Recording()
    core = EndpointWorkerCore(settings(200), client=client)
    await core.run(TrajectorySpec("run", "c", "m", "f", "m", 0, 0, 0))
    assert {r.max_tokens for r in client.requests} == {200}
