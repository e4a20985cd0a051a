"""Harness-shaped conversations on the wire, the sampling actually sent, and /apply-template.

In-process scripted servers on 127.0.0.1 (tests/endpoints/conftest.py): each test states the
body the server received and what the client made of the reply.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import Any

import pytest

from pipeline.chat.errors import HttpStatusFault, MalformedEnvelope, RequestRejected
from pipeline.chat.messages import ChatMessage, ChatRequest, renderer_of
from pipeline.endpoints.client import CHARS_PER_TOKEN_ESTIMATE, estimate_tokens
from pipeline.endpoints.template import server_root
from pipeline.endpoints.wire import encode_body
from pipeline.endpoints.wire import loads as wire_loads

from .conftest import (
    RecordingSleep,
    Reply,
    ScriptedServer,
    chat_reply,
    endpoint_config,
    open_test_client,
    user_request,
)

KEY = "sk-template-secret-456"
TOOL_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "read_file", "arguments": '{"path": "src/app.py"}'},
}
WIRE_MESSAGES: tuple[Mapping[str, Any], ...] = (
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Open src/app.py"},
    {
        "role": "assistant",
        "content": "",
        "reasoning_content": "The user wants the file; call read_file.",
        "reasoning": "same trace, OpenRouter's field",
        "reasoning_text": "same trace, a third dialect",
        "tool_calls": [TOOL_CALL],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "print('hi')"},
    # a read-only mapping (as a frozen config gives) still goes out as its items read
    MappingProxyType({"role": "user", "content": "What does it print?"}),
)
TOOLS: tuple[Mapping[str, Any], ...] = (
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    },
)


def harness_request(**overrides: Any) -> ChatRequest:
    values: dict[str, Any] = {
        "messages": (),
        "max_tokens": 64,
        "wire_messages": WIRE_MESSAGES,
        "tools": TOOLS,
        "template_kwargs": {"enable_thinking": True},
        "top_p": 0.95,
        "seed": 3,
    }
    values.update(overrides)
    return ChatRequest(**values)


@asynccontextmanager
async def serve_routes(**routes: Sequence[Reply]) -> AsyncIterator[ScriptedServer]:
    """A scripted server with routes named by keyword: chat, template, models."""
    paths = {"chat": "/v1/chat/completions", "template": "/apply-template", "models": "/v1/models"}
    async with ScriptedServer({paths[name]: r for name, r in routes.items()}).running() as s:
        yield s


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, default=dict))


async def test_wire_messages_tools_template_kwargs_and_top_p_are_sent_verbatim() -> None:
    async with (
        serve_routes(chat=[chat_reply()]) as server,
        open_test_client(endpoint_config(server.base_url)) as client,
    ):
        await client.complete(harness_request())
    (sent,) = server.requests_to("/v1/chat/completions")
    assert sent.body["messages"] == as_json([dict(m) for m in WIRE_MESSAGES])
    assistant = sent.body["messages"][2]
    assert assistant["reasoning_content"] == "The user wants the file; call read_file."
    assert assistant["tool_calls"] == [TOOL_CALL]
    assert sent.body["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "print('hi')",
    }
    assert sent.body["tools"] == as_json(list(TOOLS))
    assert sent.body["chat_template_kwargs"] == {"enable_thinking": True}
    assert sent.body["top_p"] == 0.95


async def test_plain_requests_send_no_new_fields() -> None:
    async with (
        serve_routes(chat=[chat_reply()]) as server,
        open_test_client(endpoint_config(server.base_url)) as client,
    ):
        reply = await client.complete(user_request("hello", max_tokens=8, seed=None))
    (sent,) = server.received
    assert not {"tools", "top_p", "chat_template_kwargs"} & set(sent.body)
    assert reply.sent_sampling == {"max_tokens": 8, "temperature": 0.0}


async def test_sent_sampling_equals_the_sampling_fields_the_server_received() -> None:
    async with (
        serve_routes(chat=[chat_reply()]) as server,
        open_test_client(endpoint_config(server.base_url)) as client,
    ):
        reply = await client.complete(harness_request(temperature=0.6))
    (sent,) = server.received
    assert reply.sent_sampling == {
        "temperature": 0.6,
        "top_p": 0.95,
        "seed": 3,
        "max_tokens": 64,
        "chat_template_kwargs": {"enable_thinking": True},
    }
    assert {k: sent.body[k] for k in reply.sent_sampling} == reply.sent_sampling


async def test_request_template_kwargs_win_over_the_endpoint_reasoning_form() -> None:
    endpoint_base = {"reasoning": "chat_template_kwargs"}
    async with serve_routes(chat=[chat_reply(), chat_reply()]) as server:
        endpoint = endpoint_config(server.base_url, **endpoint_base)
        async with open_test_client(endpoint) as client:
            own = await client.complete(user_request())
            mine = await client.complete(
                user_request(template_kwargs={"enable_thinking": True, "preserve": 1})
            )
    first, second = server.received
    assert first.body["chat_template_kwargs"] == {"enable_thinking": False}
    assert own.sent_sampling["chat_template_kwargs"] == {"enable_thinking": False}
    assert second.body["chat_template_kwargs"] == {"enable_thinking": True, "preserve": 1}
    assert mine.sent_sampling["chat_template_kwargs"] == second.body["chat_template_kwargs"]


async def test_the_openrouter_reasoning_switch_shows_in_sent_sampling() -> None:
    async with serve_routes(chat=[chat_reply()]) as server:
        endpoint = endpoint_config(server.base_url, reasoning="openrouter")
        async with open_test_client(endpoint) as client:
            reply = await client.complete(user_request())
    assert server.received[0].body["reasoning"] == {"enabled": False}
    assert reply.sent_sampling["reasoning"] == {"enabled": False}


async def test_seed_withheld_by_the_client_is_absent_from_sent_sampling() -> None:
    async with (
        serve_routes(chat=[chat_reply()]) as server,
        open_test_client(endpoint_config(server.base_url), send_seed=False) as client,
    ):
        reply = await client.complete(user_request(seed=11))
    assert "seed" not in server.received[0].body
    assert "seed" not in reply.sent_sampling


def test_tpm_estimate_of_wire_messages_counts_their_json_and_the_tools() -> None:
    bare = harness_request(tools=None)
    with_tools = harness_request()
    chars = len(json.dumps([dict(m) for m in WIRE_MESSAGES]))
    assert estimate_tokens(bare) >= chars // CHARS_PER_TOKEN_ESTIMATE + bare.max_tokens
    assert estimate_tokens(with_tools) > estimate_tokens(bare)
    # the empty `messages` must not make a long conversation look free
    assert estimate_tokens(bare) > estimate_tokens(ChatRequest(messages=(), max_tokens=64))


@pytest.mark.parametrize(
    ("base_url", "root"),
    [
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("https://openrouter.ai/api/v1", "https://openrouter.ai/api"),
    ],
)
def test_server_root_drops_the_v1_suffix(base_url: str, root: str) -> None:
    assert server_root(base_url) == root


async def test_apply_template_posts_at_the_root_with_auth_and_returns_the_prompt() -> None:
    rendered = Reply(json_body={"prompt": "<|im_start|>user\nWhat does it print?<|im_end|>"})
    async with serve_routes(template=[rendered]) as server:
        endpoint = endpoint_config(server.base_url, reasoning="chat_template_kwargs")
        async with open_test_client(endpoint, api_key=KEY) as client:
            assert renderer_of(client) is client
            prompt = await client.apply_template(harness_request(template_kwargs=None))
    assert prompt == "<|im_start|>user\nWhat does it print?<|im_end|>"
    (sent,) = server.received
    assert (sent.method, sent.path) == ("POST", "/apply-template")
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    assert sent.body == {
        "model": "test-model",
        "messages": as_json([dict(m) for m in WIRE_MESSAGES]),
        "tools": as_json(list(TOOLS)),
        "chat_template_kwargs": {"enable_thinking": False},
    }


async def test_apply_template_sends_plain_messages_when_no_wire_messages() -> None:
    async with (
        serve_routes(template=[Reply(json_body={"prompt": "p"})]) as server,
        open_test_client(endpoint_config(server.base_url)) as client,
    ):
        await client.apply_template(user_request("The sky is"))
    assert server.received[0].body == {
        "model": "test-model",
        "messages": [{"role": "user", "content": "The sky is"}],
    }


@pytest.mark.parametrize("status", [404, 405, 501])
async def test_a_server_without_apply_template_is_rejected_not_retried(status: int) -> None:
    missing = Reply(status=status, json_body={"error": {"message": "File Not Found"}})
    sleep = RecordingSleep()
    async with (
        serve_routes(template=[missing, missing, missing]) as server,
        open_test_client(endpoint_config(server.base_url), sleep=sleep) as client,
    ):
        with pytest.raises(RequestRejected) as raised:
            await client.apply_template(user_request())
    assert raised.value.reason == "no_apply_template"
    assert raised.value.status == status
    assert len(server.received) == 1 and sleep.waits == []


async def test_apply_template_retries_a_503_like_a_chat_request() -> None:
    busy = Reply(status=503, json_body={"error": "loading"})
    async with (
        serve_routes(template=[busy, Reply(json_body={"prompt": "ok"})]) as server,
        open_test_client(endpoint_config(server.base_url)) as client,
    ):
        assert await client.apply_template(user_request()) == "ok"
    assert len(server.received) == 2


async def test_apply_template_faults_exhaust_into_the_chat_error_tree() -> None:
    busy = Reply(status=503, json_body={"error": "loading"})
    async with (
        serve_routes(template=[busy, busy]) as server,
        open_test_client(endpoint_config(server.base_url), attempts=2) as client,
    ):
        with pytest.raises(HttpStatusFault):
            await client.apply_template(user_request())


async def test_an_apply_template_reply_without_a_prompt_is_a_malformed_envelope() -> None:
    odd = Reply(json_body={"text": "no prompt key"})
    async with (
        serve_routes(template=[odd]) as server,
        open_test_client(endpoint_config(server.base_url), attempts=1) as client,
    ):
        with pytest.raises(MalformedEnvelope):
            await client.apply_template(user_request())


def test_request_without_mappings_stays_hashable() -> None:
    request = ChatRequest(messages=(ChatMessage("user", "x"),), max_tokens=4, top_p=0.5)
    assert hash(request) == hash(ChatRequest((ChatMessage("user", "x"),), 4, top_p=0.5))


@pytest.mark.parametrize(
    "body",
    [
        {"model": "m", "messages": [{"role": "user", "content": 'é "q"\n\t\x01\x7f \u2028 😀'}]},
        {"temperature": 0.7, "top_p": 1e-07, "big": 1e16, "neg": -0.0, "n": 2**63 - 1, "f": None},
        {"tools": [{"type": "function", "function": {"parameters": {"a": [1, 2.5, True]}}}]},
    ],
)
def test_encode_body_writes_the_bytes_the_standard_encoder_writes(body: dict[str, Any]) -> None:
    """orjson is the fast path; the bytes (and so the cache keys) are the standard ones'."""
    standard = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert json.loads(encode_body(body)) == json.loads(standard)
    if "top_p" not in body:  # orjson writes 1e-07 as 1e-7 and 1e16 as 1e16: same numbers
        assert encode_body(body) == standard


def test_encode_body_falls_back_for_what_orjson_refuses() -> None:
    body = {"n": 2**70, 3: "int key"}
    assert encode_body(body) == b'{"n":1180591620717411303424,"3":"int key"}'
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate fails as it always did
        encode_body({"content": "\ud800"})


def test_replies_are_read_as_the_standard_decoder_reads_them() -> None:
    assert wire_loads('{"a": NaN, "n": 1180591620717411303424}')["n"] == 2**70
    with pytest.raises(json.JSONDecodeError):
        wire_loads("{not json")
