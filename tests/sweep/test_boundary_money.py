"""Issue 31 at the request boundary: the billed charge, replies without usage, the 402 stop,
one record per HTTP request sent."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pipeline.chat.errors import HttpStatusFault, ProviderCreditsExhausted
from pipeline.chat.messages import ChatMessage, ChatRequest, ChatResponse, Usage
from pipeline.config.schema import BudgetConfig, Prices
from pipeline.endpoints.client import EncodedRequest
from pipeline.endpoints.exchange import SentAttempt
from pipeline.endpoints.wire import build_body, encode_body
from pipeline.sweep.budget import BudgetLedger, LocalGate, ProviderCreditsStop
from tests.endpoints.conftest import endpoint_config
from tests.sweep.boundary_kit import boundary

PRICES = Prices(input_per_mtok=1000.0, output_per_mtok=2000.0)  # $1 per 1,000 input tokens
REQUEST = ChatRequest((ChatMessage("user", "fold this chunk " * 50),), max_tokens=100)


class Replies:
    """A scripted chat client answering each request with the next of `replies`."""

    def __init__(self, *replies: ChatResponse | BaseException) -> None:
        self.replies = list(replies)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply


class RetriedOnce:
    """An encoding client whose transport needed a 429 before its answer (as the HTTP client
    reports it: one SentAttempt per HTTP request)."""

    def __init__(self, reply: ChatResponse) -> None:
        self.reply = reply

    def encode(self, request: ChatRequest) -> EncodedRequest:
        body, adapted = build_body(endpoint_config(), request)
        return EncodedRequest(request, encode_body(body), adapted, {})

    async def send(
        self, encoded: EncodedRequest, attempts: list[SentAttempt] | None = None
    ) -> ChatResponse:
        assert attempts is not None
        attempts.append(SentAttempt(429, "rate_limited", 0.01, 2.0, "HTTP 429: slow down"))
        attempts.append(SentAttempt(200, None, 0.02))
        return self.reply


def priced_endpoint() -> object:
    return endpoint_config(prices=PRICES)


async def test_a_billed_reply_spends_what_the_provider_charged_and_keeps_the_estimate() -> None:
    reply = ChatResponse("ok", "stop", Usage(1000, 10), cost_usd=1.02, billed_usd=0.75)
    ledger = BudgetLedger(BudgetConfig(usd=100.0))
    edge = boundary(Replies(reply), endpoint=priced_endpoint(), gate=LocalGate(ledger))  # type: ignore[arg-type]
    await edge.complete(REQUEST)
    record = edge.records[0]
    assert record["cost_usd"] == 1.02 and record["billed_usd"] == 0.75
    assert record["spent_usd"] == 0.75
    bill = edge.bill.bill()
    assert bill.billed_usd == 0.75 and bill.spent_usd == 0.75 and bill.cost_usd == 1.02
    assert ledger.spent_usd == 0.75  # the budget counts the provider's figure


async def test_a_reply_without_usage_is_billed_at_the_upper_estimate_never_zero() -> None:
    reply = ChatResponse("x" * 90, "stop", Usage(cached_tokens=None))
    ledger = BudgetLedger(BudgetConfig(usd=100.0))
    edge = boundary(Replies(reply), endpoint=priced_endpoint(), gate=LocalGate(ledger))  # type: ignore[arg-type]
    answered = await edge.complete(REQUEST)
    body = encode_body(build_body(endpoint_config(prices=PRICES), REQUEST)[0])
    prompt = math.ceil(len(body) / 3)  # the body's UTF-8 bytes / 3
    completion = 30  # 90 bytes of text / 3, under max_tokens
    expected = (prompt * 1000.0 + completion * 2000.0) / 1e6
    assert answered.cost_usd == pytest.approx(expected) and expected > 0
    record = edge.records[0]
    assert record["usage_reported"] is False
    assert record["prompt_tokens"] is None and record["cached_tokens"] is None
    assert record["spent_usd"] == pytest.approx(expected)
    assert ledger.spent_usd == pytest.approx(expected)
    assert edge.bill.bill().usage_unreported == 1


async def test_a_usageless_reply_stopped_at_its_limit_is_billed_the_whole_max_tokens() -> None:
    reply = ChatResponse("", "length", Usage(cached_tokens=None))
    edge = boundary(Replies(reply), endpoint=priced_endpoint())  # type: ignore[arg-type]
    answered = await edge.complete(REQUEST)
    body = encode_body(build_body(endpoint_config(prices=PRICES), REQUEST)[0])
    expected = (math.ceil(len(body) / 3) * 1000.0 + 100 * 2000.0) / 1e6
    assert answered.cost_usd == pytest.approx(expected)


async def test_a_partial_usage_keeps_the_reported_count_and_estimates_the_other() -> None:
    reply = ChatResponse("y" * 30, "stop", Usage(prompt_tokens=7))
    edge = boundary(Replies(reply), endpoint=priced_endpoint())  # type: ignore[arg-type]
    answered = await edge.complete(REQUEST)
    assert answered.cost_usd == pytest.approx((7 * 1000.0 + 10 * 2000.0) / 1e6)
    assert edge.records[0]["usage_reported"] is False


async def test_a_provider_402_stops_the_unit_and_is_never_the_units_own_failure() -> None:
    refusal = ProviderCreditsExhausted(402, "Insufficient credits. Add more at openrouter.ai")
    edge = boundary(Replies(refusal), endpoint=priced_endpoint())  # type: ignore[arg-type]
    with pytest.raises(ProviderCreditsStop) as stop:
        await edge.complete(REQUEST)
    assert stop.value.reason == "provider_credits"
    assert "Insufficient credits" in stop.value.provider_message
    assert not isinstance(stop.value, Exception)  # no study's `except Exception` catches it
    assert edge.records[0]["error"] == "provider_credits"
    assert edge.records[0]["spent_usd"] == 0.0


async def test_every_http_attempt_is_a_record_and_only_the_answer_is_paid() -> None:
    reply = ChatResponse("ok", "stop", Usage(100, 5), cost_usd=0.11, billed_usd=0.1)
    edge = boundary(RetriedOnce(reply), endpoint=priced_endpoint())  # type: ignore[arg-type]
    await edge.complete(REQUEST)
    first, second = edge.records
    assert (first["position"], first["attempt_in_request"]) == (0, 0)
    assert (second["position"], second["attempt_in_request"]) == (0, 1)
    assert first["status"] == 429 and first["error"] == "rate_limited"
    assert first["server_wait_s"] == 2.0 and first["error_detail"] == "HTTP 429: slow down"
    assert first["spent_usd"] == 0.0 and first["billed_usd"] is None
    assert second["status"] == 200 and second["spent_usd"] == 0.1
    assert edge.bill.bill().requests == 1  # one logical request of the unit


async def test_a_failed_request_has_null_usage_not_zero() -> None:
    edge = boundary(Replies(HttpStatusFault(503, "down")), endpoint=priced_endpoint())  # type: ignore[arg-type]
    with pytest.raises(HttpStatusFault):
        await edge.complete(REQUEST)
    record = edge.records[0]
    assert record["cached_tokens"] is None and record["prompt_tokens"] is None
    assert record["usage_reported"] is None and record["error_detail"] == "HTTP 503: down"


async def test_a_cache_hit_is_priced_anew_but_spends_and_bills_nothing(tmp_path: Path) -> None:
    reply = ChatResponse("ok", "stop", Usage(100, 5, 0, 40, 3), cost_usd=0.2, billed_usd=0.15)
    first = boundary(Replies(reply), endpoint=priced_endpoint(), cache_dir=tmp_path)  # type: ignore[arg-type]
    await first.complete(REQUEST)
    first.context.cache.close()  # type: ignore[union-attr]
    again = boundary(Replies(), endpoint=priced_endpoint(), cache_dir=tmp_path)  # type: ignore[arg-type]
    hit = await again.complete(REQUEST)
    assert hit.billed_usd == 0.15 and hit.usage.reasoning_tokens == 3  # the stored reply, whole
    record = again.records[0]
    # its usage at this endpoint's prices (issue 32): 60 + 40 written at $1, 5 at $2, per 1,000
    assert record["cache_hit"] and record["cost_usd"] == pytest.approx(0.11)
    assert record["spent_usd"] == 0.0 and record["billed_usd"] is None
    assert record["cache_write_tokens"] == 40 and record["reasoning_tokens"] == 3
