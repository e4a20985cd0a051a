"""OpenAIChatClient against in-process scripted servers: wire body, parsing, fault mapping."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import pytest

from pipeline.chat.errors import (
    ErrorBodyFault,
    HttpStatusFault,
    InFlightBudgetExhausted,
    MalformedEnvelope,
    RequestRejected,
    TimeoutFault,
    TransportFault,
)
from pipeline.chat.messages import ChatMessage, ResponseSchema
from pipeline.config.schema import Limits, Prices
from pipeline.config.strict import ConfigError
from pipeline.endpoints.client import estimate_tokens
from pipeline.endpoints.limits import EndpointLimiter

from .conftest import (
    FakeClock,
    RecordingSleep,
    Reply,
    chat_reply,
    endpoint_config,
    open_test_client,
    user_request,
)

Serve = Callable[..., Any]
SCHEMA = ResponseSchema(
    name="carrier v1",
    schema={
        "type": "object",
        "properties": {
            "summary": {"type": "string", "maxLength": 4000, "description": "the state"},
            "ids": {"type": "array", "items": {"type": "string", "maxLength": 4000}},
            "note": {"type": "string", "maxLength": 200},
        },
        "required": ["summary", "ids", "note"],
    },
)
KEY = "sk-test-secret-value-123"


async def test_body_carries_model_messages_limits_and_seed(serve: Serve) -> None:
    async with (
        serve(chat=[chat_reply("hi")]) as server,
        open_test_client(endpoint_config(server.base_url)) as client,
    ):
        await client.complete(user_request("hello", max_tokens=33, temperature=0.7, seed=9))
    (sent,) = server.requests_to("/v1/chat/completions")
    assert sent.body == {
        "model": "test-model",
        "messages": [{"role": "user", "content": "hello"}],
        "max_tokens": 33,
        "temperature": 0.7,
        "seed": 9,
    }


async def test_seed_is_omitted_when_absent_or_disabled(serve: Serve) -> None:
    async with serve(chat=[chat_reply(), chat_reply()]) as server:
        endpoint = endpoint_config(server.base_url)
        async with open_test_client(endpoint) as client:
            await client.complete(user_request(seed=None))
        async with open_test_client(endpoint, send_seed=False) as client:
            await client.complete(user_request(seed=5))
    assert all("seed" not in r.body for r in server.received)


async def test_trailing_slash_on_base_url_is_stripped(serve: Serve) -> None:
    async with (
        serve(chat=[chat_reply()]) as server,
        open_test_client(endpoint_config(server.base_url + "/")) as client,
    ):
        await client.complete(user_request())
    assert [r.path for r in server.received] == ["/v1/chat/completions"]


async def test_json_schema_form_is_sent_strict_with_a_safe_name(serve: Serve) -> None:
    async with serve(chat=[chat_reply("{}")]) as server:
        endpoint = endpoint_config(server.base_url, response_format="json_schema")
        async with open_test_client(endpoint) as client:
            reply = await client.complete(user_request(schema=SCHEMA))
    form = server.received[0].body["response_format"]
    assert form == {
        "type": "json_schema",
        "json_schema": {"name": "carrier_v1", "strict": True, "schema": dict(SCHEMA.schema)},
    }
    assert reply.schema_adapted is False


async def test_json_object_schema_form_for_llama_cpp_python(serve: Serve) -> None:
    async with serve(chat=[chat_reply("{}")]) as server:
        endpoint = endpoint_config(server.base_url, response_format="json_object_schema")
        async with open_test_client(endpoint) as client:
            await client.complete(user_request(schema=SCHEMA))
    assert server.received[0].body["response_format"] == {
        "type": "json_object",
        "schema": dict(SCHEMA.schema),
    }


async def test_schema_on_a_no_schema_endpoint_is_rejected_without_sending(serve: Serve) -> None:
    async with serve() as server:
        endpoint = endpoint_config(server.base_url, response_format="none")
        async with open_test_client(endpoint) as client:
            with pytest.raises(RequestRejected) as raised:
                await client.complete(user_request(schema=SCHEMA))
    assert raised.value.reason == "schema_unsupported"
    assert server.received == []


async def test_max_schema_chars_moves_large_ceilings_into_descriptions(serve: Serve) -> None:
    async with serve(chat=[chat_reply("{}")]) as server:
        endpoint = endpoint_config(
            server.base_url, response_format="json_object_schema", max_schema_chars=1000
        )
        async with open_test_client(endpoint) as client:
            reply = await client.complete(user_request(schema=SCHEMA))
    props = server.received[0].body["response_format"]["schema"]["properties"]
    assert "maxLength" not in props["summary"]
    assert props["summary"]["description"] == "the state (at most 4000 characters)"
    assert "maxLength" not in props["ids"]["items"]
    assert props["ids"]["items"]["description"] == "at most 4000 characters"
    assert props["note"]["maxLength"] == 200
    assert reply.schema_adapted is True
    assert SCHEMA.schema["properties"]["summary"]["maxLength"] == 4000  # caller's copy intact


async def test_openrouter_reasoning_off_and_provider_pin(serve: Serve) -> None:
    async with serve(chat=[chat_reply()]) as server:
        endpoint = endpoint_config(
            server.base_url, reasoning="openrouter", provider="deepinfra", quantization="fp8"
        )
        async with open_test_client(endpoint) as client:
            await client.complete(user_request())
    body = server.received[0].body
    assert body["reasoning"] == {"enabled": False}
    assert body["provider"] == {
        "order": ["deepinfra"],
        "allow_fallbacks": False,
        "quantizations": ["fp8"],
        "require_parameters": True,
    }


async def test_chat_template_reasoning_off_and_no_pin_off_openrouter(serve: Serve) -> None:
    async with serve(chat=[chat_reply()]) as server:
        endpoint = endpoint_config(
            server.base_url, reasoning="chat_template_kwargs", provider="llama-cpp-python"
        )
        async with open_test_client(endpoint) as client:
            await client.complete(user_request())
    body = server.received[0].body
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert "provider" not in body
    assert "reasoning" not in body


def test_unknown_wire_forms_are_configuration_errors() -> None:
    from pipeline.endpoints.wire import check_endpoint_forms

    with pytest.raises(ConfigError, match="response_format"):
        check_endpoint_forms(endpoint_config(response_format="xml"))
    with pytest.raises(ConfigError, match="reasoning"):
        check_endpoint_forms(endpoint_config(reasoning="maybe"))


async def test_bearer_key_is_sent_and_absent_without_a_key(serve: Serve) -> None:
    async with serve(chat=[chat_reply(), chat_reply()]) as server:
        endpoint = endpoint_config(server.base_url)
        async with open_test_client(endpoint, api_key=KEY) as client:
            await client.complete(user_request())
        async with open_test_client(endpoint) as client:
            await client.complete(user_request())
    assert server.received[0].headers["Authorization"] == f"Bearer {KEY}"
    assert "Authorization" not in server.received[1].headers


async def test_api_key_never_appears_in_exception_text_or_repr(serve: Serve) -> None:
    echo = Reply(status=401, json_body={"error": f"bad key Bearer {KEY}"})
    async with (
        serve(chat=[echo]) as server,
        open_test_client(endpoint_config(server.base_url), api_key=KEY) as client,
    ):
        with pytest.raises(RequestRejected) as raised:
            await client.complete(user_request())
        assert KEY not in repr(client)
    assert raised.value.reason == "auth"
    assert KEY not in str(raised.value)
    assert "***" in str(raised.value)


async def test_reply_fields_usage_and_cost_are_parsed(serve: Serve) -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "prompt_tokens_details": {"cached_tokens": 600},
    }
    async with serve(chat=[chat_reply(None, finish="length", usage=usage, refusal="no")]) as srv:
        prices = Prices(input_per_mtok=2.0, output_per_mtok=10.0, cached_input_per_mtok=0.5)
        async with open_test_client(endpoint_config(srv.base_url, prices=prices)) as client:
            reply = await client.complete(user_request())
    assert reply.text == ""
    assert reply.finish_reason == "length"
    assert reply.refusal == "no"
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (1000, 100)
    assert reply.usage.cached_tokens == 600
    assert reply.cost_usd == pytest.approx((400 * 2.0 + 600 * 0.5 + 100 * 10.0) / 1e6)


async def test_429_with_retry_after_is_retried_after_that_long(serve: Serve) -> None:
    sleep, clock = RecordingSleep(), FakeClock()
    limiter = EndpointLimiter(Limits(), clock=clock, sleep=clock.sleep)
    limited = Reply(status=429, json_body={"error": "slow"}, headers={"Retry-After": "3"})
    async with serve(chat=[limited, chat_reply("after")]) as server:
        endpoint = endpoint_config(server.base_url)
        async with open_test_client(endpoint, sleep=sleep, limiter=limiter) as client:
            reply = await client.complete(user_request())
    assert reply.text == "after"
    assert sleep.waits == [pytest.approx(3.0)]  # the retry policy's backoff
    assert clock.sleeps == [pytest.approx(3.0)]  # the whole endpoint was held as well
    assert len(server.received) == 2


async def test_every_attempt_acquires_the_limiter(serve: Serve) -> None:
    class CountingLimiter(EndpointLimiter):
        acquired: list[int]

        async def acquire(self, tokens: int) -> None:
            self.acquired.append(tokens)
            await super().acquire(tokens)

    limiter = CountingLimiter(Limits())
    limiter.acquired = []
    faults = [Reply(status=503, raw=b"busy"), Reply(status=502, raw=b"bad gateway")]
    request = user_request("x" * 30, max_tokens=10)
    async with (
        serve(chat=[*faults, chat_reply()]) as server,
        open_test_client(endpoint_config(server.base_url), limiter=limiter) as client,
    ):
        await client.complete(request)
    assert limiter.acquired == [estimate_tokens(request)] * 3


async def test_concurrency_is_capped_per_endpoint(serve: Serve) -> None:
    replies = [Reply(json_body=chat_reply().json_body, delay_s=0.05) for _ in range(6)]
    async with serve(chat=replies) as server:
        endpoint = endpoint_config(server.base_url, limits=Limits(concurrency=2))
        async with open_test_client(endpoint) as client:
            await asyncio.gather(*(client.complete(user_request()) for _ in range(6)))
    assert server.peak_in_flight == 2


async def test_llama_cpp_json_schema_500_is_rejected_not_retried(serve: Serve) -> None:
    body = {
        "error": {
            "message": "1 validation error for CreateChatCompletionRequest "
            "response_format Input should be 'text' or 'json_object'"
        }
    }
    async with serve(chat=[Reply(status=500, json_body=body)]) as server:
        endpoint = endpoint_config(server.base_url, response_format="json_schema")
        async with open_test_client(endpoint) as client:
            with pytest.raises(RequestRejected) as raised:
                await client.complete(user_request(schema=SCHEMA))
    assert raised.value.reason == "schema_unsupported"
    assert len(server.received) == 1


async def test_context_length_400_is_rejected_as_context_too_long(serve: Serve) -> None:
    reply = Reply(
        status=400,
        json_body={"error": {"message": "Requested tokens (9001) exceed context window of 8192"}},
    )
    async with (
        serve(chat=[reply]) as server,
        open_test_client(endpoint_config(server.base_url)) as client,
    ):
        with pytest.raises(RequestRejected) as raised:
            await client.complete(user_request())
    assert raised.value.reason == "context_too_long"


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (Reply(raw=b"<html>gateway</html>"), MalformedEnvelope),
        (Reply(raw=b'{"choices": [{"message": {"content": "caf\xe9"}}]}'), MalformedEnvelope),
        (Reply(json_body={"id": "x", "object": "chat.completion"}), MalformedEnvelope),
        (Reply(json_body={"choices": []}), MalformedEnvelope),
        (Reply(json_body=[1, 2]), MalformedEnvelope),
        (Reply(json_body={"error": {"code": 502, "message": "provider down"}}), ErrorBodyFault),
        (
            Reply(status=402, json_body={"error": {"code": "in_flight_budget_exhausted"}}),
            InFlightBudgetExhausted,
        ),
        (Reply(status=503, raw=b"overloaded"), HttpStatusFault),
        (Reply(action="truncate"), MalformedEnvelope),
        (Reply(action="disconnect"), TransportFault),
    ],
    ids=[
        "not-json",
        "bad-utf8",
        "no-choices",
        "empty-choices",
        "not-object",
        "error-body",
        "in-flight-budget",
        "503",
        "truncated",
        "disconnect",
    ],
)
async def test_envelope_faults_map_into_the_tree_after_bounded_retries(
    serve: Serve, reply: Reply, expected: type[Exception]
) -> None:
    async with (
        serve(chat=[reply, reply]) as server,
        open_test_client(endpoint_config(server.base_url), attempts=2) as client,
    ):
        with pytest.raises(expected):
            await client.complete(user_request())
    assert len(server.received) == 2


async def test_read_timeout_is_a_timeout_fault(serve: Serve) -> None:
    slow = Reply(json_body=chat_reply().json_body, delay_s=0.3)
    async with serve(chat=[slow]) as server:
        endpoint = endpoint_config(server.base_url)
        async with open_test_client(endpoint, attempts=1, request_s=0.1) as client:
            with pytest.raises(TimeoutFault):
                await client.complete(user_request())


async def test_connection_refused_is_a_transport_fault() -> None:
    with socket.socket() as probe_socket:
        probe_socket.bind(("127.0.0.1", 0))
        port = probe_socket.getsockname()[1]
    endpoint = endpoint_config(f"http://127.0.0.1:{port}/v1")
    async with open_test_client(endpoint, attempts=2) as client:
        with pytest.raises(TransportFault):
            await client.complete(user_request())


async def test_body_over_the_cap_is_refused(serve: Serve) -> None:
    big = chat_reply("x" * 50_000)
    async with serve(chat=[big]) as server:
        endpoint = endpoint_config(server.base_url)
        async with open_test_client(endpoint, attempts=1, max_body_bytes=10_000) as client:
            with pytest.raises(MalformedEnvelope, match="cap"):
                await client.complete(user_request())


async def test_models_listing_reports_the_context_length(serve: Serve) -> None:
    listing = {
        "data": [
            {"id": "other", "context_length": 4096},
            {"id": "test-model", "context_length": 131072},
        ]
    }
    single = {
        "object": "list",
        "data": [{"id": "/models/smol.gguf", "meta": {"n_ctx_train": 8192}}],
    }
    async with (
        serve(models=[Reply(json_body=listing), Reply(json_body=single)]) as server,
        open_test_client(endpoint_config(server.base_url)) as client,
    ):
        assert await client.served_context_length() == 131072
        assert await client.served_context_length() == 8192
    assert [r.method for r in server.received] == ["GET", "GET"]


def test_token_estimate_counts_prompt_and_max_tokens() -> None:
    request = user_request("a" * 300, max_tokens=50)
    assert estimate_tokens(request) == 100 + 4 + 50
    two = (*user_request(max_tokens=1).messages, ChatMessage("assistant", "b" * 3))
    assert estimate_tokens(user_request(max_tokens=1, messages=two)) == 2 + 1 + 8 + 1
