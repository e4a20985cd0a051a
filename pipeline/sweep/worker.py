"""EndpointWorker: the one owner of an endpoint's session, rate limiter and retry policy.

The class is plain Python so tests can drive it in-process; `pipeline.sweep.actors` wraps it
as an async Ray actor (one per served configuration). A trajectory runs entirely inside the
worker, so a Ray call is coarse: one call per trajectory, many HTTP requests inside it.

While a trajectory runs, a `CountingClient` around the endpoint's client counts its requests,
folds, tokens and cost as they happen, into `EndpointWorkerCore.in_flight`; `live()` hands a
copy to the driver's progress display (display only: rows stay the authoritative totals).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from pipeline.carrier.arms import Arm, build_arms
from pipeline.carrier.fixture import Fixture, fixture_from_json
from pipeline.carrier.fixture_model import render_chunk, render_message
from pipeline.carrier.trajectory import TrajectoryInputs, run_trajectory
from pipeline.chat.messages import ChatClient, ChatRequest, ChatResponse
from pipeline.config.schema import ArmConfig, EndpointConfig, RetryConfig, TimeoutConfig
from pipeline.sweep.plan import TrajectorySpec
from pipeline.sweep.progress import EndpointLive, LiveCounts
from pipeline.sweep.rows import RowContext, TrajectoryRecords, build_records


@dataclass(frozen=True)
class WorkerSettings:
    """Everything a worker needs; picklable so Ray can ship it to the actor."""

    endpoint: EndpointConfig
    arms: dict[str, ArmConfig]
    fixture_json: bytes
    fixture_sha256: str
    scenario: str
    publication_date: str | None
    temperature: float
    base_seed: int
    simulated: bool
    retry: RetryConfig
    timeouts: TimeoutConfig


def trajectory_seed(base_seed: int, spec: TrajectorySpec) -> int:
    """A per-attempt sampling seed, sent to endpoints that accept one and recorded either way."""
    text = f"{base_seed}:{spec.config_id}:{spec.arm}:{spec.execution_group}:{spec.repeat}"
    text += f":{spec.attempt}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def chunk_messages(chunk: Any) -> list[tuple[str, str]]:
    """(role, rendered text) per message: tool-call arguments are part of what a runtime sees."""
    return [(m.role, render_message(m)) for m in chunk.messages]


class CappedClient:
    """Applies the endpoint's output-token cap to every request.

    The cap exists for CPU-served tiny models (conf/panel/local.yaml), where a 2,400-token
    budget would make the default sweep take hours; the manifest records it.
    """

    def __init__(self, inner: ChatClient, max_output_tokens: int | None = None) -> None:
        self.inner = inner
        self.max_output_tokens = max_output_tokens

    async def complete(self, request: ChatRequest) -> ChatResponse:
        cap = self.max_output_tokens
        if cap is not None and request.max_tokens > cap:
            request = replace(request, max_tokens=cap)
        return await self.inner.complete(request)


class CountingClient:
    """Counts one attempt's requests as they happen, into its `LiveCounts` (display only).

    One per attempt, around the endpoint's shared client: the protocol (carrier/) stays pure,
    and a request costs one more await and a few additions. Counts follow the row's own
    definitions (module `pipeline.sweep.progress`), so a collected row replaces them exactly.
    """

    def __init__(self, inner: ChatClient, counts: LiveCounts) -> None:
        self.inner = inner
        self.counts = counts

    async def complete(self, request: ChatRequest) -> ChatResponse:
        counts = self.counts
        counts.sent += 1
        try:
            response = await self.inner.complete(request)
        except BaseException:
            counts.failed += 1
            raise
        counts.completed += 1
        if request.purpose == "fold":
            counts.folds += 1
        usage = response.usage
        counts.tokens += (usage.prompt_tokens or 0) + (usage.completion_tokens or 0)
        counts.cost_usd += response.cost_usd
        return response


class EndpointWorkerCore:
    """Runs trajectories against one endpoint; owns its client (and so its limiter)."""

    def __init__(self, settings: WorkerSettings, client: ChatClient | None = None) -> None:
        self.settings = settings
        self.fixture: Fixture = fixture_from_json(settings.fixture_json)
        self.arms: dict[str, Arm] = build_arms(settings.arms)
        # Every trajectory folds the same chunks: render them once per worker.
        self._rendered = {c.index: render_chunk(c) for c in self.fixture.chunks}
        self._messages = {c.index: chunk_messages(c) for c in self.fixture.chunks}
        self._client = client
        self._closers: list[Any] = []
        self.client: CappedClient | None = None
        self.http_client: Any = None
        # row_id -> live counts of attempts whose records have not left the worker yet
        self.in_flight: dict[str, LiveCounts] = {}

    async def ensure_client(self) -> CappedClient:
        if self.client is None:
            inner = self._client if self._client is not None else await self._http_client()
            self.client = CappedClient(inner, self.settings.endpoint.max_output_tokens)
        return self.client

    async def _http_client(self) -> ChatClient:
        from pipeline.endpoints.client import OpenAIChatClient, make_session
        from pipeline.endpoints.limits import SWEEP_HEADROOM, EndpointLimiter
        from pipeline.endpoints.retry import build_retry

        ep = self.settings.endpoint
        key = os.environ.get(ep.api_key_env) if ep.api_key_env else None
        session = make_session(self.settings.timeouts)
        self._closers.append(session)
        client = OpenAIChatClient(
            ep,
            session,
            EndpointLimiter(ep.limits, headroom=SWEEP_HEADROOM),
            build_retry(self.settings.retry),
            api_key=key,
        )
        self.http_client = client
        return client

    def context(self, arm: Arm, seed: int) -> RowContext:
        s = self.settings
        return RowContext(
            endpoint=s.endpoint,
            publication_date=s.publication_date,
            scenario=s.scenario,
            fixture_sha256=s.fixture_sha256,
            system_prompt_sha256=arm.system_prompt_sha256,
            declared_capacity_chars=arm.declared_capacity_chars,
            seed=seed,
            simulated=s.simulated,
        )

    async def run(self, spec: TrajectorySpec, *, hold: bool = False) -> TrajectoryRecords:
        """One attempt of one trajectory, as table records.

        Its live counts stay in `in_flight` until it returns, or with `hold` until
        `release(spec)`: a batch's records leave the worker together, so its finished attempts
        stay counted live until then (the driver has not seen their rows yet).
        """
        counts = self.in_flight[spec.row_id] = LiveCounts()
        try:
            return await self._run(spec, CountingClient(await self.ensure_client(), counts))
        finally:
            counts.finished = True
            if not hold:
                self.release(spec)

    def release(self, spec: TrajectorySpec) -> None:
        """Forget an attempt's live counts: its records are on their way to the driver."""
        self.in_flight.pop(spec.row_id, None)

    def live(self) -> EndpointLive:
        """A copy of the live counts of every attempt not yet returned."""
        counts = {row_id: c.copy() for row_id, c in self.in_flight.items()}
        return EndpointLive(len(self.fixture.chunks), counts)

    async def _run(self, spec: TrajectorySpec, client: ChatClient) -> TrajectoryRecords:
        arm = self.arms[spec.arm]
        seed = trajectory_seed(self.settings.base_seed, spec)
        inputs = TrajectoryInputs(
            arm=arm,
            chunks=self.fixture.chunks,
            render_chunk=lambda chunk: self._rendered[chunk.index],
            chunk_messages=lambda chunk: self._messages[chunk.index],
            graded=self.fixture.graded,
            temperature=self.settings.temperature,
            seed=seed,
        )
        started = datetime.now(UTC)
        result = await run_trajectory(client, inputs)
        finished = datetime.now(UTC)
        return build_records(spec, self.context(arm, seed), result, started, finished)

    async def close(self) -> None:
        for closer in self._closers:
            await closer.close()
        self._closers.clear()
