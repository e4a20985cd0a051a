"""One managed local llama.cpp `llama-server` process on a loopback port.

Decisions (docs/endpoints.md, "Local llama.cpp servers"):

- The binary is llama.cpp's own server, built portably (`pipeline.endpoints.llama_bin`). It
  reports prefix-cache hits, renders through a given Jinja chat template, serves parallel
  slots and accepts OpenAI's `json_schema` response format, which the llama-cpp-python server
  could not (issue 9).
- Flags: `--jinja` with the GGUF's template or the spec's template file (Gemma's GGUF has
  none); `--parallel N` slots with `--ctx-size n_ctx*N` and no unified KV, so every slot has the
  full `n_ctx`; `--cache-ram` bounds the prompt cache, which otherwise grows for the whole
  session; `--swa-full` keeps a sliding-window model's whole cache, so a shared prefix is
  reused; no web UI; threads split evenly over the servers started together.
- Security: bound to 127.0.0.1 with a per-run random API key. The key reaches the server
  through its environment (`LLAMA_API_KEY`, never argv, which `ps` shows) and the client
  through `FOLDSWEEP_LOCAL_API_KEY`; only that variable's name is ever written anywhere.
  The server gets a minimal environment (`server_environment`): no caller's API key, and no
  `LLAMA_ARG_*` variable that could change the server. CORS allows only the server's own
  origin, without credentials (llama-server's default reflects any Origin with credentials).
- Readiness is GET /health answering 200; a process that exits first fails at once with the
  last line of its log and the meaning of its exit (`server_deaths`).
- Each process gets its own session (process group), so a terminal's Ctrl-C does not reach it
  mid-request and stop() can kill the whole group: SIGTERM, then SIGKILL after a grace period.
  An atexit hook kills any group still alive, and each process dies with its parent
  (`parent_death`: PR_SET_PDEATHSIG), so not even a SIGKILLed driver leaves an orphan.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import logging
import os
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
from omegaconf import OmegaConf

from pipeline.config.load import conf_dir
from pipeline.config.schema import EndpointConfig, LocalModelSpec, PanelConfig
from pipeline.config.strict import build
from pipeline.endpoints.llama_bin import LlamaServerBuild, locate
from pipeline.endpoints.local_identity import server_identity
from pipeline.endpoints.local_weights import locate_weights
from pipeline.endpoints.parent_death import die_with_parent
from pipeline.endpoints.server_deaths import explain_exit
from pipeline.usererror import UserError

HOST = "127.0.0.1"
THREADS = 2
READY_TIMEOUT_S = 120.0
STOP_GRACE_S = 5.0
CACHE_RAM_MIB = 512  # a whole default study's traces (docs/endpoints.md)
API_KEY_ENV = "FOLDSWEEP_LOCAL_API_KEY"  # the client reads the per-run key from here

log = logging.getLogger(__name__)
_live_groups: set[int] = set()  # process groups to kill at interpreter exit (orphan backstop)


class LocalServerError(UserError):
    """A local server did not start, answer or survive; one line with its log's path."""


def pick_free_port(host: str = HOST) -> int:
    """A port the kernel reports free now (bind to 0); a race with another binder is possible."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def ensure_port_free(port: int, host: str = HOST) -> None:
    """Reject a user-chosen port that something already listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise LocalServerError(f"port {port} on {host} is not free ({exc.strerror})") from None


def template_path(spec: LocalModelSpec) -> Path | None:
    """The spec's chat template file, relative to the repository's data/ directory."""
    if spec.chat_template_file is None:
        return None
    return conf_dir().parent / "data" / spec.chat_template_file


def server_command(binary: Path, model_path: Path, port: int, spec: LocalModelSpec) -> list[str]:
    """The argv of one llama-server (see the module docstring for each flag)."""
    threads = str(spec.n_threads or THREADS)
    argv = [
        str(binary),
        "--model", str(model_path),
        "--host", HOST,
        "--port", str(port),
        "--ctx-size", str(spec.n_ctx * spec.parallel),
        "--parallel", str(spec.parallel),
        "--no-kv-unified",
        "--threads", threads,
        "--threads-batch", threads,
        "--cache-ram", str(CACHE_RAM_MIB),
        "--swa-full",  # a sliding-window model (Gemma 3) reuses any cached prefix
        "--jinja",
        "--no-webui",
        # CORS: llama-server reflects any Origin with credentials by default; only the
        # server's own origin now, without credentials (no browser page reaches it)
        "--cors-origins", f"http://{HOST}:{port}",
        "--no-cors-credentials",
    ]  # fmt: skip
    template = template_path(spec)
    if template is not None:
        argv += ["--chat-template-file", str(template)]
    return argv


# What a llama-server needs of the caller's environment (issue 19): a path, a home, a
# locale, a temp dir and a library path; plus the markers that find a run's processes again
# (pipeline/sweep/orphans.py, the reliability harness). Nothing else, so no API key
# (OPENROUTER_API_KEY, ...) and no stray LLAMA_ARG_* override reaches the server.
_SERVER_ENV = frozenset({"PATH", "HOME", "LANG", "TZ", "TMPDIR", "LD_LIBRARY_PATH"})
_SERVER_ENV_PREFIXES = ("LC_", "FOLDSWEEP_TEST_MARKER", "FOLDSWEEP_RAY_TEMP_DIR")


def server_environment(api_key: str, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """A minimal environment (the allow-list above), plus the server's API key."""
    source = os.environ if base is None else base
    env = {
        k: v for k, v in source.items() if k in _SERVER_ENV or k.startswith(_SERVER_ENV_PREFIXES)
    }
    env["LLAMA_API_KEY"] = api_key
    return env


def last_log_line(path: Path) -> str:
    """The last non-empty line of a server log, for one-line messages."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            text = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log written)"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else "(empty log)"


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@atexit.register
def _kill_live_groups() -> None:
    for pgid in list(_live_groups):
        _kill_group(pgid, signal.SIGKILL)


class LocalServer:
    """One llama-server process; relaunchable on the same port with the same key."""

    def __init__(
        self,
        config_id: str,
        spec: LocalModelSpec,
        model_path: Path,
        port: int,
        log_path: Path,
        *,
        build: LlamaServerBuild | None = None,
        api_key: str | None = None,
    ) -> None:
        self.config_id = config_id
        self.spec = spec
        self.model_path = model_path
        self.port = port
        self.log_path = log_path
        self.build = build
        self.api_key = api_key or secrets.token_urlsafe(24)
        self.ready_after_s: float | None = None  # launch -> first 200 from /health
        self.props: dict[str, Any] = {}  # what /props reported, for the manifest
        self._proc: subprocess.Popen[bytes] | None = None
        self._launched_at = 0.0

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        binary = self.build.binary if self.build else locate().binary
        return server_command(binary, self.model_path, self.port, self.spec)

    def environment(self) -> dict[str, str]:
        return server_environment(self.api_key)

    def identity(self) -> dict[str, Any]:
        """What this server's replies depend on (pipeline/endpoints/local_identity.py)."""
        binary = self.build.binary if self.build else locate().binary
        return server_identity(self.command(), self.model_path, template_path(self.spec), binary)

    def launch(self) -> None:
        """Spawn the process in its own session; stdout and stderr go to the log (appended).

        The process dies with the thread that launches it (`die_with_parent`), so a SIGKILLed
        driver leaves no server behind (issue 32 §9b); launch it from a thread that lives as
        long as the server should (the engine's "local-servers" loop thread)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log_file:
            log_file.write(f"\n=== launch {datetime.now(UTC).isoformat()} ===\n".encode())
            log_file.flush()
            self._proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=self.environment(),
                preexec_fn=die_with_parent(),  # noqa: PLW1509 - prctl only, no locks taken
            )
        self._launched_at = time.monotonic()
        self.ready_after_s = None
        _live_groups.add(self._proc.pid)

    def exit_code(self) -> int | None:
        """None while the process runs (or was never launched), else its returncode."""
        return self._proc.poll() if self._proc else None

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"}

    async def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> float:
        """Poll /health until 200; seconds since launch. Fails fast if the process exits."""
        deadline = time.monotonic() + timeout_s
        probe_timeout = aiohttp.ClientTimeout(total=2.0)
        root = self.base_url.removesuffix("/v1")
        async with aiohttp.ClientSession(timeout=probe_timeout) as session:
            while True:
                code = self.exit_code()
                if code is not None:
                    raise self.failure(f"{explain_exit(code)} before it was ready")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(f"{root}/health") as response:
                        if response.status == 200:
                            self.ready_after_s = time.monotonic() - self._launched_at
                            return self.ready_after_s
                if time.monotonic() > deadline:
                    raise self.failure(f"not ready after {timeout_s:.0f} s")
                await asyncio.sleep(0.2)

    async def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the process group, SIGKILL it after `grace_s`; idempotent."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            _kill_group(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(proc.wait, grace_s)
        _kill_group(proc.pid, signal.SIGKILL)  # also any straggler left in the group
        await asyncio.to_thread(proc.wait)
        _live_groups.discard(proc.pid)

    def failure(self, what: str) -> LocalServerError:
        """One line: which server, what happened, the log's last line and path."""
        return LocalServerError(
            f"local server {self.config_id} (port {self.port}) {what} "
            f"[log {self.log_path}: {last_log_line(self.log_path)}]"
        )


def threads_per_server(servers: int) -> int:
    """The cores split evenly over servers that run at once (at least one thread each)."""
    return max(1, (os.cpu_count() or 1) // max(servers, 1))


def build_servers(
    configs: Sequence[EndpointConfig],
    log_dir: Path,
    *,
    ports: Mapping[str, int] | None = None,
    cache: Path | None = None,
    api_key: str | None = None,
) -> list[LocalServer]:
    """One LocalServer per configuration: binary and weights located, port chosen, one key."""
    binary = locate()  # before any weight is assembled or process spawned
    key = api_key or secrets.token_urlsafe(24)
    servers: list[LocalServer] = []
    taken: set[int] = set()
    for config in configs:
        if config.local is None:
            raise LocalServerError(f"configuration {config.config_id} has no 'local:' block")
        path = locate_weights(config.local.source, cache=cache)
        port = (ports or {}).get(config.config_id) or pick_free_port()
        while port in taken:  # two port-0 binds can return the same port
            port = pick_free_port()
        taken.add(port)
        log_path = log_dir / f"{config.config_id}.log"
        spec = config.local
        if spec.n_threads is None:
            spec = dataclasses.replace(spec, n_threads=threads_per_server(len(configs)))
        template = template_path(spec)
        if template is not None and not template.is_file():
            raise LocalServerError(f"{config.config_id}: chat template {template} not found")
        servers.append(
            LocalServer(config.config_id, spec, path, port, log_path, build=binary, api_key=key)
        )
    return servers


def load_local_panel() -> PanelConfig:
    """conf/panel/local.yaml as a typed PanelConfig (the serve command needs no Hydra run)."""
    data = OmegaConf.to_container(OmegaConf.load(conf_dir() / "panel" / "local.yaml"))
    return build(PanelConfig, data)
