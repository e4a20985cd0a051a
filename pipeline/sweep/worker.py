"""EndpointWorker: the one owner of an endpoint's session, rate limiter and retry policy.

The class is plain Python so tests can drive it in-process; `pipeline.sweep.actors` wraps it
as an async Ray actor (one per served configuration). A unit runs entirely inside the
worker, so a Ray call is coarse: one call per unit, many HTTP requests inside it. The unit
runner is the study's (`Study.runner`, built once per worker); the worker knows no study.

Each attempt's runner gets a `RequestBoundary` (pipeline/sweep/boundary.py) around the
endpoint's client: it applies the output cap, answers from the response cache, asks the run's
budget, and counts the attempt's bill, its live display counts (`in_flight`, which `live()`
copies to the driver) and its `requests` records, once per request. The row's bill columns
come from there, for every study.
"""

from __future__ import annotations

import gc
import hashlib
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.chat.messages import (
    ChatClient,
    ChatRequest,
    ChatResponse,
    counter_of,
    renderer_of,
)
from pipeline.config.schema import EndpointConfig, RetryConfig, TimeoutConfig
from pipeline.endpoints.exchange import Recorder
from pipeline.endpoints.limits import EndpointLimiter
from pipeline.endpoints.offline import OfflineClient
from pipeline.study import Study, UnitContext, UnitRunner, UnitSpec
from pipeline.sweep.boundary import BoundaryContext, RequestBoundary, endpoint_identity
from pipeline.sweep.budget import BudgetGate, BudgetStop
from pipeline.sweep.progress import EndpointLive, LiveCounts
from pipeline.sweep.response_cache import ResponseCache
from pipeline.sweep.rows import RowContext, UnitRecords, cut_records, unit_records


@dataclass(frozen=True)
class WorkerSettings:
    """Everything a worker needs; picklable so Ray can ship it to the actor."""

    endpoint: EndpointConfig
    study: Study
    publication_date: str | None
    temperature: float
    base_seed: int
    simulated: bool
    retry: RetryConfig
    timeouts: TimeoutConfig
    offline: bool = False  # an offline panel: the runner gets a client that refuses requests
    session: int = 0  # the run's session index (manifest history), on every request record
    cache_dir: str | None = None  # the response cache's directory; None: cache.scope=off
    cache_ttl_s: float | None = None  # a shared cache's entry lifetime (None: never expires)
    budget: BudgetGate | None = None  # the run's budget gate; None: the run has no budget
    served_by: str | None = None  # an engine-started server's stable name (boundary.py)
    record_dir: str | None = None  # endpoint.record: where chat replies are recorded


def unit_seed(base_seed: int, spec: UnitSpec) -> int:
    """A per-attempt sampling seed, sent to endpoints that accept one and recorded either way."""
    text = f"{base_seed}:{spec.config_id}:{spec.arm}:{spec.execution_group}:{spec.repeat}"
    text += f":{spec.attempt}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)


def row_context(settings: WorkerSettings, spec: UnitSpec) -> RowContext:
    """The shared columns of one attempt's rows: the worker's, and the driver's for an attempt
    whose worker died, so a lost attempt's row is keyed and seeded as its worker would have."""
    return RowContext(
        endpoint=settings.endpoint,
        publication_date=settings.publication_date,
        seed=unit_seed(settings.base_seed, spec),
        simulated=settings.simulated,
    )


TemplateCall = Callable[[ChatRequest], Awaitable[str]]
TokenCall = Callable[[str], Awaitable[int]]


class CappedClient:
    """Applies the endpoint's output-token cap to every request.

    The cap exists for CPU-served tiny models (conf/panel/local.yaml), where a 2,400-token
    budget would make the default sweep take hours; the manifest records it.
    `apply_template` is present only when the inner client has it (so `renderer_of` tells
    the truth through the wrapper); a rendering generates nothing, so no cap applies.
    """

    apply_template: TemplateCall  # set per instance, only when the inner client renders
    count_tokens: TokenCall  # set per instance, only when the inner client counts tokens

    def __init__(self, inner: ChatClient, max_output_tokens: int | None = None) -> None:
        self.inner = inner
        self.max_output_tokens = max_output_tokens
        renderer = renderer_of(inner)
        if renderer is not None:
            self.apply_template = renderer.apply_template
        counter = counter_of(inner)
        if counter is not None:
            self.count_tokens = counter.count_tokens

    async def complete(self, request: ChatRequest) -> ChatResponse:
        cap = self.max_output_tokens
        if cap is not None and request.max_tokens > cap:
            request = replace(request, max_tokens=cap)
        return await self.inner.complete(request)


class EndpointWorkerCore:
    """Runs a study's units against one endpoint; owns its client (and so its limiter)."""

    def __init__(
        self,
        settings: WorkerSettings,
        client: ChatClient | None = None,
        *,
        group_limiter: EndpointLimiter | None = None,
    ) -> None:
        self.settings = settings
        # the limiter of the endpoint's limit group, shared with the group's other members
        self.group_limiter = group_limiter
        self.runner: UnitRunner = settings.study.runner(settings.endpoint)
        self._client = client
        self._closers: list[Any] = []
        self.client: CappedClient | None = None  # the probes' client (capped, not billed)
        self.raw_client: ChatClient | None = None  # what the request boundary wraps
        self.http_client: Any = None
        cache = None
        if settings.cache_dir is not None:
            cache = ResponseCache(Path(settings.cache_dir), settings.cache_ttl_s)
        self.boundary = BoundaryContext(
            endpoint=settings.endpoint,
            identity=endpoint_identity(settings.endpoint, settings.served_by),
            step_purpose=self.runner.step_purpose,
            session=settings.session,
            cache=cache,
            gate=settings.budget,
        )
        # row_id -> live counts of attempts whose records have not left the worker yet
        self.in_flight: dict[str, LiveCounts] = {}

    async def ensure_client(self) -> CappedClient:
        if self.client is None:
            if self._client is not None:
                inner = self._client
            elif self.settings.offline:
                inner = OfflineClient(self.settings.endpoint.config_id)
            else:
                inner = await self._http_client()
            self.raw_client = inner
            self.client = CappedClient(inner, self.settings.endpoint.max_output_tokens)
        return self.client

    async def _http_client(self) -> ChatClient:
        from pipeline.endpoints.client import OpenAIChatClient, make_session
        from pipeline.endpoints.limits import SWEEP_HEADROOM, GroupedLimiter, Limiter
        from pipeline.endpoints.retry import build_retry

        ep = self.settings.endpoint
        key = os.environ.get(ep.api_key_env) if ep.api_key_env else None
        session = make_session(self.settings.timeouts)
        self._closers.append(session)
        own = EndpointLimiter(ep.limits, headroom=SWEEP_HEADROOM)
        group = self.group_limiter
        limiter: Limiter = own if group is None else GroupedLimiter(own, group)
        client = OpenAIChatClient(
            ep,
            session,
            limiter,
            build_retry(self.settings.retry),
            api_key=key,
            recorder=_recorder(self.settings.record_dir, ep),
        )
        self.http_client = client
        return client

    def context(self, spec: UnitSpec) -> RowContext:
        return row_context(self.settings, spec)

    async def run(self, spec: UnitSpec, *, hold: bool = False) -> UnitRecords:
        """One attempt of one unit, as table records.

        Its live counts stay in `in_flight` until it returns, or with `hold` until
        `release(spec)`: a batch's records leave the worker together, so its finished attempts
        stay counted live until then (the driver has not seen their rows yet).
        """
        counts = self.in_flight[spec.row_id] = LiveCounts()
        try:
            await self.ensure_client()
            assert self.raw_client is not None
            boundary = RequestBoundary(self.raw_client, self.boundary, spec, counts)
            return await self._run(spec, boundary)
        finally:
            counts.finished = True
            if not hold:
                self.release(spec)

    def release(self, spec: UnitSpec) -> None:
        """Forget an attempt's live counts: its records are on their way to the driver."""
        self.in_flight.pop(spec.row_id, None)

    def live(self) -> EndpointLive:
        """A copy of the live counts of every attempt not yet returned."""
        counts = {row_id: c.copy() for row_id, c in self.in_flight.items()}
        return EndpointLive(self.runner.steps_per_unit, counts, self.runner.requests_per_unit)

    async def _run(self, spec: UnitSpec, boundary: RequestBoundary) -> UnitRecords:
        ctx = self.context(spec)
        assert ctx.seed is not None
        started = datetime.now(UTC)
        unit = UnitContext(seed=ctx.seed, temperature=self.settings.temperature)
        try:
            result = await self.runner.run(spec, boundary, unit)
        except BudgetStop as stop:  # the budget, or the provider's 402 (ProviderCreditsStop)
            return cut_records(
                spec, stop.reason, boundary.bill.bill(), boundary.records, detail=str(stop) or None
            )
        finished = datetime.now(UTC)
        bill = boundary.bill.bill()
        return unit_records(
            spec, ctx, result, started, finished, bill=bill, requests=boundary.records
        )

    async def close(self) -> None:
        if self.boundary.cache is not None:
            self.boundary.cache.close()
        for closer in self._closers:
            await closer.close()
        self._closers.clear()


def _recorder(record_dir: str | None, endpoint: EndpointConfig) -> Recorder | None:
    """endpoint.record: a RecordingWriter into `record_dir` (None: nothing is recorded)."""
    if record_dir is None:
        return None
    from pipeline.endpoints.recording import RecordingWriter

    return RecordingWriter.for_endpoint(Path(record_dir).expanduser(), endpoint)


def worker_cores(settings: Sequence[WorkerSettings]) -> dict[str, EndpointWorkerCore]:
    """The cores one EndpointWorker hosts, config_id -> core; the members of a limit group
    share one limiter, the group's bucket (so all of them must be hosted together)."""
    from pipeline.endpoints.limit_groups import group_limiters, group_of
    from pipeline.endpoints.limits import SWEEP_HEADROOM

    shared = group_limiters([s.endpoint for s in settings], headroom=SWEEP_HEADROOM)
    cores = {}
    for s in settings:
        group = group_of(s.endpoint)
        limiter = shared[group] if group is not None else None
        cores[s.endpoint.config_id] = EndpointWorkerCore(s, group_limiter=limiter)
    return cores


# The collector's thresholds in a process that hosts worker cores: each reply allocates
# thousands of small containers, so the default gen-0 threshold (700) ran a collection every
# few requests over the process's large heap (Ray, aiohttp, the study's inputs); 100,000 cut an
# actor's CPU per unit by about 15% (docs/benchmarks.md). Garbage cycles are rare here and
# stay bounded.
WORKER_GC_THRESHOLDS = (100_000, 50, 100)


def tune_collector() -> None:
    """Set the worker process's collector thresholds: the actor calls it, and so do the
    benchmarks that drive a core without Ray, so they measure the process a sweep runs."""
    gc.set_threshold(*WORKER_GC_THRESHOLDS)
