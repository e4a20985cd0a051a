"""Managed local llama.cpp servers for the embedded default panel: start, health, supervise, stop.

One `LocalServer` is one `python -m llama_cpp.server` process on a loopback port; a
`LocalServerPool` runs one per local configuration of a panel. Decisions (docs/parts/local.md):

- Flags: ``--interrupt_requests False`` (the default silently cuts off a running request when a
  new one arrives) and ``--logits_all False`` (otherwise Gemma's 262k vocabulary costs GBs);
  2 threads; ``--chat_format`` only when the spec names one (Gemma's GGUF has no template).
- Readiness is GET /v1/models answering 200 (the server has no /health), polled with a bounded
  timeout; a process that exits first fails at once with the tail of its log.
- Each process gets its own session (process group), so a terminal's Ctrl-C does not reach it
  mid-request and stop() can kill the whole group: SIGTERM, then SIGKILL after a grace period.
  An atexit hook kills any group still alive, so an interrupted caller leaves no orphans (only a
  SIGKILLed parent can; the log directory names each pid).
- Supervision: a watcher task per server restarts a crashed process on the same port (the
  client's base URL stays valid) and records a `ServerRestart`. Requests in flight when it
  crashes fail at the client as transport faults and are retried by the retry layer; a
  maxLength > 1000 schema crashes this server, which is why the supervisor exists.
- The server answers one request at a time; the panel sets concurrency 1 for it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
from omegaconf import OmegaConf

from pipeline.commands.args import CommandParser
from pipeline.config.load import conf_dir
from pipeline.config.schema import EndpointConfig, LocalModelSpec, PanelConfig
from pipeline.config.strict import build
from pipeline.endpoints.local_weights import locate_weights
from pipeline.usererror import UserError

HOST = "127.0.0.1"
THREADS = 2
READY_TIMEOUT_S = 120.0
STOP_GRACE_S = 5.0
LOG_TAIL_LINES = 15

log = logging.getLogger(__name__)
_live_groups: set[int] = set()  # process groups to kill at interpreter exit (orphan backstop)


class LocalServerError(UserError):
    """A local server did not start or answer; the message carries its log tail and path."""


@dataclass(frozen=True)
class ServerRestart:
    """One crash the supervisor saw: for the sweep's event log and manifest."""

    config_id: str
    at: datetime  # when the crash was detected (UTC)
    exit_code: int | None  # Popen returncode; negative = killed by that signal
    recovered: bool  # the restarted process answered /v1/models again


def require_llama_cpp() -> None:
    """Fail with the install command before any process is spawned."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalServerError("llama-cpp-python is not installed; run: pip install -e '.[local]'")


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


def server_command(
    model_path: Path, port: int, spec: LocalModelSpec, *, python: str = sys.executable
) -> list[str]:
    """The argv of one llama-cpp-python server (see the module docstring for each flag)."""
    argv = [
        python, "-m", "llama_cpp.server",
        "--model", str(model_path),
        "--host", HOST,
        "--port", str(port),
        "--n_ctx", str(spec.n_ctx),
        "--n_threads", str(spec.n_threads or THREADS),
        "--n_threads_batch", str(spec.n_threads or THREADS),
        "--interrupt_requests", "False",
        "--logits_all", "False",
    ]  # fmt: skip
    if spec.chat_format:
        argv += ["--chat_format", spec.chat_format]
    return argv


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of a server log, for error messages."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - 8192))
            text = handle.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log written)"
    return "\n".join(text.splitlines()[-lines:])


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


@atexit.register
def _kill_live_groups() -> None:
    for pgid in list(_live_groups):
        _kill_group(pgid, signal.SIGKILL)


class LocalServer:
    """One llama-cpp-python server process; relaunchable on the same port."""

    def __init__(
        self, config_id: str, spec: LocalModelSpec, model_path: Path, port: int, log_path: Path
    ) -> None:
        self.config_id = config_id
        self.spec = spec
        self.model_path = model_path
        self.port = port
        self.log_path = log_path
        self.ready_after_s: float | None = None  # launch -> first 200 from /v1/models
        self._proc: subprocess.Popen[bytes] | None = None
        self._launched_at = 0.0

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def command(self) -> list[str]:
        return server_command(self.model_path, self.port, self.spec)

    def launch(self) -> None:
        """Spawn the process in its own session; stdout and stderr go to the log (appended)."""
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
            )
        self._launched_at = time.monotonic()
        self.ready_after_s = None
        _live_groups.add(self._proc.pid)

    def exit_code(self) -> int | None:
        """None while the process runs (or was never launched), else its returncode."""
        return self._proc.poll() if self._proc else None

    async def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> float:
        """Poll /v1/models until 200; seconds since launch. Fails fast if the process exits."""
        deadline = time.monotonic() + timeout_s
        probe_timeout = aiohttp.ClientTimeout(total=2.0)
        async with aiohttp.ClientSession(timeout=probe_timeout) as session:
            while True:
                code = self.exit_code()
                if code is not None:
                    raise self._failure(f"exited with code {code} before it was ready")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(f"{self.base_url}/models") as response:
                        if response.status == 200:
                            self.ready_after_s = time.monotonic() - self._launched_at
                            return self.ready_after_s
                if time.monotonic() > deadline:
                    raise self._failure(f"not ready after {timeout_s:.0f} s")
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

    def _failure(self, what: str) -> LocalServerError:
        return LocalServerError(
            f"local server {self.config_id} on port {self.port} {what}; "
            f"log {self.log_path}:\n{log_tail(self.log_path)}"
        )


OnRestart = Callable[[ServerRestart], None]


class LocalServerPool:
    """Servers for a set of local configurations: start all, supervise, stop all.

    Use as ``async with LocalServerPool(...) as pool:`` (or await start()/stop()).
    `restarts` lists every crash seen; `on_restart` is called for each as it happens.
    """

    def __init__(
        self,
        servers: Sequence[LocalServer],
        *,
        ready_timeout_s: float = READY_TIMEOUT_S,
        check_interval_s: float = 0.5,
        grace_s: float = STOP_GRACE_S,
        max_restarts: int = 5,
        on_restart: OnRestart | None = None,
    ) -> None:
        self.servers = {server.config_id: server for server in servers}
        self._ready_timeout_s = ready_timeout_s
        self._check_interval_s = check_interval_s
        self._grace_s = grace_s
        self._max_restarts = max_restarts
        self._on_restart = on_restart
        self._restarts: list[ServerRestart] = []
        self._watchers: list[asyncio.Task[None]] = []

    @property
    def restarts(self) -> tuple[ServerRestart, ...]:
        return tuple(self._restarts)

    def base_url(self, config_id: str) -> str:
        """``http://127.0.0.1:PORT/v1`` of a configuration's server."""
        return self.servers[config_id].base_url

    async def start(self) -> None:
        """Launch every server, wait until all answer, then start supervising."""
        require_llama_cpp()
        try:
            for server in self.servers.values():
                server.launch()
            await asyncio.gather(
                *(s.wait_ready(self._ready_timeout_s) for s in self.servers.values())
            )
        except BaseException:
            await self._stop_servers()
            raise
        for server in self.servers.values():
            log.info("local server %s ready in %.1f s", server.config_id, server.ready_after_s)
        self._watchers = [asyncio.create_task(self._watch(s)) for s in self.servers.values()]

    async def stop(self) -> None:
        """Stop supervising, then stop every server (no process is left behind)."""
        for task in self._watchers:
            task.cancel()
        await asyncio.gather(*self._watchers, return_exceptions=True)
        self._watchers = []
        await self._stop_servers()

    async def __aenter__(self) -> LocalServerPool:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def _stop_servers(self) -> None:
        await asyncio.gather(*(s.stop(self._grace_s) for s in self.servers.values()))

    async def _watch(self, server: LocalServer) -> None:
        """Restart `server` on its port whenever its process has exited, up to max_restarts."""
        attempts = 0
        while True:
            await asyncio.sleep(self._check_interval_s)
            code = server.exit_code()
            if code is None:
                continue
            at = datetime.now(UTC)
            if attempts >= self._max_restarts:
                log.error("local server %s: gave up after %d restarts", server.config_id, attempts)
                self._record(ServerRestart(server.config_id, at, code, recovered=False))
                await server.stop(self._grace_s)
                return
            attempts += 1
            log.warning("local server %s exited (code %s); restarting", server.config_id, code)
            await server.stop(self._grace_s)  # reap the process, clear its group
            server.launch()
            try:
                await server.wait_ready(self._ready_timeout_s)
                recovered = True
            except LocalServerError as exc:
                log.error("restart of %s failed: %s", server.config_id, exc)
                await server.stop(self._grace_s)
                recovered = False
            self._record(ServerRestart(server.config_id, at, code, recovered))

    def _record(self, event: ServerRestart) -> None:
        self._restarts.append(event)
        if self._on_restart is not None:
            self._on_restart(event)


def threads_per_server(servers: int) -> int:
    """The cores split evenly over servers that run at once (at least one thread each)."""
    return max(1, (os.cpu_count() or 1) // max(servers, 1))


def build_servers(
    configs: Sequence[EndpointConfig],
    log_dir: Path,
    *,
    ports: Mapping[str, int] | None = None,
    cache: Path | None = None,
) -> list[LocalServer]:
    """One LocalServer per configuration: weights located (Gemma assembled), port chosen."""
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
        servers.append(LocalServer(config.config_id, spec, path, port, log_path))
    return servers


def load_local_panel() -> PanelConfig:
    """conf/panel/local.yaml as a typed PanelConfig (the serve command needs no Hydra run)."""
    data = OmegaConf.to_container(OmegaConf.load(conf_dir() / "panel" / "local.yaml"))
    return build(PanelConfig, data)


def serve_main(argv: list[str]) -> int:
    """`python -m pipeline serve local`: serve local model(s) until SIGINT or SIGTERM.

    Prints one line per server on stdout, `BASE_URL CONFIG_ID`, flushed once all are ready
    (the same shape as `serve sim`); the log directory and restarts go to stderr.
    """
    parser = CommandParser(
        "serve local",
        description="Serve the embedded panel's local models (OpenAI-compatible, loopback).",
    )
    parser.add_argument("--model", choices=("smollm2", "gemma3", "all"), default="smollm2")
    parser.add_argument(
        "--port", type=int, help="port of the first server; the next take the following ports"
    )
    parser.add_argument("--log-dir", type=Path, help="server logs (default: a new temp dir)")
    args = parser.parse_args(argv)
    configs = [
        config
        for config in load_local_panel().configs
        if config.local is not None and args.model in ("all", config.family)
    ]
    if not configs:
        raise LocalServerError(f"conf/panel/local.yaml has no local model of family {args.model}")
    ports: dict[str, int] = {}
    if args.port is not None:
        for offset, config in enumerate(configs):
            ensure_port_free(args.port + offset)
            ports[config.config_id] = args.port + offset
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="foldsweep-local-"))
    servers = build_servers(configs, log_dir, ports=ports)
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # stop like Ctrl-C
    try:
        asyncio.run(_serve(servers, log_dir))
    except KeyboardInterrupt:
        pass  # interrupted during start-up: the pool has already stopped its servers
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


async def _serve(servers: list[LocalServer], log_dir: Path) -> None:
    def report(event: ServerRestart) -> None:
        state = "restarted" if event.recovered else "NOT restarted"
        print(f"{event.config_id} exited with {event.exit_code}; {state}", file=sys.stderr)

    async with LocalServerPool(servers, on_restart=report):
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        for server in servers:
            print(f"{server.base_url} {server.config_id}", flush=True)
        print(f"logs in {log_dir}; stop with Ctrl-C", file=sys.stderr, flush=True)
        await stop.wait()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
