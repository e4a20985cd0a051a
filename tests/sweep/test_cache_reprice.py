"""Issue 32 §2: a cached reply's `cost_usd` is priced at the current configuration's prices."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.chat.messages import ChatResponse, Usage
from pipeline.config.schema import Prices
from pipeline.endpoints.usage import cost_usd, upper_usage
from pipeline.endpoints.wire import build_body, encode_body
from tests.endpoints.conftest import endpoint_config
from tests.sweep.boundary_kit import boundary
from tests.sweep.test_boundary_money import PRICES, REQUEST, Replies

DEARER = Prices(input_per_mtok=PRICES.input_per_mtok * 1000, output_per_mtok=2_000_000.0)


async def paid_then_hit(
    tmp_path: Path, reply: ChatResponse
) -> tuple[ChatResponse, dict[str, object]]:
    """Pay for `reply` at PRICES, then ask again at 1000 times the prices."""
    first = boundary(Replies(reply), endpoint=endpoint_config(prices=PRICES), cache_dir=tmp_path)
    await first.complete(REQUEST)
    first.context.cache.close()  # type: ignore[union-attr]
    again = boundary(Replies(), endpoint=endpoint_config(prices=DEARER), cache_dir=tmp_path)
    hit = await again.complete(REQUEST)
    bill = again.bill.bill()
    assert bill.spent_usd == 0.0 and bill.cache_hits == 1 and bill.paid_requests == 0
    assert bill.cost_usd == pytest.approx(hit.cost_usd)
    return hit, again.records[0]


async def test_issue32_a_cache_hit_is_priced_at_the_current_prices(tmp_path: Path) -> None:
    usage = Usage(1000, 10, 200)
    reply = ChatResponse("ok", "stop", usage, cost_usd=cost_usd(usage, PRICES), billed_usd=0.9)
    hit, record = await paid_then_hit(tmp_path, reply)
    assert hit.cost_usd == pytest.approx(cost_usd(usage, DEARER))
    assert hit.cost_usd == pytest.approx(1000 * reply.cost_usd)
    assert record["cache_hit"] and record["cost_usd"] == pytest.approx(hit.cost_usd)
    assert hit.billed_usd == 0.9  # what was billed stays what was billed
    assert record["spent_usd"] == 0.0 and record["billed_usd"] is None  # a hit spends nothing


async def test_issue32_a_cached_reply_without_usage_is_priced_at_an_upper_estimate_now(
    tmp_path: Path,
) -> None:
    reply = ChatResponse("a reply of some length", "stop", Usage(), cost_usd=0.0)
    hit, record = await paid_then_hit(tmp_path, reply)
    body = encode_body(build_body(endpoint_config(prices=DEARER), REQUEST)[0])
    upper = upper_usage(Usage(), len(body), reply.text, REQUEST.max_tokens)
    assert hit.cost_usd == pytest.approx(cost_usd(upper, DEARER)) and hit.cost_usd > 0
    assert record["cost_usd"] == pytest.approx(hit.cost_usd)
