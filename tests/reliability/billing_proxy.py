"""A loopback proxy in front of a real SimServer that bills like a provider (issue 31).

The sim answers the carrier protocol for real; the proxy changes only the money and the
envelope, as providers and gateways do:
- `strip_usage`: the reply's `usage` object is removed (some OpenAI-compatible gateways);
- `charge_factor`: `usage.cost` is added, the proxy's own bill (OpenRouter's billed charge);
- `credits_after`: from that chat request on, an OpenRouter-style 402 "insufficient credits";
- `rate_limit_every`: every k-th chat request first gets a 429 with `retry-after: 0`.

Its own bill (`billed_usd`) prices the sim's token counts at its own prices, whatever it
sends, so a test can hold the engine's spend against what the endpoint would charge.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
from aiohttp import web

from tests.reliability.servers import _Served

JSON = "application/json"
CREDITS_402 = {
    "error": {
        "code": 402,
        "message": "Insufficient credits. Add more using https://openrouter.ai/settings/credits",
    }
}


class BillingProxy(_Served):
    def __init__(
        self,
        backend_url: str,
        *,
        input_per_mtok: float,
        output_per_mtok: float,
        strip_usage: bool = False,
        charge_factor: float | None = None,
        credits_after: int | None = None,
        rate_limit_every: int | None = None,
    ) -> None:
        super().__init__()
        self.backend_url = backend_url
        self.prices = (input_per_mtok, output_per_mtok)
        self.strip_usage = strip_usage
        self.charge_factor = charge_factor
        self.credits_after = credits_after
        self.rate_limit_every = rate_limit_every
        self.chat_requests = 0  # chat POSTs received, refused ones included
        self.answered = 0  # chat requests answered 200
        self.billed_usd = 0.0  # the proxy's own bill for what it answered
        self.charges: list[float] = []  # usage.cost as sent, in order
        self.refused_402 = 0
        self.limited_429 = 0
        self._limited: set[int] = set()
        self._session: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_route("*", "/v1/{tail:.*}", self._plain)
        return app

    async def _cleanup(self) -> None:
        if self._session is not None:
            await self._session.close()
        await super()._cleanup()

    async def _upstream(self, request: web.Request) -> tuple[int, bytes]:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        url = self.backend_url.rstrip("/") + request.path.removeprefix("/v1")
        body = await request.read()
        async with self._session.request(
            request.method, url, data=body or None, headers={"Content-Type": JSON}
        ) as upstream:
            return upstream.status, await upstream.read()

    async def _plain(self, request: web.Request) -> web.StreamResponse:
        status, payload = await self._upstream(request)
        return web.Response(status=status, body=payload, content_type=JSON)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        self.chat_requests += 1
        index = self.chat_requests
        if self.credits_after is not None and index > self.credits_after:
            self.refused_402 += 1
            return web.json_response(CREDITS_402, status=402)
        every = self.rate_limit_every
        if every is not None and index % every == 0 and index not in self._limited:
            self._limited.add(index + 1)  # the retry arrives as the next request
            self.limited_429 += 1
            error = {"error": {"code": 429, "message": "Rate limit exceeded: free-models-per-min"}}
            return web.json_response(error, status=429, headers={"retry-after": "0"})
        status, payload = await self._upstream(request)
        if status != 200:
            return web.Response(status=status, body=payload, content_type=JSON)
        reply: dict[str, Any] = json.loads(payload)
        usage = reply.get("usage") or {}
        cost = (
            usage.get("prompt_tokens", 0) * self.prices[0]
            + usage.get("completion_tokens", 0) * self.prices[1]
        ) / 1e6
        self.answered += 1
        self.billed_usd += cost
        if self.strip_usage:
            reply.pop("usage", None)
        elif self.charge_factor is not None:
            charge = round(cost * self.charge_factor, 10)
            reply["usage"] = {**usage, "cost": charge}
            self.charges.append(charge)
        return web.Response(body=json.dumps(reply).encode(), content_type=JSON)
