"""Loopback test servers run on a private event loop in a daemon thread.

- `CountingServer` answers nothing useful and counts every request: a bad-input test points a
  panel at it to prove that no request was sent.
- `HostileServer` answers chat requests with hostile replies (`HOSTILE_KINDS`), or forwards them
  to a real SimServer ("good"), following a fixed cycle of kinds per request index. It counts
  what it sent, including the bytes of huge bodies.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

import aiohttp
from aiohttp import web

JSON = "application/json"
HUGE_BYTES = 100 * 1024 * 1024
_MIB = b"x" * (1024 * 1024)

HOSTILE_KINDS = (
    "huge",  # 200, chunked, 100 MB without Content-Length
    "huge_declared",  # 200, Content-Length 100 MB, streamed
    "truncated",  # 200, Content-Length twice what is sent, then the connection closes
    "not_json",  # 200, application/json, an HTML page
    "bad_utf8",  # 200, bytes that are not UTF-8
    "stall",  # no response at all (until the client gives up)
    "stall_body",  # headers and half a body, then nothing
)


class LoopThread:
    """An event loop in a daemon thread; `call` runs a coroutine on it and waits."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def call(self, coro: Any, timeout_s: float = 30.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout_s)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class _Served:
    """An aiohttp app bound to 127.0.0.1:0 on a LoopThread."""

    def __init__(self) -> None:
        self.thread = LoopThread()
        self.runner: web.AppRunner | None = None
        self.base_url = ""

    def app(self) -> web.Application:
        raise NotImplementedError

    async def _start(self) -> str:
        self.runner = web.AppRunner(self.app(), access_log=None, shutdown_timeout=1.0)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{self.runner.addresses[0][1]}/v1"

    def start(self) -> str:
        self.base_url = self.thread.call(self._start())
        return self.base_url

    async def _cleanup(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    def stop(self) -> None:
        self.thread.call(self._cleanup())
        self.thread.close()


class CountingServer(_Served):
    """Counts every request on any path; answers 503."""

    def __init__(self) -> None:
        super().__init__()
        self.requests = 0

    def app(self) -> web.Application:
        async def count(request: web.Request) -> web.StreamResponse:
            self.requests += 1
            return web.Response(status=503)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", count)
        return app


class HostileServer(_Served):
    """Chat requests get the kinds of `cycle` in turn; "good" forwards to `backend_url`."""

    def __init__(self, cycle: Sequence[str], backend_url: str | None = None) -> None:
        super().__init__()
        self.cycle = tuple(cycle)
        self.backend_url = backend_url
        self.sent: Counter[str] = Counter()
        self.huge_bytes_sent = 0
        self.index = 0
        self._stop = asyncio.Event()
        self._session: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._forward)
        return app

    async def _cleanup(self) -> None:
        self._stop.set()
        if self._session is not None:
            await self._session.close()
        await super()._cleanup()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        kind = self.cycle[self.index % len(self.cycle)]
        self.index += 1
        self.sent[kind] += 1
        if kind == "good":
            return await self._forward(request)
        return await self._hostile(kind, request)

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self.backend_url is not None, "no backend to forward good requests to"
        if self._session is None:
            self._session = aiohttp.ClientSession()
        url = self.backend_url.rstrip("/") + request.path.removeprefix("/v1")
        body = await request.read()
        async with self._session.request(
            request.method, url, data=body or None, headers={"Content-Type": "application/json"}
        ) as upstream:
            payload = await upstream.read()
            return web.Response(
                status=upstream.status, body=payload, content_type="application/json"
            )

    async def _hostile(self, kind: str, request: web.Request) -> web.StreamResponse:
        if kind == "not_json":
            return web.Response(text="<html>502 bad gateway</html>", content_type=JSON)
        if kind == "bad_utf8":
            return web.Response(body=b'{"choices": "\xff\xfe\xc3("}', content_type=JSON)
        if kind == "stall":
            await self._stall()
            return web.Response(status=504)
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        if kind == "huge_declared":
            response.content_length = HUGE_BYTES
        if kind in ("truncated", "stall_body"):
            response.content_length = 2048
        await response.prepare(request)
        if kind in ("truncated", "stall_body"):
            await response.write(json.dumps({"choices": [{"index": 0}]}).encode())
            if kind == "stall_body":
                await self._stall()
            if request.transport is not None:
                request.transport.close()
            return response
        with contextlib.suppress(ConnectionError, RuntimeError):
            for _ in range(HUGE_BYTES // len(_MIB)):
                await response.write(_MIB)
                self.huge_bytes_sent += len(_MIB)
            await response.write_eof()
        return response

    async def _stall(self) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=3600)
