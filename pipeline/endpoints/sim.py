"""Simulated OpenAI-compatible endpoints: dry runs, load tests and chaos tests (+panel=sim).

One `SimServer` per simulated configuration (decision): each has its own base URL, model id
(its behaviour's `served_model`), rate-limit window and counters, exactly as a real panel has one
pinned endpoint per configuration, so per-endpoint rate limiting and fault accounting are
exercised as in a real sweep. A request naming another model gets 404 `model_not_found`.

Order of checks per chat request: auth (401) -> enforced rpm window (429 + Retry-After,
counted as a limit violation) -> body (400) and model (404) -> latency -> injected fault
(deterministic from seed and request index) -> the behaviour's reply. Memory is bounded:
counters are fixed-size and the rpm window keeps at most `rpm_limit` timestamps. The API key
is never logged, echoed or shown in a repr. `SimServerThread` runs servers on a private loop
in a background thread for synchronous callers; a sweep runs that thread in a child process
(`pipeline.endpoints.sim_process`), off the driver's GIL.

What the model answers is not the engine's business (decision): a study hands each server a
`pipeline.simulated.SimBehaviour`, its pseudo-model, and this module imports no study.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import math
import time
from collections import Counter, deque
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, fields
from types import MappingProxyType, TracebackType
from typing import Any, NamedTuple

from aiohttp import web

from pipeline.endpoints.loop_thread import LoopThread
from pipeline.endpoints.wire import SIMULATOR_FINGERPRINT
from pipeline.simulated import SimBehaviour, SimReply

__all__ = ["FAULT_KINDS", "SimCounters", "SimOptions", "SimServer", "SimServerThread"]

FAULT_KINDS: tuple[str, ...] = (
    "rate_limit_429",  # 429 with Retry-After, injected (not the enforced rpm limit)
    "http_500",
    "http_502",
    "http_503",
    "timeout",  # stalls stall_s (or until stop), then 504
    "connection_reset",  # transport aborted before any response byte
    "malformed_body",  # 200, application/json, body not JSON
    "truncated_body",  # 200, Content-Length larger than the bytes sent
    "error_body",  # 200 whose JSON body is {"error": {...}}
)
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class SimOptions:
    """How one simulated endpoint behaves as infrastructure."""

    latency_s: float = 0.0  # added before every chat reply (and before injected faults)
    fault_rate: float = 0.0  # probability an admitted request gets an injected fault
    fault_mix: tuple[str, ...] = FAULT_KINDS  # kinds drawn from, uniformly
    stall_s: float = 30.0  # how long a `timeout` fault stalls; stop() cuts it short
    retry_after_s: float = 1.0  # Retry-After of injected 429s
    rpm_limit: float | None = None  # enforced requests per minute; None = unlimited
    rpm_window_s: float = 60.0  # the sliding window the rpm limit is counted over
    model_faults: bool = False  # empty / non-conforming / refusal replies (model behaviour)
    model_fault_rate: float = 0.1  # their rate when enabled
    api_key: str | None = field(default=None, repr=False)  # require `Bearer <key>` when set
    seed: int = 7  # seeds fault choice and the behaviour's replies
    host: str = "127.0.0.1"  # loopback only
    port: int = 0  # 0 = a free port
    max_body_bytes: int = 16 * 1024 * 1024
    # count every answered body by its digest (tests of exactly-once delivery across
    # sessions: `SimServer.served_bodies`); off by default, as it grows with the requests
    count_bodies: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.fault_rate <= 1.0 or not 0.0 <= self.model_fault_rate <= 1.0:
            raise ValueError("fault_rate and model_fault_rate must lie in [0, 1]")
        unknown = sorted(set(self.fault_mix) - set(FAULT_KINDS))
        if unknown or not self.fault_mix:
            raise ValueError(f"fault_mix must be non-empty kinds of {FAULT_KINDS}; got {unknown}")
        if self.rpm_limit is not None and self.rpm_limit <= 0:
            raise ValueError("rpm_limit must be positive (or None for no limit)")
        if self.host not in _LOOPBACK:
            raise ValueError(f"simulated endpoints bind to loopback only, not {self.host!r}")


@dataclass(frozen=True)
class SimCounters:
    """A snapshot of one server's counters (chat requests only, except auth_failures)."""

    requests: int
    served_ok: int  # 200 with a well-formed completion (model faults included)
    faults: Mapping[str, int]  # injected infrastructure faults by kind
    model_faults: Mapping[str, int]  # model-behaviour faults by kind
    rate_limited_429: int  # enforced rpm-limit rejections (limit violations by the client)
    auth_failures: int
    bad_requests: int  # 400 / 404: not JSON, no messages, unknown model, streaming
    prompt_tokens: int
    completion_tokens: int

    def as_dict(self) -> dict[str, Any]:
        """Plain, JSON-ready values (the fault maps as dicts)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: dict(v) if isinstance(v, Mapping) else v for k, v in out.items()}


class SlidingWindow:
    """At most `limit` admissions per `window_s`; keeps at most `limit` timestamps."""

    def __init__(self, rpm: float, window_s: float, clock: Callable[[], float]) -> None:
        self._cap = max(1, int(rpm))
        self._window = window_s * self._cap / rpm  # rpm < 1 stretches the window
        self._clock = clock
        self._stamps: deque[float] = deque(maxlen=self._cap)

    def admit(self) -> float | None:
        """None if admitted (and recorded); else seconds until a slot frees."""
        now = self._clock()
        while self._stamps and now - self._stamps[0] >= self._window:
            self._stamps.popleft()
        if len(self._stamps) < self._cap:
            self._stamps.append(now)
            return None
        return self._window - (now - self._stamps[0])


class SimServer:
    """One simulated served configuration on 127.0.0.1, answering with `behaviour`."""

    def __init__(
        self,
        behaviour: SimBehaviour,
        options: SimOptions | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.behaviour = behaviour
        self.options = options or SimOptions()
        self._window = (
            SlidingWindow(self.options.rpm_limit, self.options.rpm_window_s, clock)
            if self.options.rpm_limit is not None
            else None
        )
        self._counts: Counter[str] = Counter()
        self._faults: Counter[str] = Counter()
        self._model_faults: Counter[str] = Counter()
        self._bodies: Counter[str] = Counter()
        self._abandoned: Counter[str] = Counter()
        self._open = asyncio.Event()  # cleared by `hold`: replies wait until `release`
        self._open.set()
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        self.base_url = ""

    @property
    def model(self) -> str:
        return self.behaviour.served_model

    async def start(self) -> str:
        """Bind and serve; returns the base URL, e.g. http://127.0.0.1:PORT/v1."""
        app = web.Application(client_max_size=self.options.max_body_bytes)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.options.host, self.options.port)
        await site.start()
        port = self._runner.addresses[0][1]
        host = f"[{self.options.host}]" if ":" in self.options.host else self.options.host
        self.base_url = f"http://{host}:{port}/v1"
        return self.base_url

    async def stop(self) -> None:
        """Stop serving; stalled `timeout` faults and held replies end at once."""
        self._stopping.set()
        self._open.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def counters(self) -> SimCounters:
        c = self._counts
        return SimCounters(
            requests=c["requests"],
            served_ok=c["served_ok"],
            faults=MappingProxyType(dict(self._faults)),
            model_faults=MappingProxyType(dict(self._model_faults)),
            rate_limited_429=c["rate_limited_429"],
            auth_failures=c["auth_failures"],
            bad_requests=c["bad_requests"],
            prompt_tokens=c["prompt_tokens"],
            completion_tokens=c["completion_tokens"],
        )

    def served_bodies(self) -> dict[str, int]:
        """Answered chat bodies by SHA-256 of their canonical JSON (with `count_bodies`)."""
        return dict(self._bodies)

    def abandoned_bodies(self) -> dict[str, int]:
        """Bodies whose client had gone before the reply was ready (with `count_bodies`): a
        provider would have billed them, but no client could have stored the reply."""
        return dict(self._abandoned)

    async def hold(self) -> None:
        """Replies not yet sent wait until `release`: a kill then finds no reply on the wire."""
        self._open.clear()

    async def release(self) -> None:
        self._open.set()

    def _authorized(self, request: web.Request) -> bool:
        key = self.options.api_key
        if key is None:
            return True
        sent = request.headers.get("Authorization", "")
        return hmac.compare_digest(sent.encode(), f"Bearer {key}".encode())

    async def _models(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            self._counts["auth_failures"] += 1
            return _error(401, "invalid API key", "invalid_api_key")
        model = {"id": self.model, "object": "model", "created": 0, "owned_by": "foldsweep-sim"}
        return web.json_response({"object": "list", "data": [model]})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        index = self._counts["requests"]
        self._counts["requests"] += 1
        if not self._authorized(request):
            self._counts["auth_failures"] += 1
            return _error(401, "invalid API key", "invalid_api_key")
        wait = self._window.admit() if self._window is not None else None
        if wait is not None:
            self._counts["rate_limited_429"] += 1
            return _error(429, "rate limit exceeded", "rate_limited", retry_after=wait)
        body = await _read_body(request, self.model)
        if isinstance(body, _Rejection):
            self._counts["bad_requests"] += 1
            return _error(body.status, body.message, body.code)
        if self.options.latency_s > 0:
            await asyncio.sleep(self.options.latency_s)
        await self._open.wait()
        fault = self._fault_for(index)
        if fault is not None:
            self._faults[fault] += 1
            return await self._inject(fault, request)
        rate = self.options.model_fault_rate if self.options.model_faults else 0.0
        answer = self.behaviour.reply(body, self.options.seed, model_fault_rate=rate)
        if answer.model_fault is not None:
            self._model_faults[answer.model_fault] += 1
        self._counts["served_ok"] += 1
        if self.options.count_bodies:
            digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
            gone = request.transport is None or request.transport.is_closing()
            (self._abandoned if gone else self._bodies)[digest] += 1
        self._counts["prompt_tokens"] += answer.prompt_tokens
        self._counts["completion_tokens"] += answer.completion_tokens
        return web.json_response(_completion(self.model, index, answer))

    def _fault_for(self, index: int) -> str | None:
        """Deterministic from (seed, model, request index): a rerun injects the same faults,
        and different configurations fail on different requests."""
        if self.options.fault_rate <= 0:
            return None
        key = (self.options.seed, self.model, index)
        if _unit(*key, "fault") >= self.options.fault_rate:
            return None
        mix = self.options.fault_mix
        return mix[int(_unit(*key, "kind") * len(mix))]

    async def _inject(self, kind: str, request: web.Request) -> web.StreamResponse:
        if kind == "timeout":
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=self.options.stall_s)
        elif kind == "connection_reset" and request.transport is not None:
            request.transport.abort()  # the canned response below never reaches the client
        elif kind == "truncated_body":
            return await _truncated(request)
        return _canned_fault(kind, self.options.retry_after_s)


def _canned_fault(kind: str, retry_after_s: float) -> web.Response:
    """The response of a fault that is a single canned reply."""
    if kind == "rate_limit_429":
        return _error(429, "simulated rate limit", "rate_limited", retry_after_s)
    if kind == "timeout":
        return _error(504, "simulated gateway timeout", "timeout")
    if kind == "malformed_body":
        return web.Response(text="<html>bad gateway</html>", content_type="application/json")
    if kind == "error_body":
        error = {"message": "simulated upstream provider error", "type": "upstream_error"}
        return web.json_response({"error": {**error, "code": 502}})
    status = int(kind[5:]) if kind.startswith("http_") else 500  # connection_reset: unseen
    return _error(status, "simulated server error", "server_error")


def _unit(*parts: object) -> float:
    raw = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(raw[:8], "big") / 2**64


class _Rejection(NamedTuple):
    status: int
    message: str
    code: str = "invalid_request_error"


async def _read_body(request: web.Request, model: str) -> dict[str, Any] | _Rejection:
    """The request body, or why it is rejected (a deterministic 4xx, never a fault)."""
    try:
        body = json.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        return _Rejection(400, "request body is not JSON")
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return _Rejection(400, "request body needs a messages list")
    if body.get("stream"):
        return _Rejection(400, "streaming is not supported by the simulated endpoint")
    if body.get("model") != model:
        message = f"model {body.get('model')!r} is not served here; this endpoint serves {model}"
        return _Rejection(404, message, "model_not_found")
    return body


def _error(status: int, message: str, code: str, retry_after: float | None = None) -> web.Response:
    headers = {} if retry_after is None else {"Retry-After": str(max(1, math.ceil(retry_after)))}
    payload = {"error": {"message": message, "type": code, "code": code}}
    return web.json_response(payload, status=status, headers=headers)


def _completion(model: str, index: int, answer: SimReply) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": answer.text}
    if answer.refusal is not None:
        message["refusal"] = answer.refusal
    usage = {
        "prompt_tokens": answer.prompt_tokens,
        "completion_tokens": answer.completion_tokens,
        "total_tokens": answer.prompt_tokens + answer.completion_tokens,
    }
    return {
        "id": f"chatcmpl-sim-{index}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": SIMULATOR_FINGERPRINT,
        "choices": [{"index": 0, "message": message, "finish_reason": answer.finish_reason}],
        "usage": usage,
    }


async def _truncated(request: web.Request) -> web.StreamResponse:
    """Promise more bytes than are sent, then close: the client sees a short body."""
    full = json.dumps({"object": "chat.completion", "choices": [{"index": 0}]}).encode()
    response = web.StreamResponse(headers={"Content-Type": "application/json"})
    response.content_length = len(full) * 2
    await response.prepare(request)
    await response.write(full[: len(full) // 2])
    if request.transport is not None:
        request.transport.close()
    return response


async def _snapshot(server: SimServer) -> SimCounters:
    return server.counters()


class SimServerThread:
    """Runs SimServers on a private event loop in a daemon thread, for synchronous callers."""

    def __init__(self, servers: Sequence[SimServer]) -> None:
        self.servers = tuple(servers)
        self._thread: LoopThread | None = None
        self.base_urls: tuple[str, ...] = ()

    def start(self, timeout_s: float = 30.0) -> tuple[str, ...]:
        """Start every server; returns their base URLs in order."""
        thread = self._thread = LoopThread("sim-servers")
        try:
            self.base_urls = tuple(thread.call(s.start(), timeout_s) for s in self.servers)
        except BaseException:
            self.stop(timeout_s)  # no half-started thread left behind
            raise
        return self.base_urls

    def stop(self, timeout_s: float = 30.0) -> None:
        """Stop every server and the loop; idempotent."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        for server in self.servers:
            thread.call(server.stop(), timeout_s)
        thread.close(timeout_s)

    def hold(self, timeout_s: float = 30.0) -> None:
        """Every server holds its unsent replies (`SimServer.hold`)."""
        self._on_loop([s.hold for s in self.servers], timeout_s)

    def release(self, timeout_s: float = 30.0) -> None:
        self._on_loop([s.release for s in self.servers], timeout_s)

    def _on_loop(
        self, calls: Sequence[Callable[[], Coroutine[Any, Any, None]]], timeout_s: float
    ) -> None:
        if self._thread is None:
            raise RuntimeError("the servers are not running")
        for call in calls:
            self._thread.call(call(), timeout_s)

    def counters(self, timeout_s: float = 30.0) -> tuple[SimCounters, ...]:
        """Snapshots taken on the servers' own loop, so none is torn mid-request."""
        if self._thread is None:
            return tuple(server.counters() for server in self.servers)
        thread = self._thread
        return tuple(thread.call(_snapshot(server), timeout_s) for server in self.servers)

    def __enter__(self) -> SimServerThread:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
