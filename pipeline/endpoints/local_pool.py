"""Start, self-test, supervise and stop the local servers of a panel.

- **Self-test before the sweep.** Answering /health proves only that the model loaded. The
  first completion is where a build with instructions this CPU lacks dies (SIGILL, issue 9),
  so every server answers one tiny completion before any probe or unit is sent. A server
  that dies there is relaunched at most `max_restarts` times; then start() raises one line
  naming the signal, its meaning and the fix, and no probe verdict or empty run is made of it.
- **Supervision during the sweep.** A watcher per server relaunches a crashed process on the
  same port (the client's base URL stays valid) and records a `ServerRestart`. Requests in
  flight fail at the client as transport faults and are retried by the retry layer. After
  `max_restarts` crashes of one server the pool stops restarting it and calls `on_fatal` with
  one line, which stops the sweep: a crash loop is not turned into retried attempts.
- **What differs from a hosted endpoint** is recorded: `describe()` gives, per server, the
  build (flags, version), the command line without secrets, and what /props reports (slots,
  context per slot, chat template digest) for the manifest; `identities()` gives what its
  replies depend on (weights, template, output flags, build), the response cache's name for it.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp

from pipeline.endpoints.local import READY_TIMEOUT_S, STOP_GRACE_S, LocalServer, LocalServerError
from pipeline.endpoints.server_deaths import explain_exit, signal_name

MAX_RESTARTS = 2
# How the local server differs from a hosted endpoint, for every run's manifest.
HOSTED_DIFFERENCES = (
    "schemas are compiled to a GBNF grammar by llama.cpp's JSON-schema converter and sent as "
    "the arms declare them (no maxLength adaptation; schema_adapted is false)",
    "no provider pinning, quantization choice or prices: cost_usd is 0",
    "each slot keeps a prefix cache: cached_tokens counts its hits, and a reply can depend on "
    "the request the slot served before",
    "the GGUF's own chat template, or the configured template file, renders the prompt",
)
SELF_TEST_TIMEOUT_S = 60.0
_SELF_TEST_BODY = {
    "messages": [{"role": "user", "content": "Reply with OK."}],
    "max_tokens": 2,
    "temperature": 0,
}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServerRestart:
    """One crash the supervisor saw: for the sweep's event log and manifest."""

    config_id: str
    at: datetime  # when the crash was detected (UTC)
    exit_code: int | None  # Popen returncode; negative = killed by that signal
    restarted: bool  # relaunched; False once the server had used up its restarts
    signal: str | None = None  # e.g. SIGILL, from a negative exit code


OnRestart = Callable[[ServerRestart], None]
OnFatal = Callable[[str], None]


async def self_test(server: LocalServer, timeout_s: float = SELF_TEST_TIMEOUT_S) -> None:
    """One tiny completion; raises LocalServerError naming how the process died, if it did."""
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    url = f"{server.base_url}/chat/completions"
    try:
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, json=_SELF_TEST_BODY, headers=server.headers()) as response,
        ):
            text = await response.text()
            if response.status != 200:
                raise server.failure(
                    f"answered its first completion with HTTP {response.status}: {text[:160]}"
                )
    except (aiohttp.ClientError, TimeoutError) as exc:
        code = await _exit_code_soon(server)
        if code is not None:
            raise server.failure(f"{explain_exit(code)} (on its first completion)") from None
        raise server.failure(f"did not answer its first completion ({exc!r})") from None
    code = await _exit_code_soon(server, wait_s=0.2)
    if code is not None:
        raise server.failure(f"{explain_exit(code)} (right after its first completion)")


async def _exit_code_soon(server: LocalServer, wait_s: float = 2.0) -> int | None:
    """The exit code if the process ends within `wait_s` (a dying process closes first)."""
    deadline = asyncio.get_running_loop().time() + wait_s
    while True:
        code = server.exit_code()
        if code is not None or asyncio.get_running_loop().time() > deadline:
            return code
        await asyncio.sleep(0.05)


async def read_props(server: LocalServer) -> dict[str, Any]:
    """What the server says about itself, trimmed to what a reader of the manifest needs."""
    root = server.base_url.removesuffix("/v1")
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5.0)) as session,
        session.get(f"{root}/props", headers=server.headers()) as response,
    ):
        if response.status != 200:
            return {"props_status": response.status}
        props: dict[str, Any] = await response.json(content_type=None)
    settings = props.get("default_generation_settings") or {}
    template = str(props.get("chat_template") or "")
    return {
        "build_info": props.get("build_info"),
        "total_slots": props.get("total_slots"),
        "n_ctx_per_slot": settings.get("n_ctx"),
        "chat_template_sha256": hashlib.sha256(template.encode()).hexdigest(),
        "model_alias": props.get("model_alias"),
    }


class LocalServerPool:
    """Servers for a set of local configurations: start all, self-test, supervise, stop all.

    Use as ``async with LocalServerPool(...) as pool:`` (or await start()/stop()).
    """

    def __init__(
        self,
        servers: Sequence[LocalServer],
        *,
        ready_timeout_s: float = READY_TIMEOUT_S,
        check_interval_s: float = 0.5,
        grace_s: float = STOP_GRACE_S,
        max_restarts: int = MAX_RESTARTS,
        on_restart: OnRestart | None = None,
        on_fatal: OnFatal | None = None,
    ) -> None:
        self.servers = {server.config_id: server for server in servers}
        self._ready_timeout_s = ready_timeout_s
        self._check_interval_s = check_interval_s
        self._grace_s = grace_s
        self._max_restarts = max_restarts
        self._on_restart = on_restart
        self._on_fatal = on_fatal
        self._restarts: list[ServerRestart] = []
        self._crashes: dict[str, int] = {}
        self._watchers: list[asyncio.Task[None]] = []

    @property
    def restarts(self) -> tuple[ServerRestart, ...]:
        return tuple(self._restarts)

    def base_url(self, config_id: str) -> str:
        """``http://127.0.0.1:PORT/v1`` of a configuration's server."""
        return self.servers[config_id].base_url

    def describe(self) -> dict[str, Any]:
        """Per server: build, argv (no secrets: the key is in the environment), /props."""
        return {
            cid: {
                "server": "llama-server",
                "argv": server.command(),
                "build": server.build.info if server.build else None,
                "props": server.props,
                "ready_after_s": server.ready_after_s,
                "differs_from_hosted": list(HOSTED_DIFFERENCES),
            }
            for cid, server in self.servers.items()
        }

    def identities(self) -> dict[str, dict[str, Any]]:
        """Per server, what its replies depend on: the response cache's name for it
        (pipeline/endpoints/local_identity.py; issue 32)."""
        return {cid: server.identity() for cid, server in self.servers.items()}

    async def start(self) -> None:
        """Launch every server, wait for /health, self-test, then start supervising."""
        tasks: list[asyncio.Task[None]] = []
        try:
            for server in self.servers.values():
                server.launch()
            tasks = [asyncio.create_task(self._bring_up(s)) for s in self.servers.values()]
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:  # a sibling still starting must not outlive the failure
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self._stop_servers()
            raise
        for server in self.servers.values():
            log.info("local server %s ready in %.1f s", server.config_id, server.ready_after_s)
        self._watchers = [asyncio.create_task(self._watch(s)) for s in self.servers.values()]

    async def _bring_up(self, server: LocalServer) -> None:
        """Ready + self-test, relaunching a server that dies at most `max_restarts` times."""
        while True:
            try:
                await server.wait_ready(self._ready_timeout_s)
                await self_test(server)
                server.props = await read_props(server)
                return
            except LocalServerError as exc:
                code = server.exit_code()
                if code is None or not self._may_restart(server, code):
                    tries = self._crashes.get(server.config_id, 0)
                    suffix = f" (after {tries} restart(s))" if tries else ""
                    raise LocalServerError(f"{exc}{suffix}") from None
                log.warning("local server %s: %s; relaunching", server.config_id, exc)
                await server.stop(self._grace_s)
                server.launch()

    def _may_restart(self, server: LocalServer, code: int) -> bool:
        """Count a crash; False once the server has used up its restarts."""
        crashes = self._crashes.get(server.config_id, 0)
        at = datetime.now(UTC)
        if crashes >= self._max_restarts:
            self._record(ServerRestart(server.config_id, at, code, False, signal_name(code)))
            return False
        self._crashes[server.config_id] = crashes + 1
        self._record(ServerRestart(server.config_id, at, code, True, signal_name(code)))
        return True

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
        """Relaunch `server` whenever its process has exited, until its restarts are used up."""
        while True:
            await asyncio.sleep(self._check_interval_s)
            code = server.exit_code()
            if code is None:
                continue
            if not self._may_restart(server, code):
                await server.stop(self._grace_s)
                message = server.failure(
                    f"{explain_exit(code)} (crashed {self._max_restarts + 1} times; "
                    "not restarted again)"
                )
                log.error("%s", message)
                if self._on_fatal is not None:
                    self._on_fatal(str(message))
                return
            log.warning("local server %s %s; restarting", server.config_id, explain_exit(code))
            await server.stop(self._grace_s)  # reap the process, clear its group
            server.launch()
            try:
                await server.wait_ready(self._ready_timeout_s)
            except LocalServerError as exc:
                log.error("restart of %s failed: %s", server.config_id, exc)

    def _record(self, event: ServerRestart) -> None:
        self._restarts.append(event)
        if self._on_restart is not None:
            self._on_restart(event)
