"""In-process scripted OpenAI-compatible servers on 127.0.0.1 for the endpoint tests.

`ScriptedServer` answers each request with the next scripted `Reply` for its route and records
what it received, so a test states the wire exchange it expects. The server is started and
stopped by the test (async context manager); nothing leaves loopback.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web

from pipeline.chat.messages import ChatMessage, ChatRequest
from pipeline.config.schema import EndpointConfig, Limits, RetryConfig, TimeoutConfig
from pipeline.endpoints.client import DEFAULT_MAX_BODY_BYTES, OpenAIChatClient, make_session
from pipeline.endpoints.limits import EndpointLimiter
from pipeline.endpoints.retry import build_retry


@dataclass(frozen=True)
class Reply:
    """One scripted answer. `action`: None (normal), "disconnect" (close before any status
    line) or "truncate" (declare a long body, send part of it, close)."""

    status: int = 200
    json_body: Any = None
    raw: bytes | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    action: str | None = None


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any


def chat_reply(
    text: str | None = "OK",
    *,
    finish: str = "stop",
    usage: Mapping[str, Any] | None = None,
    refusal: str | None = None,
) -> Reply:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if refusal is not None:
        message["refusal"] = refusal
    body: dict[str, Any] = {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = dict(usage)
    return Reply(json_body=body)


class ScriptedServer:
    def __init__(self, routes: Mapping[str, Sequence[Reply]]) -> None:
        self._scripts = {path: deque(replies) for path, replies in routes.items()}
        self.received: list[Received] = []
        self.port = 0
        self.in_flight = 0
        self.peak_in_flight = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def requests_to(self, path: str) -> list[Received]:
        return [r for r in self.received if r.path == path]

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw) if raw else None
        self.received.append(Received(request.method, request.path, dict(request.headers), body))
        script = self._scripts.get(request.path)
        if not script:
            return web.json_response({"error": f"unscripted {request.path}"}, status=599)
        reply = script.popleft()
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            if reply.delay_s:
                await asyncio.sleep(reply.delay_s)
        finally:
            self.in_flight -= 1
        if reply.action == "disconnect":
            assert request.transport is not None
            request.transport.close()
            raise asyncio.CancelledError  # nothing more to send on a closed transport
        if reply.action == "truncate":
            response = web.StreamResponse(status=200, headers={"Content-Length": "4096"})
            await response.prepare(request)
            await response.write(b'{"choices": [{"mess')
            assert request.transport is not None
            request.transport.close()
            raise asyncio.CancelledError
        payload = reply.raw if reply.raw is not None else json.dumps(reply.json_body).encode()
        return web.Response(
            status=reply.status,
            body=payload,
            headers={"Content-Type": "application/json", **reply.headers},
        )

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ScriptedServer]:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        runner = web.AppRunner(app, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = runner.addresses[0][1]
        try:
            yield self
        finally:
            await runner.cleanup()


@pytest.fixture
def serve() -> Callable[..., Any]:
    """`async with serve(chat=[...], models=[...]) as server:` starts a scripted server."""

    def start(chat: Sequence[Reply] = (), models: Sequence[Reply] = ()) -> Any:
        return ScriptedServer({"/v1/chat/completions": chat, "/v1/models": models}).running()

    return start


def endpoint_config(base_url: str = "http://127.0.0.1:1/v1", **overrides: Any) -> EndpointConfig:
    values: dict[str, Any] = {
        "config_id": "cfg-a",
        "model": "test-model",
        "family": "test",
        "base_url": base_url,
        "limits": Limits(concurrency=4),
    }
    values.update(overrides)
    return EndpointConfig(**values)


def quick_retry(attempts: int = 3) -> RetryConfig:
    return RetryConfig(request_attempts=attempts, initial_wait_s=0.5, max_wait_s=4.0)


def user_request(text: str = "hello", **overrides: Any) -> ChatRequest:
    values: dict[str, Any] = {"messages": (ChatMessage("user", text),), "max_tokens": 16}
    values.update(overrides)
    return ChatRequest(**values)


async def peak_in_flight(admit: Callable[[], Any], requests: int = 20) -> int:
    """The most of `requests` concurrent holders of `admit()` (an async context) at one time."""
    in_flight = peak = 0

    async def request() -> None:
        nonlocal in_flight, peak
        async with admit():
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0)
            in_flight -= 1

    await asyncio.gather(*(request() for _ in range(requests)))
    return peak


class FakeClock:
    """Monotonic time that only moves when someone sleeps (limiter tests)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


class RecordingSleep:
    """An injected sleep that records waits and returns at once (no real sleeping)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


@asynccontextmanager
async def open_test_client(
    endpoint: EndpointConfig,
    *,
    attempts: int = 3,
    sleep: RecordingSleep | None = None,
    api_key: str | None = None,
    limiter: EndpointLimiter | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    request_s: float = 5.0,
    send_seed: bool = True,
) -> AsyncIterator[OpenAIChatClient]:
    """A real OpenAIChatClient with a recording (non-sleeping) retry policy."""
    session = make_session(TimeoutConfig(connect_s=2.0, request_s=request_s))
    try:
        yield OpenAIChatClient(
            endpoint,
            session,
            limiter if limiter is not None else EndpointLimiter(endpoint.limits),
            build_retry(quick_retry(attempts), sleep=sleep or RecordingSleep()),
            api_key=api_key,
            send_seed=send_seed,
            max_body_bytes=max_body_bytes,
        )
    finally:
        await session.close()
