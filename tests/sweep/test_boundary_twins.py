"""Identical requests in flight in one worker at once are sent once (sweep/in_flight.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pipeline.chat.errors import TransportFault
from pipeline.chat.messages import ChatMessage, ChatRequest, ChatResponse, Usage
from pipeline.sweep.boundary import BoundaryContext, RequestBoundary, endpoint_identity
from pipeline.sweep.response_cache import ResponseCache
from tests.endpoints.conftest import endpoint_config
from tests.sweep.boundary_kit import spec

REQUEST = ChatRequest(messages=(ChatMessage("user", "summarise the trace"),), max_tokens=50)


class SlowServer:
    """Replies after the test lets it; fails the first `failures` requests."""

    def __init__(self, failures: int = 0) -> None:
        self.sent = 0
        self.failures = failures
        self.go = asyncio.Event()

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.sent += 1
        await self.go.wait()
        if self.sent <= self.failures:
            raise TransportFault("connection reset")
        return ChatResponse("a summary", "stop", Usage(20, 3))


def shared_context(tmp_path: Path) -> BoundaryContext:
    ep = endpoint_config()
    return BoundaryContext(ep, endpoint_identity(ep), "fold", 0, ResponseCache(tmp_path), None)


async def two_units(server: SlowServer, tmp_path: Path) -> tuple[RequestBoundary, ...]:
    context = shared_context(tmp_path)
    units = (RequestBoundary(server, context, spec(arm="churn")),
             RequestBoundary(server, context, spec(arm="hybrid")))  # fmt: skip
    first = asyncio.create_task(units[0].complete(REQUEST))
    second = asyncio.create_task(units[1].complete(REQUEST))
    await asyncio.sleep(0.01)
    server.go.set()
    await asyncio.gather(first, second, return_exceptions=True)
    return units


async def test_a_twin_waits_for_the_request_in_flight_and_reads_its_reply(tmp_path: Path) -> None:
    server = SlowServer()
    first, second = await two_units(server, tmp_path)
    assert server.sent == 1
    assert [r["cache_hit"] for r in first.records] == [False]
    assert [r["cache_hit"] for r in second.records] == [True]
    assert second.records[0]["cost_usd"] == first.records[0]["cost_usd"]


async def test_a_twin_of_a_failed_request_sends_its_own(tmp_path: Path) -> None:
    server = SlowServer(failures=1)
    first, second = await two_units(server, tmp_path)
    assert server.sent == 2
    assert first.records[0]["error"] is not None
    assert [r["cache_hit"] for r in second.records] == [False]
    assert second.records[0]["status"] == 200


async def test_without_a_cache_twins_are_both_sent(tmp_path: Path) -> None:
    server = SlowServer()
    ep = endpoint_config()
    context = BoundaryContext(ep, endpoint_identity(ep), "fold", 0, None, None)
    units = [RequestBoundary(server, context, spec(arm=a)) for a in ("churn", "hybrid")]
    tasks = [asyncio.create_task(u.complete(REQUEST)) for u in units]
    await asyncio.sleep(0.01)
    server.go.set()
    await asyncio.gather(*tasks)
    assert server.sent == 2


async def test_requests_of_different_repeats_are_not_twins(tmp_path: Path) -> None:
    server = SlowServer()
    context = shared_context(tmp_path)
    units = [RequestBoundary(server, context, spec(repeat=r)) for r in (0, 1)]
    tasks = [asyncio.create_task(u.complete(REQUEST)) for u in units]
    await asyncio.sleep(0.01)
    server.go.set()
    await asyncio.gather(*tasks)
    assert server.sent == 2
