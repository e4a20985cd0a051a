"""Real llama-server processes with the embedded panel's tiny models (marker: local_model).

Kept short: small max_tokens, one server per test (each starts in a few seconds). These pin
what the move from llama-cpp-python bought (issue 9): OpenAI's json_schema form with large
maxLength, prefix-cache hits in usage, template rendering, parallel slots, and an API key.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pipeline.chat.messages import ChatRequest
from pipeline.config.schema import EndpointConfig, RetryConfig, TimeoutConfig
from pipeline.endpoints.client import open_client
from pipeline.endpoints.local import LocalServer, build_servers, load_local_panel
from pipeline.endpoints.local_pool import LocalServerPool

pytestmark = pytest.mark.local_model


def _config(family: str) -> EndpointConfig:
    return next(c for c in load_local_panel().configs if c.family == family)


def _pool(family: str, log_dir: Path, **kwargs: Any) -> LocalServerPool:
    return LocalServerPool(build_servers([_config(family)], log_dir), **kwargs)


def _only(pool: LocalServerPool) -> LocalServer:
    (server,) = pool.servers.values()
    return server


async def _post(
    server: LocalServer, path: str, body: dict[str, Any], *, key: bool = True
) -> tuple[int, dict[str, Any]]:
    headers = server.headers() if key else {}
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{server.base_url.removesuffix('/v1')}{path}", json=body, headers=headers
        ) as response,
    ):
        return response.status, await response.json(content_type=None)


async def _chat(server: LocalServer, content: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    body = {
        "model": "local",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "seed": 7,
        **extra,
    }
    status, reply = await _post(server, "/v1/chat/completions", body)
    assert status == 200, reply
    return reply


def _text(reply: dict[str, Any]) -> str:
    return str(reply["choices"][0]["message"]["content"])


async def test_smollm2_reply_at_temperature_0_is_identical_across_server_restarts(
    tmp_path: Path,
) -> None:
    replies = []
    for _ in range(2):
        async with _pool("smollm2", tmp_path) as pool:
            replies.append(await _chat(_only(pool), "Name a colour.", max_tokens=8))
    assert _text(replies[0]).strip()
    assert _text(replies[0]) == _text(replies[1])
    assert replies[0]["usage"]["completion_tokens"] <= 8


async def test_json_schema_with_a_large_max_length_is_served_as_declared(tmp_path: Path) -> None:
    # llama-cpp-python rejected this form and crashed above maxLength 1000; the q and j arms
    # declare ceilings of several thousand characters.
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 9600}},
        "required": ["city"],
        "additionalProperties": False,
    }
    response_format = {
        "type": "json_schema",
        "json_schema": {"name": "reply", "strict": True, "schema": schema},
    }
    async with _pool("smollm2", tmp_path) as pool:
        reply = await _chat(
            _only(pool),
            "Which city is the capital of France? Reply in JSON.",
            max_tokens=40,
            response_format=response_format,
        )
        assert _only(pool).exit_code() is None
    if reply["choices"][0]["finish_reason"] == "stop":
        assert isinstance(json.loads(_text(reply))["city"], str)


async def test_a_repeated_prompt_reports_cached_prompt_tokens(tmp_path: Path) -> None:
    prompt = "Summarise: " + " ".join(
        f"line {i} of the log says port {8000 + i}" for i in range(60)
    )
    async with _pool("smollm2", tmp_path) as pool:
        await _chat(_only(pool), prompt, max_tokens=2)
        second = await _chat(_only(pool), prompt, max_tokens=2)
    details = second["usage"].get("prompt_tokens_details") or {}
    assert details.get("cached_tokens", 0) >= second["usage"]["prompt_tokens"] // 2


async def test_requests_without_the_run_key_are_refused(tmp_path: Path) -> None:
    async with _pool("smollm2", tmp_path) as pool:
        body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
        status, _ = await _post(_only(pool), "/v1/chat/completions", body, key=False)
    assert status == 401


async def test_props_report_two_slots_of_the_full_context(tmp_path: Path) -> None:
    async with _pool("smollm2", tmp_path) as pool:
        props = pool.describe()[_config("smollm2").config_id]["props"]
    local = _config("smollm2").local
    assert local is not None
    assert props["total_slots"] == local.parallel
    assert props["n_ctx_per_slot"] == local.n_ctx


async def test_two_requests_at_once_are_both_served(tmp_path: Path) -> None:
    async with _pool("smollm2", tmp_path) as pool:
        server = _only(pool)
        replies = await asyncio.gather(
            _chat(server, "Name a fruit.", max_tokens=6), _chat(server, "Name a tree.", 6)
        )
    assert all(r["usage"]["completion_tokens"] >= 1 for r in replies)


async def test_supervisor_restarts_a_sigkilled_server_which_serves_again(tmp_path: Path) -> None:
    async with _pool("smollm2", tmp_path, check_interval_s=0.2) as pool:
        server = _only(pool)
        url, killed = server.base_url, server.pid
        assert killed is not None
        os.kill(killed, signal.SIGKILL)
        for _ in range(300):
            if pool.restarts:
                break
            await asyncio.sleep(0.2)
        assert [(e.exit_code, e.restarted) for e in pool.restarts] == [(-signal.SIGKILL, True)]
        await server.wait_ready(timeout_s=60)
        assert server.base_url == url and server.pid != killed
        assert _text(await _chat(server, "Say hi.", max_tokens=4)).strip()


async def test_stop_leaves_no_llama_process(tmp_path: Path) -> None:
    async with _pool("smollm2", tmp_path) as pool:
        pids = [server.pid for server in pool.servers.values()]
    for pid in pids:
        assert pid is not None
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)


async def test_gemma_renders_through_the_gemma_turn_template_and_answers(tmp_path: Path) -> None:
    async with _pool("gemma3", tmp_path) as pool:
        server = _only(pool)
        status, rendered = await _post(
            server, "/apply-template", {"messages": [{"role": "user", "content": "The sky is"}]}
        )
        reply = await _chat(server, "The sky is", max_tokens=6)
    assert status == 200
    assert "<start_of_turn>user\nThe sky is<end_of_turn>\n<start_of_turn>model\n" in str(
        rendered["prompt"]
    )
    assert reply["choices"][0]["finish_reason"] in ("stop", "length")
    assert reply["usage"]["completion_tokens"] >= 1


async def test_apply_template_renders_a_qwen3_style_body_through_the_client(
    tmp_path: Path,
) -> None:
    # The reasoning-trace study asks the server how ITS template renders a harness's body:
    # an assistant turn with reasoning_content and a tool call, a tool message, tools.
    tool_call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "conf/gateway.yaml"}'},
    }
    body = (
        {"role": "user", "content": "Which port does the gateway in conf/gateway.yaml use?"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "I should read conf/gateway.yaml first.",
            "tool_calls": [tool_call],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "port: 8443"},
        {"role": "user", "content": "So which port is it?"},
    )
    tools = (
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        },
    )
    request = ChatRequest(
        messages=(),
        max_tokens=16,
        wire_messages=body,
        tools=tools,
        template_kwargs={"enable_thinking": False},
    )
    async with _pool("smollm2", tmp_path) as pool:
        server = _only(pool)
        endpoint = replace(_config("smollm2"), base_url=server.base_url)
        async with open_client(
            endpoint, retry=RetryConfig(), timeouts=TimeoutConfig(), api_key=server.api_key
        ) as client:
            prompt = await client.apply_template(request)
    assert "Which port does the gateway in conf/gateway.yaml use?" in prompt
    assert "So which port is it?" in prompt and "port: 8443" in prompt
