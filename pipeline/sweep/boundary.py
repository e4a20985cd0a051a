"""The request boundary: the one place every request of every study passes.

The worker puts one `RequestBoundary` around its endpoint's client for each attempt it runs
and hands it to the study's runner as the runner's `ChatClient`. For each request, in order:

1. the endpoint's output-token cap (`max_output_tokens`, the local panel's) is applied;
2. the body is serialised once, as it will be sent, and hashed with the endpoint's identity,
   the unit's repeat and the request's position in the unit: the response cache's key;
3. a cached reply answers at no cost, and so does a twin's: a request identical to one in
   flight in the same worker waits for it and reads its reply from the cache
   (pipeline/sweep/in_flight.py). A cached reply's `cost_usd` is priced again from its stored
   usage at this configuration's prices (an upper estimate from the body's bytes where it had
   none), so a price change is never hidden by the cache (issue 32); its `billed_usd` stays;
4. otherwise the run's budget must admit the request (pipeline/sweep/budget.py), or the unit
   stops here (`BudgetStop`: not run, `budget_exhausted`);
5. the request is sent; the provider refusing the account (`ProviderCreditsExhausted`, a 402)
   stops the unit like the budget does (`ProviderCreditsStop`: not run, `provider_credits`);
6. a reply without complete usage is priced at an upper estimate (`usage.upper_usage`), never
   $0; the reply is stored in the cache before the study sees it, with the configuration and
   model it answers for (`cache list` sums what each configuration's entries cost), then billed
   and recorded: what it spent is the provider's own charge where the reply states one, else
   that cost.

Records: one per HTTP request actually sent (`attempt_in_request` 0, 1, ... for a request the
client retried), one per cache hit, rendering and token count. An answer's record names its
cached reply (`key_hash`); with no cache (`cache.scope=off`) it holds the reply text itself.

Everything every study shares is counted here once: the bill (pipeline/sweep/bill.py), the
live display's counts, and one record per request for the engine's `requests` table
(docs/tables.md). A study never fills these in. The protocol stays pure: it sees a ChatClient.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Protocol

from pipeline.chat.errors import ProviderCreditsExhausted
from pipeline.chat.messages import (
    ChatClient,
    ChatRequest,
    ChatResponse,
    Usage,
    counter_of,
    offers,
    renderer_of,
)
from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.client import EncodedRequest, estimate_tokens
from pipeline.endpoints.exchange import SentAttempt
from pipeline.endpoints.template import template_body
from pipeline.endpoints.usage import cost_usd, upper_usage
from pipeline.endpoints.wire import build_body, encode_body
from pipeline.study import Record, UnitSpec
from pipeline.sweep.bill import BillCounter, spend_of
from pipeline.sweep.budget import BudgetGate, BudgetStop, ProviderCreditsStop
from pipeline.sweep.in_flight import InFlight
from pipeline.sweep.progress import LiveCounts
from pipeline.sweep.response_cache import Origin, ResponseCache

TemplateCall = Callable[[ChatRequest], Awaitable[str]]


class EncodingClient(Protocol):
    """A client that serialises a body once and sends those bytes (OpenAIChatClient); told
    apart with `offers`, since a runtime protocol check costs a walk of its attributes."""

    def encode(self, request: ChatRequest) -> EncodedRequest: ...

    async def send(
        self, encoded: EncodedRequest, attempts: list[SentAttempt] | None = None
    ) -> ChatResponse: ...


class EncodingRenderer(Protocol):
    """A renderer that serialises a template body once (as EncodingClient; `offers`)."""

    def encode_template(self, request: ChatRequest) -> bytes: ...

    async def send_template(self, payload: bytes) -> str: ...


def endpoint_identity(endpoint: EndpointConfig, served_by: str | None = None) -> bytes:
    """What makes two endpoints the same server for the cache: URL, model, pin, quantization.

    A server the engine starts itself (sim, local) gets a new port each session, so its URL
    says nothing: `served_by` names it instead (the panel kind, the configuration and what
    the server is started from), and a resume finds its replies again.
    """
    where = endpoint.base_url.rstrip("/") if served_by is None else f"served:{served_by}"
    parts = (where, endpoint.model, endpoint.provider or "", endpoint.quantization or "")
    return "\n".join(parts).encode()


def cache_key(identity: bytes, kind: bytes, payload: bytes, repeat: int, position: int) -> str:
    """SHA-256 (first 128 bits) of the identity, the request kind, the body as sent, repeat and
    position. SHA-256 because CPUs of this kind hash it in hardware: it measured as fast as
    SHA-1 and faster than BLAKE2b here, on bytes the client serialised once anyway."""
    digest = hashlib.sha256(identity)
    digest.update(b"\0" + kind + b"\0")
    digest.update(payload)
    digest.update(b"\0%d:%d" % (repeat, position))
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class BoundaryContext:
    """What a worker knows once for every attempt it runs."""

    endpoint: EndpointConfig
    identity: bytes
    step_purpose: str
    session: int
    cache: ResponseCache | None
    gate: BudgetGate | None
    twins: InFlight = field(default_factory=InFlight)  # identical chats in flight, sent once


class RequestBoundary:
    """One attempt's client: cap, cache, budget, bill and record (see the module doc)."""

    apply_template: TemplateCall  # set per instance, only when the inner client renders
    count_tokens: Callable[[str], Awaitable[int]]  # only when the inner client counts tokens

    def __init__(
        self,
        inner: ChatClient,
        context: BoundaryContext,
        spec: UnitSpec,
        counts: LiveCounts | None = None,
    ) -> None:
        self.inner = inner
        self.context = context
        self.spec = spec
        self.counts = counts if counts is not None else LiveCounts()
        self.bill = BillCounter()
        self.records: list[Record] = []
        self._position = 0
        self._origin = Origin(spec.config_id, context.endpoint.model)
        self._encoding = offers(inner, "encode", "send")
        if renderer_of(inner) is not None:
            self.apply_template = self._template
        if counter_of(inner) is not None:
            self.count_tokens = self._tokens

    # -- chat -------------------------------------------------------------------------------
    async def complete(self, request: ChatRequest) -> ChatResponse:
        ctx = self.context
        cap = ctx.endpoint.max_output_tokens
        if cap is not None and request.max_tokens > cap:
            request = replace(request, max_tokens=cap)
        encoded: EncodedRequest | None = None
        payload = b""
        if self._encoding:
            encoded = self.inner.encode(request)  # type: ignore[attr-defined]
            payload = encoded.payload
        elif ctx.cache is not None:
            payload = encode_body(build_body(ctx.endpoint, request)[0])
        slot = self._slot(request.purpose, "chat", payload)
        if ctx.cache is None:
            return await self._fetch(request, encoded, payload, slot)
        cached = self._cached(slot.key)
        if cached is None and await ctx.twins.wait_for_twin(slot.key):
            cached = self._cached(slot.key)  # the twin's reply, unless it failed
        if cached is not None:
            cached = self._priced_now(request, payload, cached)
            self._answered(slot, cached, hit=True, latency=0.0)
            return cached
        began = ctx.twins.begin(slot.key)
        try:
            return await self._fetch(request, encoded, payload, slot)
        finally:
            ctx.twins.end(slot.key, began)

    def _cached(self, key: str) -> ChatResponse | None:
        assert self.context.cache is not None
        entry = self.context.cache.get(key)
        return reply_from_json(entry.reply) if entry is not None else None

    async def _fetch(
        self,
        request: ChatRequest,
        encoded: EncodedRequest | None,
        payload: bytes,
        slot: _Slot,
    ) -> ChatResponse:
        """Admit, send, price, store and record one request the cache could not answer."""
        ctx = self.context
        reserved = await self._admit(request)
        sent: list[SentAttempt] = []
        started = time.perf_counter()
        try:
            if encoded is not None:
                response: ChatResponse = await self.inner.send(encoded, sent)  # type: ignore[attr-defined]
            else:
                response = await self.inner.complete(request)
        except BaseException as exc:
            self._failed(slot, exc, started, reserved, sent)
            if isinstance(exc, ProviderCreditsExhausted):
                raise ProviderCreditsStop(exc.provider_message) from exc
            raise
        if not response.usage.reported:
            response = replace(response, cost_usd=self._upper_cost(request, payload, response))
        if ctx.cache is not None:
            ctx.cache.put(slot.key, "chat", reply_to_json(response), origin=self._origin)
        if ctx.gate is not None:
            ctx.gate.settle(reserved, spend_of(response))
        self._retried(slot, sent[:-1])
        latency = sent[-1].latency_s if sent else time.perf_counter() - started
        self._answered(slot, response, hit=False, latency=latency, attempt=max(0, len(sent) - 1))
        return response

    def _priced_now(
        self, request: ChatRequest, payload: bytes, cached: ChatResponse
    ) -> ChatResponse:
        """A cached reply's `cost_usd` at the current prices: the run that paid for it may have
        had others (a shared cache, a panel's prices updated). Its stored usage is priced as
        a sent reply's would be; what the provider billed then stays in `billed_usd`."""
        if cached.usage.reported:
            cost = cost_usd(cached.usage, self.context.endpoint.prices)
        else:
            cost = self._upper_cost(request, payload, cached)
        return replace(cached, cost_usd=cost)

    def _upper_cost(self, request: ChatRequest, payload: bytes, response: ChatResponse) -> float:
        """A reply without (complete) usage is billed at an upper estimate, never $0."""
        if not payload:
            payload = encode_body(build_body(self.context.endpoint, request)[0])
        usage = upper_usage(
            response.usage,
            len(payload),
            response.text,
            request.max_tokens,
            hit_limit=response.finish_reason == "length",
        )
        return cost_usd(usage, self.context.endpoint.prices)

    # -- template renderings ----------------------------------------------------------------
    async def _template(self, request: ChatRequest) -> str:
        ctx = self.context
        renderer = renderer_of(self.inner)
        assert renderer is not None  # only installed when the inner client renders
        encoding = offers(self.inner, "encode_template", "send_template")
        payload = b""
        if encoding:
            payload = self.inner.encode_template(request)  # type: ignore[attr-defined]
        elif ctx.cache is not None:
            payload = encode_body(template_body(ctx.endpoint, request))
        slot = self._slot(request.purpose, "template", payload)
        if ctx.cache is not None:
            entry = ctx.cache.get(slot.key)
            prompt = entry.reply.get("prompt") if entry is not None else None
            if isinstance(prompt, str):
                self._rendered(slot, hit=True, latency=0.0)
                return prompt
        reserved = await self._admit(None)
        started = time.perf_counter()
        try:
            if encoding:
                prompt = await self.inner.send_template(payload)  # type: ignore[attr-defined]
            else:
                prompt = await renderer.apply_template(request)
        except BaseException as exc:
            self._failed(slot, exc, started, reserved)
            raise
        if ctx.cache is not None:
            ctx.cache.put(slot.key, "template", {"prompt": prompt}, origin=self._origin)
        if ctx.gate is not None:
            ctx.gate.settle(reserved, 0.0)
        self._rendered(slot, hit=False, latency=time.perf_counter() - started, prompt=str(prompt))
        return str(prompt)

    # -- token counts (llama-server /tokenize; issue 21) ------------------------------------
    async def _tokens(self, text: str) -> int:
        """A token count is a request like a rendering: admitted, counted, recorded; free."""
        counter = counter_of(self.inner)
        assert counter is not None  # only installed when the inner client counts tokens
        slot = self._slot("tokenize", "tokenize", text.encode("utf-8"))
        reserved = await self._admit(None)
        started = time.perf_counter()
        try:
            tokens = await counter.count_tokens(text)
        except BaseException as exc:
            self._failed(slot, exc, started, reserved)
            raise
        if self.context.gate is not None:
            self.context.gate.settle(reserved, 0.0)
        self._rendered(slot, hit=False, latency=time.perf_counter() - started)
        return tokens

    # -- counting ---------------------------------------------------------------------------
    def _slot(self, purpose: str, kind: str, payload: bytes) -> _Slot:
        """The request's position in the unit and, with a cache, its key."""
        position = self._position
        self._position += 1
        self.bill.requests += 1
        self.counts.sent += 1
        key = ""
        if self.context.cache is not None:
            identity = self.context.identity
            key = cache_key(identity, kind.encode(), payload, self.spec.repeat, position)
        return _Slot(purpose, kind, position, key)

    async def _admit(self, request: ChatRequest | None) -> float:
        gate = self.context.gate
        if gate is None:
            self.bill.paid_requests += 1
            return 0.0
        reserved = await gate.admit(self._worst_case(request))
        if reserved is None:
            self.bill.requests -= 1  # never sent: not a request of the unit
            self.counts.sent -= 1
            self._position -= 1
            raise BudgetStop
        self.bill.paid_requests += 1
        return reserved

    def _worst_case(self, request: ChatRequest | None) -> float:
        """The request's cost if its whole prompt estimate and `max_tokens` were billed."""
        prices = self.context.endpoint.prices
        if request is None or not (prices.input_per_mtok or prices.output_per_mtok):
            return 0.0
        prompt = estimate_tokens(request) - request.max_tokens
        cost = prompt * prices.input_per_mtok + request.max_tokens * prices.output_per_mtok
        return cost / 1_000_000

    def _answered(
        self, slot: _Slot, response: ChatResponse, *, hit: bool, latency: float, attempt: int = 0
    ) -> None:
        step = slot.purpose == self.context.step_purpose
        self.bill.answer(response, hit=hit, step=step)
        counts = self.counts
        counts.completed += 1
        counts.steps += step
        usage = response.usage
        counts.tokens += (usage.prompt_tokens or 0) + (usage.completion_tokens or 0)
        counts.cost_usd += 0.0 if hit else spend_of(response)
        record = self._record(slot, latency=latency, hit=hit, attempt=attempt)
        record["prompt_tokens"] = usage.prompt_tokens
        record["completion_tokens"] = usage.completion_tokens
        record["cached_tokens"] = usage.cached_tokens
        record["cache_write_tokens"] = usage.cache_write_tokens
        record["reasoning_tokens"] = usage.reasoning_tokens
        record["usage_reported"] = usage.reported
        record["cache_overlap"] = usage.overlapping
        record["cost_usd"] = response.cost_usd
        record["billed_usd"] = None if hit else response.billed_usd
        record["spent_usd"] = 0.0 if hit else spend_of(response)
        record["reply_text"] = self._uncached(response.text)
        self.records.append(record)

    def _rendered(
        self, slot: _Slot, *, hit: bool, latency: float, prompt: str | None = None
    ) -> None:
        self.counts.completed += 1
        if hit:
            self.bill.cache_hits += 1
        record = self._record(slot, latency=latency, hit=hit)
        record["reply_text"] = self._uncached(prompt)
        self.records.append(record)

    def _uncached(self, reply: str | None) -> str | None:
        """A reply's text for the record when no cache keeps it: with a cache, `key_hash`
        finds the stored reply and the record does not hold its bytes twice."""
        return reply if self.context.cache is None else None

    def _retried(self, slot: _Slot, attempts: list[SentAttempt]) -> None:
        """The attempts a request needed before its answer: each was sent, none was paid."""
        for index, sent in enumerate(attempts):
            self.records.append(self._attempt_record(slot, sent, index))

    def _failed(
        self,
        slot: _Slot,
        exc: BaseException,
        started: float,
        reserved: float,
        attempts: list[SentAttempt] | None = None,
    ) -> None:
        self.counts.failed += 1
        if self.context.gate is not None:
            self.context.gate.settle(reserved, 0.0)  # a failed request is not charged
        if attempts:
            for index, sent in enumerate(attempts):
                self.records.append(self._attempt_record(slot, sent, index))
            return
        status = getattr(exc, "status", None)
        error = str(getattr(exc, "kind", None) or type(exc).__name__)
        latency = time.perf_counter() - started
        record = self._record(slot, latency=latency, hit=False, status=status, error=error)
        record["error_detail"] = str(exc) or None
        self.records.append(record)

    def _attempt_record(self, slot: _Slot, sent: SentAttempt, index: int) -> Record:
        record = self._record(
            slot,
            latency=sent.latency_s,
            hit=False,
            status=sent.status,
            error=sent.error,
            attempt=index,
        )
        record["server_wait_s"] = sent.wait_s
        record["error_detail"] = sent.detail
        return record

    def _record(
        self,
        slot: _Slot,
        *,
        latency: float,
        hit: bool,
        status: object = 200,
        error: str | None = None,
        attempt: int = 0,
    ) -> Record:
        return {
            "run_id": self.spec.run_id,
            "row_id": self.spec.row_id,
            "session": self.context.session,
            "position": slot.position,
            "attempt_in_request": attempt,
            "kind": slot.kind,
            "purpose": slot.purpose,
            "config_id": self.spec.config_id,
            "status": status if isinstance(status, int) else None,
            "error": error,
            "error_detail": None,
            "server_wait_s": None,
            "latency_s": latency,
            "prompt_tokens": None,
            "completion_tokens": None,
            "cached_tokens": None,
            "cache_write_tokens": None,
            "reasoning_tokens": None,
            "usage_reported": None,
            "cache_overlap": None,
            "cost_usd": 0.0,
            "billed_usd": None,
            "spent_usd": 0.0,
            "cache_hit": hit,
            "key_hash": slot.key or None,
            "reply_text": None,
        }


class _Slot(NamedTuple):
    purpose: str
    kind: str  # chat | template | tokenize
    position: int
    key: str  # "" without a cache


def reply_to_json(response: ChatResponse) -> dict[str, Any]:
    """A reply as the cache stores it: every field, so a hit is the same reply."""
    usage = response.usage
    return {
        "text": response.text,
        "finish_reason": response.finish_reason,
        "usage": [
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cached_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens,
        ],
        "refusal": response.refusal,
        "cost_usd": response.cost_usd,
        "schema_adapted": response.schema_adapted,
        "simulated": response.simulated,
        "cache_discount_usd": response.cache_discount_usd,
        "billed_usd": response.billed_usd,
        "sent_sampling": dict(response.sent_sampling),
    }


def reply_from_json(data: dict[str, Any]) -> ChatResponse | None:
    """The stored reply, or None when the entry's reply is not one (a miss, never a crash)."""
    try:
        return _reply(data)
    except (KeyError, TypeError, ValueError):
        return None


def _reply(data: dict[str, Any]) -> ChatResponse:
    counts = data["usage"]
    prompt, completion, cached, written = counts[:4]
    reasoning = counts[4] if len(counts) > 4 else None  # entries from before issue 31 have 4
    if not isinstance(data["text"], str) or not isinstance(data["sent_sampling"], dict):
        raise TypeError("not a stored reply")
    return ChatResponse(
        text=data["text"],
        finish_reason=data["finish_reason"],
        usage=Usage(prompt, completion, cached, written, reasoning),
        refusal=data["refusal"],
        cost_usd=data["cost_usd"],
        schema_adapted=data["schema_adapted"],
        simulated=data["simulated"],
        cache_discount_usd=data["cache_discount_usd"],
        billed_usd=data.get("billed_usd"),
        sent_sampling=data["sent_sampling"],
    )
