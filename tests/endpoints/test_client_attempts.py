"""Issue 31 at the HTTP client: one SentAttempt per request sent, the server's wait headers,
the provider's error metadata, a 402 that stops, and `usage.cost` read as the billed charge."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from pipeline.chat.errors import HttpStatusFault, ProviderCreditsExhausted, RequestRejected
from pipeline.config.schema import Prices
from pipeline.endpoints.exchange import SentAttempt
from pipeline.endpoints.http_status import error_message, server_wait

from .conftest import RecordingSleep, Reply, chat_reply, endpoint_config, open_test_client
from .conftest import user_request as request

Serve = Callable[..., Any]
NOW = 1_764_800_000.0  # a fixed wall clock (POSIX seconds)
OPENROUTER_429 = {
    "error": {
        "message": "Provider returned error",
        "code": 429,
        "metadata": {
            "raw": "google/gemini-2.5-flash is temporarily rate-limited upstream.",
            "provider_name": "Google AI Studio",
        },
    },
    "user_id": "user_2abc",
}


def test_retry_after_wins_over_the_ratelimit_reset() -> None:
    headers = {"retry-after": "7", "x-ratelimit-reset": str(int((NOW + 60) * 1000))}
    assert server_wait(headers, now=NOW) == 7.0


def test_openrouters_ratelimit_reset_is_epoch_milliseconds() -> None:
    assert server_wait({"x-ratelimit-reset": str(int((NOW + 12.5) * 1000))}, now=NOW) == 12.5
    assert server_wait({"x-ratelimit-reset": str(int((NOW - 5) * 1000))}, now=NOW) == 0.0


def test_retry_after_ms_and_unusable_headers() -> None:
    assert server_wait({"retry-after-ms": "1500"}, now=NOW) == 1.5
    assert server_wait({"x-ratelimit-reset": "soon"}, now=NOW) is None
    assert server_wait({}, now=NOW) is None


def test_the_error_message_names_the_upstream_and_its_raw_words() -> None:
    import json

    text = error_message(json.dumps(OPENROUTER_429))
    assert text is not None
    assert text.startswith("Provider returned error; upstream Google AI Studio; raw: google/")
    assert "user_2abc" not in text
    assert error_message("<html>bad gateway</html>") is None


async def test_each_http_attempt_is_reported_with_the_wait_the_server_asked(
    serve: Serve,
) -> None:
    reset = str(int((1e9 + 0.5) * 1000))
    chat = [
        Reply(status=429, json_body=OPENROUTER_429, headers={"X-RateLimit-Reset": reset}),
        chat_reply("fine", usage={"prompt_tokens": 5, "completion_tokens": 1, "cost": 0.0004}),
    ]
    sleep = RecordingSleep()
    async with (
        serve(chat=chat) as server,
        open_test_client(endpoint_config(server.base_url), sleep=sleep) as client,
    ):
        client._wall_clock = lambda: 1e9  # the reset is 0.5 s after "now"
        attempts: list[SentAttempt] = []
        reply = await client.send(client.encode(request()), attempts)
    assert [a.status for a in attempts] == [429, 200]
    first = attempts[0]
    assert first.error == "rate_limited" and first.wait_s == 0.5
    assert first.detail is not None and "upstream Google AI Studio" in first.detail
    assert sleep.waits and sleep.waits[0] >= 0.5  # the retry honoured the reset
    assert reply.billed_usd == 0.0004


Refusal = tuple[Any, list[SentAttempt], int]


async def refused_once(serve: Serve, status: int, message: str) -> Refusal:
    """The error one recorded-style error reply raises, the attempts sent, and how many
    chat requests the server saw (retries would show there)."""
    body = {"error": {"code": status, "message": message}}
    async with (
        serve(chat=[Reply(status=status, json_body=body)]) as server,
        open_test_client(endpoint_config(server.base_url)) as client,
    ):
        attempts: list[SentAttempt] = []
        try:
            await client.send(client.encode(request()), attempts)
        except Exception as exc:  # the caller asserts which one
            return exc, attempts, len(server.requests_to("/v1/chat/completions"))
    raise AssertionError(f"HTTP {status} was taken for an answer")


async def test_a_402_is_the_accounts_stop_and_is_never_retried(serve: Serve) -> None:
    refused, attempts, seen = await refused_once(serve, 402, "Insufficient credits. Add more.")
    assert isinstance(refused, ProviderCreditsExhausted)
    assert refused.provider_message == "Insufficient credits. Add more."
    assert [a.status for a in attempts] == [402] and seen == 1


async def test_a_rejection_keeps_the_providers_message_in_its_detail(serve: Serve) -> None:
    message = "This model's maximum context length is 8192"
    rejected, attempts, _ = await refused_once(serve, 400, message)
    assert isinstance(rejected, RequestRejected) and rejected.reason == "context_too_long"
    assert attempts[0].detail == f"HTTP 400: {message}"


async def test_a_string_cost_is_read_and_a_bad_one_is_not_a_charge(serve: Serve) -> None:
    usage = {"prompt_tokens": 5, "completion_tokens": 1}
    chat = [
        chat_reply("a", usage={**usage, "cost": "0.0021"}),
        chat_reply("b", usage={**usage, "cost": "n/a"}),
    ]
    async with (
        serve(chat=chat) as server,
        open_test_client(endpoint_config(server.base_url, prices=Prices(1.0, 1.0))) as client,
    ):
        first = await client.complete(request())
        second = await client.complete(request())
    assert first.billed_usd == 0.0021 and second.billed_usd is None
    assert second.cost_usd == pytest.approx(6 / 1e6)


async def test_every_failed_attempt_is_reported_when_retries_run_out(serve: Serve) -> None:
    chat = [Reply(status=503, json_body={"error": {"message": "overloaded"}})] * 3
    async with (
        serve(chat=chat) as server,
        open_test_client(endpoint_config(server.base_url), attempts=3) as client,
    ):
        attempts: list[SentAttempt] = []
        with pytest.raises(HttpStatusFault):
            await client.send(client.encode(request()), attempts)
    assert [a.status for a in attempts] == [503, 503, 503]
    assert all(a.detail == "HTTP 503: overloaded" for a in attempts)
