"""The request boundary: cap, bill, records and template renderings, once per request."""

from __future__ import annotations

import pytest

from pipeline.chat.errors import RequestRejected, TimeoutFault
from pipeline.chat.messages import (
    ChatRequest,
    ChatResponse,
    TemplateRenderer,
    TokenCounter,
    offers,
    renderer_of,
)
from tests.endpoints.conftest import (
    Reply,
    ScriptedServer,
    chat_reply,
    endpoint_config,
    open_test_client,
    user_request,
)
from tests.sweep.boundary_kit import Priced, Renders, boundary


async def test_the_bill_counts_every_request_once() -> None:
    b = boundary(Priced(cost=0.25, tokens=10))
    await b.complete(user_request(purpose="fold"))
    await b.complete(user_request(purpose="recall"))
    bill = b.bill.bill()
    assert (bill.requests, bill.prompt_tokens, bill.completion_tokens) == (2, 20, 20)
    assert (bill.cached_tokens, bill.cost_usd, bill.spent_usd, bill.steps) == (4, 0.5, 0.5, 1)
    assert [r["position"] for r in b.records] == [0, 1]
    assert [r["purpose"] for r in b.records] == ["fold", "recall"]
    assert all(r["status"] == 200 and r["cost_usd"] == 0.25 for r in b.records)


async def test_tokens_unreported_by_any_reply_leave_the_sum_unknown() -> None:
    b = boundary(Priced(tokens=None))
    await b.complete(user_request())
    assert b.bill.bill().prompt_tokens is None and b.bill.bill().completion_tokens is None


async def test_a_failed_request_is_a_request_with_its_error_and_no_charge() -> None:
    class Fails(Priced):
        async def complete(self, request: ChatRequest) -> ChatResponse:
            raise TimeoutFault("slow")

    b = boundary(Fails())
    with pytest.raises(TimeoutFault):
        await b.complete(user_request())
    bill = b.bill.bill()
    assert (bill.requests, bill.spent_usd, bill.prompt_tokens) == (1, 0.0, None)
    assert b.records[0]["error"] == "timeout" and b.records[0]["status"] is None
    assert (b.counts.sent, b.counts.failed) == (1, 1)


async def test_the_endpoint_output_cap_is_applied_before_sending() -> None:
    inner = Priced()
    b = boundary(inner, endpoint=endpoint_config(max_output_tokens=8))
    await b.complete(user_request(max_tokens=500))
    assert inner.sent[0].max_tokens == 8


def test_the_boundary_of_a_chat_only_client_is_not_a_renderer() -> None:
    assert renderer_of(boundary(Priced())) is None


async def test_a_rendering_is_forwarded_uncapped_and_recorded() -> None:
    inner = Renders()
    b = boundary(inner, endpoint=endpoint_config(max_output_tokens=8))
    renderer = renderer_of(b)
    assert renderer is not None
    request = user_request("The sky is", max_tokens=500)
    assert await renderer.apply_template(request) == "<prompt>The sky is</prompt>"
    assert inner.rendered == [request]  # a rendering generates nothing: no cap applied
    assert (b.counts.sent, b.counts.completed, b.counts.failed, b.counts.steps) == (1, 1, 0, 0)
    assert b.records[0]["kind"] == "template" and b.bill.bill().requests == 1


async def test_a_failed_rendering_counts_as_sent_and_failed() -> None:
    b = boundary(Renders(fail=True))
    renderer = renderer_of(b)
    assert renderer is not None
    with pytest.raises(RequestRejected):
        await renderer.apply_template(user_request())
    assert (b.counts.sent, b.counts.completed, b.counts.failed) == (1, 0, 1)
    assert b.records[0]["status"] == 404


async def test_the_cap_shows_in_sent_sampling_over_http() -> None:
    routes = {"/v1/chat/completions": [chat_reply()]}
    ep = endpoint_config(max_output_tokens=40)
    async with ScriptedServer(routes).running() as server:
        ep = endpoint_config(server.base_url, max_output_tokens=40)
        async with open_test_client(ep) as http:
            reply = await boundary(http, endpoint=ep).complete(
                user_request(max_tokens=2400, top_p=0.9)
            )
    assert server.received[0].body["max_tokens"] == 40
    assert reply.sent_sampling["max_tokens"] == 40
    assert reply.sent_sampling["top_p"] == 0.9


async def test_a_rendering_through_the_boundary_reaches_the_server_root() -> None:
    routes = {"/apply-template": [Reply(json_body={"prompt": "rendered"})]}
    async with ScriptedServer(routes).running() as server:
        ep = endpoint_config(server.base_url)
        async with open_test_client(ep) as http:
            b = boundary(http, endpoint=ep)
            renderer = renderer_of(b)
            assert renderer is not None
            assert await renderer.apply_template(user_request()) == "rendered"
    assert [r.path for r in server.received] == ["/apply-template"]
    assert b.counts.sent == 1


def test_offers_answers_as_the_runtime_protocol_check_does() -> None:
    """`offers` replaces `isinstance` against the one-method protocols: it must agree on the
    shapes a client comes in (a method, an instance attribute, one set to None, none)."""

    class Method:
        async def count_tokens(self, text: str) -> int:
            return len(text)

    class Wrapper:  # carries the method only when what it wraps does, as the boundary
        def __init__(self, inner: object) -> None:
            counter = getattr(inner, "count_tokens", None)
            if counter is not None:
                self.count_tokens = counter

    class Unset:
        apply_template = None

    shapes = [Method(), Wrapper(Method()), Wrapper(object()), Unset(), object(), Priced()]
    for shape in shapes:
        assert offers(shape, "count_tokens") == isinstance(shape, TokenCounter)
        assert offers(shape, "apply_template") == isinstance(shape, TemplateRenderer)
    assert [offers(s, "count_tokens") for s in shapes] == [True, True, False, False, False, False]
