"""Request accounting under each cache model, on hand-built request sequences."""

from __future__ import annotations

import random
import re
from dataclasses import replace

import pytest

from jobs.toolout.inputs import load_cache_models
from pipeline.toolout.accounting import (
    MISS_CAUSES,
    CacheBlock,
    CacheRequest,
    RequestCost,
    SessionCost,
    account,
    link_outputs,
    request_times,
)
from pipeline.toolout.cache_models import CacheModel, UnknownPriceError

MODELS = load_cache_models()
OPENAI, ANTHROPIC = MODELS["openai"], MODELS["anthropic"]
DEEPSEEK, GEMINI, NONE = MODELS["deepseek"], MODELS["gemini-implicit"], MODELS["no-cache"]


def b(name: str, tokens: int, *, bp: bool = False) -> CacheBlock:
    return CacheBlock(name, tokens, bp)


def req(*blocks: CacheBlock, out: int = 0, t: float | None = None) -> CacheRequest:
    return CacheRequest(tuple(blocks), out, t)


def causes(cost: RequestCost) -> dict[str, int]:
    return {cause: c.tokens for cause, c in cost.misses.items() if c.tokens}


def check_invariants(session: SessionCost, cache_model: CacheModel) -> None:
    p = cache_model.prices_for(session.model)
    for r in session.requests:
        assert r.input_tokens == r.cached_tokens + r.written_tokens + r.uncached_tokens
        assert r.misses.tokens == r.missed_tokens == r.input_tokens - r.cached_tokens
        hit_usd = r.cached_tokens * p.cache_read / 1e6
        out_usd = r.output_tokens * p.output / 1e6
        assert r.cost_usd == pytest.approx(hit_usd + r.misses.usd + out_usd, abs=1e-12)
        billed = (r.written_tokens * p.cache_write + r.uncached_tokens * p.input) / 1e6
        assert r.misses.usd == pytest.approx(billed, abs=1e-12)


# --- OpenAI-like: automatic, from 1,024 tokens, in 128-token steps -----------------------


def test_openai_a_1100_token_shared_prefix_hits_1024() -> None:
    s = account([req(b("A", 1100)), req(b("A", 1100), b("B", 40))], OPENAI, "gpt-4o")
    first, second = s.requests
    assert (first.cached_tokens, causes(first)) == (0, {"cold_start": 1100})
    assert second.cached_tokens == 1024
    assert causes(second) == {"granularity": 76, "cold_start": 40}
    check_invariants(s, OPENAI)


def test_openai_a_1000_token_shared_prefix_hits_nothing_below_minimum() -> None:
    s = account([req(b("A", 1000)), req(b("A", 1000), b("B", 40))], OPENAI, "gpt-4o")
    second = s.requests[1]
    assert second.cached_tokens == 0
    assert causes(second) == {"below_minimum": 1000, "cold_start": 40}


def test_openai_hits_round_down_to_128_token_steps() -> None:
    s = account([req(b("A", 1300)), req(b("A", 1300), b("B", 1))], OPENAI, "gpt-5")
    assert s.requests[1].cached_tokens == 1280
    assert causes(s.requests[1]) == {"granularity": 20, "cold_start": 1}


def test_openai_a_rewrite_at_block_k_misses_everything_after_k_as_rewrite() -> None:
    before = req(b("S", 2048), b("T1", 512), b("T2", 512))
    after = req(b("S", 2048), b("T1-compacted", 100), b("T2", 512), b("U", 64))
    s = account([before, after], OPENAI, "gpt-4o")
    second = s.requests[1]
    assert second.cached_tokens == 2048
    assert causes(second) == {"rewrite": 612, "cold_start": 64}
    check_invariants(s, OPENAI)


def test_openai_hit_is_billed_at_the_models_discount() -> None:
    s = account([req(b("A", 2048)), req(b("A", 2048), out=10)], OPENAI, "gpt-4.1")
    assert s.requests[1].cost_usd == pytest.approx((2048 * 0.5 + 10 * 8.0) / 1e6)


def test_openai_entries_expire_after_their_ttl() -> None:
    s = account([req(b("A", 2048), t=0), req(b("A", 2048), b("B", 8), t=400)], OPENAI, "gpt-4o")
    assert causes(s.requests[1]) == {"ttl_expiry": 2048, "cold_start": 8}


# --- Anthropic-like: explicit breakpoints ------------------------------------------------


def test_anthropic_writes_at_1_25x_and_reads_at_0_1x() -> None:
    s = account(
        [req(b("S", 2000, bp=True), out=100), req(b("S", 2000, bp=True), b("U", 500, bp=True))],
        ANTHROPIC,
        "claude-sonnet-4-5",
    )
    first, second = s.requests
    assert (first.cached_tokens, first.written_tokens, first.uncached_tokens) == (0, 2000, 0)
    assert first.cost_usd == pytest.approx((2000 * 3.0 * 1.25 + 100 * 15.0) / 1e6)
    assert (second.cached_tokens, second.written_tokens) == (2000, 500)
    assert second.cost_usd == pytest.approx((2000 * 3.0 * 0.1 + 500 * 3.0 * 1.25) / 1e6)
    check_invariants(s, ANTHROPIC)


def test_anthropic_tokens_after_the_last_breakpoint_are_billed_as_input() -> None:
    s = account(
        [req(b("S", 2000, bp=True)), req(b("S", 2000, bp=True), b("U", 500))],
        ANTHROPIC,
        "claude-sonnet-4-5",
    )
    second = s.requests[1]
    assert (second.cached_tokens, second.written_tokens, second.uncached_tokens) == (2000, 0, 500)


def test_anthropic_a_6_minute_gap_misses_with_ttl_expiry() -> None:
    s = account(
        [req(b("S", 2000, bp=True), t=0), req(b("S", 2000, bp=True), b("U", 100, bp=True), t=360)],
        ANTHROPIC,
        "claude-sonnet-4-5",
    )
    second = s.requests[1]
    assert second.cached_tokens == 0
    assert causes(second) == {"ttl_expiry": 2000, "cold_start": 100}
    assert second.misses.ttl_expiry.usd == pytest.approx(2000 * 3.75 / 1e6)  # rewritten at 1.25x


def test_anthropic_reads_within_5_minutes_refresh_the_entry() -> None:
    sequence = [req(b("S", 2000, bp=True), t=t) for t in (0, 240, 480)]
    refreshed = account(sequence, ANTHROPIC, "claude-sonnet-4-5")
    assert [r.cached_tokens for r in refreshed.requests] == [0, 2000, 2000]
    no_refresh = account(sequence, replace(ANTHROPIC, refresh_on_read=False), "claude-sonnet-4-5")
    assert [r.cached_tokens for r in no_refresh.requests] == [0, 2000, 0]
    assert causes(no_refresh.requests[2]) == {"ttl_expiry": 2000}


def test_anthropic_exactly_5_minutes_is_still_alive() -> None:
    s = account(
        [req(b("S", 2000, bp=True), t=0), req(b("S", 2000, bp=True), t=300)],
        ANTHROPIC,
        "claude-sonnet-4-5",
    )
    assert s.requests[1].cached_tokens == 2000


def test_anthropic_rewrite_at_block_k_misses_everything_after_k() -> None:
    before = req(b("S", 2000, bp=True), b("T", 800), b("U", 300, bp=True))
    after = req(b("S", 2000, bp=True), b("T'", 100), b("U", 300, bp=True), b("V", 50, bp=True))
    s = account([before, after], ANTHROPIC, "claude-sonnet-4-5")
    second = s.requests[1]
    assert (second.cached_tokens, second.written_tokens) == (2000, 450)
    assert causes(second) == {"rewrite": 400, "cold_start": 50}
    check_invariants(s, ANTHROPIC)


def test_anthropic_hits_only_within_20_blocks_before_a_breakpoint() -> None:
    first = req(b("S", 2000, bp=True))
    near = req(b("S", 2000), *(b(f"m{i}", 10) for i in range(19)), b("last", 10, bp=True))
    far = req(b("S", 2000), *(b(f"m{i}", 10) for i in range(25)), b("last", 10, bp=True))
    assert account([first, near], ANTHROPIC, "claude-sonnet-4-5").requests[1].cached_tokens == 2000
    missed = account([first, far], ANTHROPIC, "claude-sonnet-4-5").requests[1]
    assert missed.cached_tokens == 0
    assert causes(missed) == {"granularity": 2000, "cold_start": 260}


def test_anthropic_hits_land_only_on_boundaries_with_an_entry() -> None:
    first = req(b("S", 2000, bp=True), b("T", 500))  # only S's boundary is cached
    second = req(b("S", 2000), b("T", 500), b("U", 10, bp=True))
    cost = account([first, second], ANTHROPIC, "claude-sonnet-4-5").requests[1]
    assert cost.cached_tokens == 2000
    assert causes(cost) == {"granularity": 500, "cold_start": 10}


def test_anthropic_a_prefix_under_the_models_minimum_is_not_cached() -> None:
    s = account(
        [req(b("A", 900, bp=True)), req(b("A", 900, bp=True), b("B", 200, bp=True))],
        ANTHROPIC,
        "claude-sonnet-4-5",
    )
    first, second = s.requests
    assert (first.written_tokens, first.uncached_tokens) == (0, 900)
    assert second.cached_tokens == 0
    assert second.written_tokens == 1100  # the breakpoint after B reaches the minimum
    assert causes(second) == {"below_minimum": 900, "cold_start": 200}


def test_anthropic_minimum_depends_on_the_model_class() -> None:
    sequence = [req(b("A", 3000, bp=True)), req(b("A", 3000, bp=True))]
    assert account(sequence, ANTHROPIC, "claude-sonnet-4-5").requests[1].cached_tokens == 3000
    opus = account(sequence, ANTHROPIC, "claude-opus-4-6").requests[1]  # 4,096 minimum
    assert (opus.cached_tokens, causes(opus)) == (0, {"below_minimum": 3000})


def test_anthropic_uses_the_first_and_the_last_three_of_more_than_four_breakpoints() -> None:
    blocks = [b(f"x{i}", 1100, bp=True) for i in range(6)]
    first = account([req(*blocks)], ANTHROPIC, "claude-sonnet-4-5")
    assert first.requests[0].written_tokens == 6600
    # entries sit after blocks 0, 3, 4 and 5: after a rewrite of block 2 the entry after
    # block 0 hits; none was written after block 1 (its breakpoint was not used)
    rewritten = [*blocks[:2], b("x2'", 1100, bp=True), *blocks[3:]]
    s = account([req(*blocks), req(*rewritten)], ANTHROPIC, "claude-sonnet-4-5")
    second = s.requests[1]
    assert second.cached_tokens == 1100
    assert causes(second) == {"rewrite": 5500}  # block 1 would have hit without the rewrite
    unchanged = account([req(*blocks), req(*blocks[:2])], ANTHROPIC, "claude-sonnet-4-5")
    assert causes(unchanged.requests[1]) == {"granularity": 1100}  # no rewrite: placement


def test_anthropic_a_rewrite_beyond_the_lookback_loses_all_after_the_system_prompt() -> None:
    history = [b("system", 2000, bp=True), *(b(f"m{i}", 100, bp=i % 2 == 1) for i in range(40))]
    compacted = [*history[:3], b("m2-compacted", 10, bp=True), *history[4:]]
    s = account([req(*history), req(*compacted)], ANTHROPIC, "claude-sonnet-4-5")
    second = s.requests[1]
    assert second.cached_tokens == 2000  # the system prompt's own breakpoint still hits
    # m0 and m1 are shared but no breakpoint reaches them; m2' and the 37 blocks after it sit
    # where the cached m2.. were
    assert causes(second) == {"rewrite": 200 + 10 + 3700}
    check_invariants(s, ANTHROPIC)


# --- DeepSeek-like: prefix units ----------------------------------------------------------


def test_deepseek_hit_is_billed_at_0_83_percent_of_the_miss_price() -> None:
    s = account([req(b("A", 1000)), req(b("A", 1000), b("B", 100))], DEEPSEEK, "deepseek-v4-pro")
    second = s.requests[1]
    assert second.cached_tokens == 1000  # the end of the earlier input is a unit: no rounding
    hit_usd = second.cost_usd - second.misses.usd
    assert hit_usd / 1000 / (0.435 / 1e6) == pytest.approx(0.008333, rel=1e-3)
    assert second.cost_usd == pytest.approx((1000 * 0.003625 + 100 * 0.435) / 1e6)


def test_deepseek_a_rewrite_inside_a_request_hits_the_64_token_grid() -> None:
    s = account(
        [req(b("A", 1000), b("B", 1000)), req(b("A", 1000), b("B'", 300), b("C", 10))],
        DEEPSEEK,
        "deepseek-v4-pro",
    )
    second = s.requests[1]
    assert second.cached_tokens == 960
    assert causes(second) == {"granularity": 40, "rewrite": 300, "cold_start": 10}


def test_deepseek_the_end_of_a_model_output_is_a_hit_position() -> None:
    sequence = link_outputs([req(b("A", 1000)), req(b("A", 1000), b("O", 200), b("B", 30))])
    assert sequence[0].output_block == b("O", 200)
    cached = account(sequence, DEEPSEEK, "deepseek-v4-pro").requests[1]
    assert (cached.cached_tokens, causes(cached)) == (1200, {"cold_start": 30})
    without = account(sequence, replace(DEEPSEEK, output_cached=False), "deepseek-v4-pro")
    assert without.requests[1].cached_tokens == 1000
    assert causes(without.requests[1]) == {"cold_start": 230}


def test_deepseek_bills_no_write_fee() -> None:
    s = account([req(b("A", 5000), out=7)], DEEPSEEK, "deepseek-v4-flash")
    only = s.requests[0]
    assert (only.written_tokens, only.uncached_tokens) == (0, 5000)
    assert only.cost_usd == pytest.approx((5000 * 0.14 + 7 * 0.28) / 1e6)


# --- Gemini implicit and no cache ---------------------------------------------------------


def test_gemini_hits_the_whole_shared_prefix_above_its_minimum() -> None:
    below = account([req(b("A", 2000)), req(b("A", 2000))], GEMINI, "gemini-2.5-flash")
    assert causes(below.requests[1]) == {"below_minimum": 2000}
    above = account([req(b("A", 3000)), req(b("A", 3000))], GEMINI, "gemini-2.5-flash")
    assert above.requests[1].cached_tokens == 3000
    assert above.requests[1].cost_usd == pytest.approx(3000 * 0.03 / 1e6)


def test_no_cache_bills_everything_as_input() -> None:
    sequence = [req(b("A", 3000), out=5), req(b("A", 3000), b("B", 100), out=5)]
    s = account(sequence, NONE, "deepseek-v4-pro")
    assert [r.cached_tokens for r in s.requests] == [0, 0]
    assert s.cost_usd == pytest.approx((6100 * 0.435 + 10 * 0.87) / 1e6)
    assert causes(s.requests[1]) == {"cold_start": 3100}


# --- all models ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cache_model", "model"),
    [
        (OPENAI, "gpt-4o"),
        (ANTHROPIC, "claude-sonnet-4-5"),
        (ANTHROPIC, "claude-opus-4-6"),
        (DEEPSEEK, "deepseek-v4-pro"),
        (GEMINI, "gemini-2.5-pro"),
        (NONE, "deepseek-v4-flash"),
    ],
)
def test_causes_sum_to_the_missed_tokens_on_random_sequences(
    cache_model: CacheModel, model: str
) -> None:
    rng = random.Random(166)
    for _ in range(40):
        blocks: list[CacheBlock] = [b("system", rng.randrange(500, 3000), bp=True)]
        sequence: list[CacheRequest] = []
        now = 0.0
        for i in range(rng.randrange(2, 14)):
            blocks += [b(f"out{i}", rng.randrange(0, 3000), bp=rng.random() < 0.7)]
            if len(blocks) > 2 and rng.random() < 0.25:  # compact an older block
                k = rng.randrange(1, len(blocks))
                blocks[k] = replace(
                    blocks[k], key=blocks[k].key + "'", tokens=blocks[k].tokens // 3
                )
            now += rng.choice([5.0, 30.0, 200.0, 400.0, 5000.0])
            timestamp = None if rng.random() < 0.3 else now
            sequence.append(CacheRequest(tuple(blocks), rng.randrange(0, 400), timestamp))
        session = account(link_outputs(sequence), cache_model, model)
        check_invariants(session, cache_model)
        assert session.misses.tokens == session.input_tokens - session.cached_tokens
        assert tuple(c for c, _ in session.misses.items()) == MISS_CAUSES


def test_unknown_prices_raise_before_anything_is_billed() -> None:
    with pytest.raises(UnknownPriceError, match="no price for model 'gpt-9'"):
        account([req(b("A", 10))], OPENAI, "gpt-9")


def test_missing_times_follow_the_think_time_assumption() -> None:
    sequence = [req(t=None), req(t=100.0), req(t=None), req(t=None)]
    assert request_times(sequence, 30.0) == [
        (70.0, True),
        (100.0, False),
        (130.0, True),
        (160.0, True),
    ]
    assert request_times([req(), req()], 12.5) == [(0.0, True), (12.5, True)]


def test_a_time_that_goes_backwards_is_an_error() -> None:
    with pytest.raises(ValueError, match=re.escape("request 1: time 5.0 is before")):
        request_times([req(t=10.0), req(t=5.0)])


def test_the_think_time_sets_the_ttl_when_the_transcript_has_no_times() -> None:
    sequence = [req(b("S", 2000, bp=True)), req(b("S", 2000, bp=True))]
    quick = account(sequence, ANTHROPIC, "claude-sonnet-4-5", think_time_s=30)
    slow = account(sequence, ANTHROPIC, "claude-sonnet-4-5", think_time_s=600)
    assert (quick.requests[1].cached_tokens, slow.requests[1].cached_tokens) == (2000, 0)
    assert quick.requests[1].time_assumed


def test_block_of_keys_by_role_and_text() -> None:
    assert CacheBlock.of("tool", "x", 1) != CacheBlock.of("user", "x", 1)
    assert CacheBlock.of("tool", "x", 1, breakpoint=True).breakpoint
