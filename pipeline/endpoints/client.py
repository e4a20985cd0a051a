"""OpenAI-compatible chat client on aiohttp: the only place a chat request meets the network.

`OpenAIChatClient` implements pipeline.chat.messages.ChatClient. Each attempt (retries included)
takes a concurrency slot and a rate admission from the endpoint's `EndpointLimiter`, POSTs
`{base_url}/chat/completions` (base_url like http://127.0.0.1:PORT/v1, trailing slash
stripped), reads at most `max_body_bytes`, and maps every outcome into the tree of
pipeline.chat.errors: third-party exceptions are mapped here (`raise Ours(...) from exc`),
statuses by the pure http_status policy, and the request-level retry policy decides retries.

The API key is a value handed in by the caller (read from os.environ[endpoint.api_key_env]). It
is sent only as `Authorization: Bearer`, and scrubbed from every text that could reach an
exception message, a log or a stored reply.
Wire formats (response_format, reasoning, provider pin) are built in `pipeline.endpoints.wire`.

It also implements pipeline.chat.messages.TemplateRenderer: `apply_template` POSTs the
request's template-facing fields to `<server root>/apply-template` (pipeline.endpoints.template)
through the same limiter (`admit_aside`: counted against the rate limits, but not holding one
of the generation slots), retry policy, timeouts and auth header: the server renders the
template and evaluates nothing. `count_tokens` (the
TokenCounter capability) POSTs `{"content": text}` to `<server root>/tokenize`
(pipeline.endpoints.tokenize) the same way.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp

from pipeline.chat.errors import (
    EndpointError,
    InfrastructureFault,
    MalformedEnvelope,
    RequestRejected,
    TimeoutFault,
    TransportFault,
)
from pipeline.chat.messages import ChatRequest, ChatResponse
from pipeline.config.schema import EndpointConfig, RetryConfig, TimeoutConfig
from pipeline.endpoints.exchange import (
    Exchange,
    Recorder,
    SentAttempt,
    kept_headers,
    request_sha256,
)
from pipeline.endpoints.http_status import server_wait, status_error
from pipeline.endpoints.limits import EndpointLimiter, Limiter
from pipeline.endpoints.retry import RetryPolicy, build_retry
from pipeline.endpoints.template import (
    TEMPLATE_PATH,
    parse_prompt,
    server_root,
    template_body,
    template_status_error,
)
from pipeline.endpoints.tokenize import (
    TOKENIZE_PATH,
    parse_token_count,
    tokenize_body,
    tokenize_status_error,
)
from pipeline.endpoints.wire import (
    build_body,
    check_endpoint_forms,
    encode_body,
    parse_models,
    parse_reply,
    sampling_fields,
)

StatusPolicy = Callable[..., EndpointError | None]

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024  # a chat reply; far above any max_tokens we send
MODELS_MAX_BODY_BYTES = 32 * 1024 * 1024  # a hosted /models listing is a few MiB
CHARS_PER_TOKEN_ESTIMATE = 3  # conservative (English ~4, Cyrillic ~2-3) for tpm admission
MESSAGE_OVERHEAD_TOKENS = 4
_CHUNK = 64 * 1024


@dataclass(frozen=True)
class EncodedRequest:
    """A chat request with its body serialised once: what is hashed is what is sent."""

    request: ChatRequest
    payload: bytes
    adapted: bool  # the schema was relaxed for this server
    sampling: dict[str, Any]  # the body's sampling fields (ChatResponse.sent_sampling)


def make_session(timeouts: TimeoutConfig) -> aiohttp.ClientSession:
    """One session per actor. `limit=0`: the per-endpoint semaphore caps concurrency instead of
    the connector's default 100-connection pool (which starved other coroutines)."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=0),
        timeout=aiohttp.ClientTimeout(total=timeouts.request_s, connect=timeouts.connect_s),
    )


def estimate_tokens(request: ChatRequest) -> int:
    """Tokens charged to the tpm limit before sending: prompt estimate + max_tokens.

    wire_messages are estimated from their JSON (reasoning fields and tool calls are prompt
    too, and the JSON's keys roughly stand in for the template's role markers); tools, which
    the template renders into the prompt, from theirs.
    """
    if request.wire_messages is not None:
        chars = len(json.dumps(list(map(dict, request.wire_messages)), default=str))
        count = len(request.wire_messages)
    else:
        chars = sum(len(m.content) for m in request.messages)
        count = len(request.messages)
    if request.tools is not None:
        chars += len(json.dumps(list(map(dict, request.tools)), default=str))
    prompt = math.ceil(chars / CHARS_PER_TOKEN_ESTIMATE)
    return prompt + MESSAGE_OVERHEAD_TOKENS * count + request.max_tokens


def map_client_exception(  # noqa: PLR0911 - one return per mapping row
    exc: aiohttp.ClientError | OSError, *, phase: str = "connect", scrub: Callable[[str], str] = str
) -> EndpointError:
    """Map a third-party exception into our tree. `phase` is "connect" until headers arrived,
    then "body": a connection lost mid-body is a truncated envelope, not a refused connection."""
    text = scrub(f"{type(exc).__name__}: {exc}")
    if isinstance(exc, TimeoutError):  # asyncio.TimeoutError and aiohttp.ServerTimeoutError
        return TimeoutFault(text)
    if isinstance(exc, aiohttp.ClientPayloadError):
        return MalformedEnvelope(text)
    if isinstance(exc, aiohttp.InvalidURL | aiohttp.NonHttpUrlClientError):
        return RequestRejected(0, text, reason="invalid_url")
    if isinstance(exc, aiohttp.TooManyRedirects | aiohttp.RedirectClientError):
        return RequestRejected(0, text, reason="redirect")
    if isinstance(exc, aiohttp.ClientResponseError):
        mapped = status_error(exc.status, text) if exc.status else None
        return mapped if mapped is not None else TransportFault(text)
    if phase == "body" and isinstance(exc, aiohttp.ClientConnectionError | OSError):
        return MalformedEnvelope(f"body cut off: {text}")
    return TransportFault(text)


async def read_capped(response: aiohttp.ClientResponse, max_bytes: int) -> bytes:
    """The body, refusing (MalformedEnvelope) anything over `max_bytes` without buffering it."""
    declared = response.content_length
    if declared is not None and declared > max_bytes:
        raise MalformedEnvelope(f"reply declares {declared} bytes, over the {max_bytes} cap")
    if declared is not None:  # aiohttp reads at most the declared length: one call is enough
        return await response.read()
    body = bytearray()
    async for chunk in response.content.iter_chunked(_CHUNK):
        body += chunk
        if len(body) > max_bytes:
            raise MalformedEnvelope(f"reply exceeds the {max_bytes}-byte cap")
    return bytes(body)


class OpenAIChatClient:
    """ChatClient for one served configuration; owned by that endpoint's actor."""

    def __init__(
        self,
        endpoint: EndpointConfig,
        session: aiohttp.ClientSession,
        limiter: Limiter,
        retry: RetryPolicy,
        *,
        api_key: str | None = None,
        send_seed: bool = True,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        wall_clock: Callable[[], float] = time.time,
        recorder: Recorder | None = None,
    ) -> None:
        check_endpoint_forms(endpoint)
        self.endpoint = endpoint
        self._session = session
        self._limiter = limiter
        self._retry = retry
        self._api_key = api_key or None
        self._send_seed = send_seed
        self._max_body_bytes = max_body_bytes
        self._wall_clock = wall_clock
        self._recorder = recorder  # endpoint.record: every chat exchange, response side
        self._base = endpoint.base_url.rstrip("/")
        self._root = server_root(endpoint.base_url)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            self._headers["Authorization"] = f"Bearer {self._api_key}"

    def __repr__(self) -> str:  # never show headers (the key) in a repr
        return f"OpenAIChatClient({self.endpoint.config_id!r}, {self._base!r})"

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    async def complete(self, request: ChatRequest) -> ChatResponse:
        return await self.send(self.encode(request))

    def encode(self, request: ChatRequest) -> EncodedRequest:
        """The request's body as it will be sent (the request boundary hashes these bytes)."""
        body, adapted = build_body(self.endpoint, request, send_seed=self._send_seed)
        return EncodedRequest(request, encode_body(body), adapted, sampling_fields(body))

    async def send(
        self, encoded: EncodedRequest, attempts: list[SentAttempt] | None = None
    ) -> ChatResponse:
        """POST an encoded request (retries, limiter and status policy as `complete`).

        `attempts`, when given, receives one SentAttempt per HTTP request actually sent
        (retries included), in order: the request boundary records each one.
        """
        payload = encoded.payload
        tokens = estimate_tokens(encoded.request)
        url = self._base + "/chat/completions"
        digest = request_sha256(payload) if self._recorder is not None else None

        async def attempt() -> ChatResponse:
            started = time.perf_counter()
            status: int | None = None  # known once a 2xx body is in hand
            try:
                text = await self._exchange("POST", url, payload, tokens, digest=digest)
                status = 200
                reply = parse_reply(
                    text,
                    self.endpoint.prices,
                    schema_adapted=encoded.adapted,
                    sent_sampling=encoded.sampling,
                )
            except EndpointError as exc:
                if attempts is not None:
                    latency = time.perf_counter() - started
                    attempts.append(SentAttempt.failed(exc, latency, status=status))
                raise
            if attempts is not None:
                attempts.append(SentAttempt(200, None, time.perf_counter() - started))
            used = reply.usage
            if used.prompt_tokens is not None and used.completion_tokens is not None:
                self._limiter.settle(tokens, used.prompt_tokens + used.completion_tokens)
            return reply

        return await self._retry.call(attempt)

    def encode_template(self, request: ChatRequest) -> bytes:
        """The body `apply_template` sends for `request`."""
        return encode_body(template_body(self.endpoint, request))

    async def apply_template(self, request: ChatRequest) -> str:
        """The prompt the server's own chat template makes of `request` (see the module doc)."""
        return await self.send_template(self.encode_template(request))

    async def send_template(self, payload: bytes) -> str:
        """POST an encoded template body (see `apply_template`)."""
        url = self._root + TEMPLATE_PATH

        async def attempt() -> str:
            text = await self._exchange(
                "POST", url, payload, 0, policy=template_status_error, aside=True
            )
            return parse_prompt(text)

        return await self._retry.call(attempt)

    async def count_tokens(self, text: str) -> int:
        """Tokens of `text` in the served vocabulary: POST `<server root>/tokenize`."""
        payload = tokenize_body(text)
        url = self._root + TOKENIZE_PATH

        async def attempt() -> int:
            text_ = await self._exchange(
                "POST", url, payload, 0, policy=tokenize_status_error, aside=True
            )
            return parse_token_count(text_)

        return await self._retry.call(attempt)

    async def served_context_length(self) -> int | None:
        """Context length `{base_url}/models` reports for this model (None if it says nothing).

        A 404 (no /models) raises RequestRejected; infrastructure faults raise after retries.
        """

        async def attempt() -> int | None:
            url = self._base + "/models"
            text = await self._exchange("GET", url, None, 0, MODELS_MAX_BODY_BYTES)
            return parse_models(text, self.endpoint.model)

        return await self._retry.call(attempt)

    async def _exchange(
        self,
        method: str,
        url: str,
        payload: bytes | None,
        tokens: int,
        cap: int | None = None,
        *,
        policy: StatusPolicy = status_error,
        digest: str | None = None,
        aside: bool = False,
    ) -> str:
        """One attempt: admission, HTTP exchange, status policy. Returns the 2xx body text.

        With a recorder and a `digest` (chat requests), the exchange is recorded, scrubbed,
        before its status is judged. `aside`: a request that generates nothing, admitted
        beside the generation slots (EndpointLimiter.admit_aside)."""
        admission = self._limiter.admit_aside() if aside else self._limiter.admit(tokens)
        async with admission:
            status, headers, raw = await self._send(method, url, payload, cap)
        if digest is not None and self._recorder is not None:
            body = self._scrub(raw.decode("utf-8", errors="replace"))
            self._recorder(Exchange(self.endpoint.model, digest, status, headers, body))
        if 200 <= status < 300:
            try:
                return self._scrub(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                raise MalformedEnvelope("reply body is not valid UTF-8") from exc
        text = self._scrub(raw.decode("utf-8", errors="replace"))
        wait = server_wait(headers, now=self._wall_clock())
        error = policy(status, text, retry_after=wait)
        if error is None:  # pragma: no cover - status_error returns None only for 2xx
            raise AssertionError(f"status policy gave no error for HTTP {status}")
        if wait and isinstance(error, InfrastructureFault):
            self._limiter.hold(wait)  # the server asked the whole endpoint to back off
        raise error

    async def _send(
        self, method: str, url: str, payload: bytes | None, cap: int | None
    ) -> tuple[int, dict[str, str], bytes]:
        phase = "connect"
        try:
            async with self._session.request(
                method, url, data=payload, headers=self._headers
            ) as response:
                phase = "body"
                raw = await read_capped(response, cap or self._max_body_bytes)
                return response.status, kept_headers(response.headers), raw
        except (aiohttp.ClientError, OSError) as exc:  # TimeoutError is an OSError
            raise map_client_exception(exc, phase=phase, scrub=self._scrub) from exc


@asynccontextmanager
async def open_client(
    endpoint: EndpointConfig,
    *,
    retry: RetryConfig,
    timeouts: TimeoutConfig,
    api_key: str | None = None,
    send_seed: bool = True,
    limiter: Limiter | None = None,
    retry_policy: RetryPolicy | None = None,
) -> AsyncIterator[OpenAIChatClient]:
    """A client with its own session (closed on exit), limiter and retry policy.

    Suits the probe's `client_factory` and one-shot tools; an actor that keeps a client for a
    whole sweep builds the same parts itself and closes its session at shutdown.
    """
    session = make_session(timeouts)
    try:
        yield OpenAIChatClient(
            endpoint,
            session,
            limiter if limiter is not None else EndpointLimiter(endpoint.limits),
            retry_policy if retry_policy is not None else build_retry(retry),
            api_key=api_key,
            send_seed=send_seed,
        )
    finally:
        await session.close()
