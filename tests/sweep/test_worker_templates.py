"""The worker's client wrappers: template renderings forwarded and counted, caps visible in
the sampling a reply reports as sent (a real client against a scripted loopback server)."""

from __future__ import annotations

import pytest

from pipeline.chat.errors import RequestRejected
from pipeline.chat.messages import ChatRequest, ChatResponse, renderer_of
from pipeline.sweep.progress import LiveCounts
from pipeline.sweep.worker import CappedClient, CountingClient
from tests.endpoints.conftest import (
    Reply,
    ScriptedServer,
    chat_reply,
    endpoint_config,
    open_test_client,
    user_request,
)


class ChatOnly:
    async def complete(self, request: ChatRequest) -> ChatResponse:
        return ChatResponse(text="x", finish_reason="stop")


class Renders(ChatOnly):
    def __init__(self, fail: bool = False) -> None:
        self.rendered: list[ChatRequest] = []
        self.fail = fail

    async def apply_template(self, request: ChatRequest) -> str:
        self.rendered.append(request)
        if self.fail:
            raise RequestRejected(404, "no route", reason="no_apply_template")
        return f"<prompt>{request.messages[0].content}</prompt>"


def test_wrappers_of_a_chat_only_client_are_not_renderers() -> None:
    capped = CappedClient(ChatOnly(), 8)
    assert renderer_of(capped) is None
    assert renderer_of(CountingClient(capped, LiveCounts())) is None


async def test_wrappers_forward_apply_template_and_count_it_as_sent() -> None:
    inner = Renders()
    counts = LiveCounts()
    client = CountingClient(CappedClient(inner, max_output_tokens=8), counts)
    renderer = renderer_of(client)
    assert renderer is not None
    request = user_request("The sky is", max_tokens=500)
    assert await renderer.apply_template(request) == "<prompt>The sky is</prompt>"
    assert inner.rendered == [request]  # a rendering generates nothing: no cap applied
    assert (counts.sent, counts.completed, counts.failed, counts.folds) == (1, 1, 0, 0)


async def test_a_failed_rendering_counts_as_sent_and_failed() -> None:
    counts = LiveCounts()
    renderer = renderer_of(CountingClient(CappedClient(Renders(fail=True)), counts))
    assert renderer is not None
    with pytest.raises(RequestRejected):
        await renderer.apply_template(user_request())
    assert (counts.sent, counts.completed, counts.failed) == (1, 0, 1)


async def test_the_endpoint_output_cap_shows_in_sent_sampling() -> None:
    routes = {"/v1/chat/completions": [chat_reply()]}
    async with (
        ScriptedServer(routes).running() as server,
        open_test_client(endpoint_config(server.base_url)) as http,
    ):
        capped = CappedClient(http, max_output_tokens=40)
        reply = await capped.complete(user_request(max_tokens=2400, top_p=0.9))
    assert server.received[0].body["max_tokens"] == 40
    assert reply.sent_sampling["max_tokens"] == 40
    assert reply.sent_sampling["top_p"] == 0.9


async def test_a_rendering_through_the_wrappers_reaches_the_server_root() -> None:
    routes = {"/apply-template": [Reply(json_body={"prompt": "rendered"})]}
    counts = LiveCounts()
    async with (
        ScriptedServer(routes).running() as server,
        open_test_client(endpoint_config(server.base_url)) as http,
    ):
        renderer = renderer_of(CountingClient(CappedClient(http, 8), counts))
        assert renderer is not None
        assert await renderer.apply_template(user_request()) == "rendered"
    assert [r.path for r in server.received] == ["/apply-template"]
    assert counts.sent == 1
