"""Real llama.cpp servers with the embedded panel's tiny models (marker: local_model).

Kept short: small max_tokens, one server per test (each starts in a few seconds).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from pipeline.config.schema import EndpointConfig
from pipeline.endpoints.local import LocalServerPool, build_servers, load_local_panel

pytestmark = pytest.mark.local_model


def _config(family: str) -> EndpointConfig:
    return next(c for c in load_local_panel().configs if c.family == family)


def _pool(family: str, log_dir: Path, **kwargs: Any) -> LocalServerPool:
    return LocalServerPool(build_servers([_config(family)], log_dir), **kwargs)


async def _chat(base_url: str, content: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    body = {
        "model": "local",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "seed": 7,
        **extra,
    }
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{base_url}/chat/completions", json=body) as response,
    ):
        assert response.status == 200, await response.text()
        reply: dict[str, Any] = await response.json()
        return reply


def _text(reply: dict[str, Any]) -> str:
    return str(reply["choices"][0]["message"]["content"])


async def test_smollm2_reply_at_temperature_0_is_identical_across_server_restarts(
    tmp_path: Path,
) -> None:
    # Compared across fresh servers, not by repeating the prompt on one server: an exact repeat
    # hits the prefix cache, re-evaluates only the last token and can pick another greedy path.
    config_id = _config("smollm2").config_id
    replies = []
    for _ in range(2):
        async with _pool("smollm2", tmp_path) as pool:
            replies.append(await _chat(pool.base_url(config_id), "Name a colour.", max_tokens=8))
    assert _text(replies[0]).strip()
    assert _text(replies[0]) == _text(replies[1])
    assert replies[0]["usage"]["completion_tokens"] <= 8


async def test_smollm2_json_object_schema_reply_parses_as_json(tmp_path: Path) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "maxLength": 20}},
        "required": ["city"],
    }
    config_id = _config("smollm2").config_id
    async with _pool("smollm2", tmp_path) as pool:
        reply = await _chat(
            pool.base_url(config_id),
            "Which city is the capital of France? Reply in JSON.",
            max_tokens=40,
            response_format={"type": "json_object", "schema": schema},
        )
    parsed = json.loads(_text(reply))
    assert isinstance(parsed["city"], str) and len(parsed["city"]) <= 20


async def test_supervisor_restarts_a_sigkilled_server_which_serves_again(tmp_path: Path) -> None:
    config_id = _config("smollm2").config_id
    async with _pool("smollm2", tmp_path, check_interval_s=0.2) as pool:
        server = pool.servers[config_id]
        url, killed = pool.base_url(config_id), server.pid
        assert killed is not None
        os.kill(killed, signal.SIGKILL)
        for _ in range(300):
            if pool.restarts:
                break
            await asyncio.sleep(0.2)
        assert [(e.exit_code, e.recovered) for e in pool.restarts] == [(-signal.SIGKILL, True)]
        assert pool.base_url(config_id) == url and server.pid != killed
        assert _text(await _chat(url, "Say hi.", max_tokens=4)).strip()


async def test_stop_leaves_no_llama_process(tmp_path: Path) -> None:
    async with _pool("smollm2", tmp_path) as pool:
        pids = [server.pid for server in pool.servers.values()]
    for pid in pids:
        assert pid is not None
        with pytest.raises(ProcessLookupError):
            os.killpg(pid, 0)


async def test_gemma_server_starts_with_gemma_chat_format_and_answers(tmp_path: Path) -> None:
    config_id = _config("gemma3").config_id
    async with _pool("gemma3", tmp_path) as pool:
        command = pool.servers[config_id].command()
        reply = await _chat(pool.base_url(config_id), "The sky is", max_tokens=6)
    assert command[command.index("--chat_format") + 1] == "gemma"
    assert reply["choices"][0]["finish_reason"] in ("stop", "length")
    assert reply["usage"]["completion_tokens"] >= 1
