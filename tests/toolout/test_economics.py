"""The economic gate: the seed's known answers, fail-closed pricing, batches and regret."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from jobs.toolout.inputs import load_cache_models
from pipeline.toolout.economics import (
    Candidate,
    GateInputs,
    batch,
    final,
    gate,
    preflight,
    rates_for,
    regret,
)

MODELS = load_cache_models()
PRO = MODELS["deepseek"].prices_for("deepseek-v4-pro")


def inputs(**changes: Any) -> GateInputs:
    base = GateInputs(
        future_requests=8,
        rewritten_tokens=15_000,
        write_rate=6.25,
        read_rate=0.5,
        removed_tokens_per_request=95_000,
    )
    return replace(base, **changes)


def test_known_answer_gross_0_38_and_net_0_29375() -> None:
    decision = gate(inputs())
    assert decision.gross_usd == pytest.approx(0.38)
    assert decision.premium_usd == pytest.approx(15_000 * 5.75 / 1e6)
    assert decision.net_usd == pytest.approx(0.29375)
    assert (decision.approved, decision.reason) == (True, "approved")
    assert decision.inputs == inputs()  # the decision records its inputs


def test_break_even_is_the_seeds_inequality() -> None:
    decision = gate(inputs())
    n_star = (15_000 * max(0.0, 6.25 - 0.5)) / (95_000 * 0.5)
    assert decision.break_even_requests == pytest.approx(n_star)
    assert not gate(inputs(future_requests=n_star * 0.999)).approved
    assert gate(inputs(future_requests=n_star * 1.001)).approved


def test_summariser_cost_counts_against_the_saving() -> None:
    assert gate(inputs(summariser_usd=0.29)).approved
    declined = gate(inputs(summariser_usd=0.30))
    assert (declined.approved, declined.reason) == (False, "below_break_even")
    assert declined.net_usd == pytest.approx(0.29375 - 0.30)


@pytest.mark.parametrize(
    "rates",
    [
        {"write_rate": None},
        {"read_rate": None},
        {"write_rate": None, "read_rate": None},
        {"read_rate": float("nan")},
    ],
)
def test_no_pricing_fails_closed(rates: dict[str, float | None]) -> None:
    decision = gate(inputs(**rates))
    assert (decision.approved, decision.reason) == (False, "no_pricing")
    assert decision.net_usd is None and decision.break_even_requests is None


@pytest.mark.parametrize("change", [{"removed_tokens_per_request": 0}, {"read_rate": 0.0}])
def test_no_saving_per_request_fails_closed(change: dict[str, float]) -> None:
    decision = gate(inputs(**change))
    assert (decision.approved, decision.reason) == (False, "no_saving")


def test_no_write_premium_when_writes_cost_no_more_than_reads() -> None:
    decision = gate(inputs(write_rate=0.4))  # max(0, W - C) = 0
    assert decision.premium_usd == 0
    assert decision.break_even_requests == 0


def test_negative_inputs_are_a_bug() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        gate(inputs(rewritten_tokens=-1))


def test_deepseek_v4_pro_premium_is_119_cache_reads() -> None:
    assert (PRO.cache_write - PRO.cache_read) / PRO.cache_read == pytest.approx(119)


@pytest.mark.parametrize(("ratio", "approved"), [(19.8, False), (19.83, False), (19.84, True)])
def test_deepseek_v4_pro_with_six_requests_needs_d_over_r_above_19_8(
    ratio: float, approved: bool
) -> None:
    r = 10_000
    decision = gate(
        GateInputs(
            future_requests=6,
            rewritten_tokens=r,
            write_rate=PRO.cache_write,
            read_rate=PRO.cache_read,
            removed_tokens_per_request=round(ratio * r),
        )
    )
    assert decision.approved is approved
    # the exact threshold is 119 / 6 = 19.83
    assert decision.break_even_requests == pytest.approx(119 / ratio, rel=1e-3)


def test_seed_like_transcript_makes_no_summariser_call() -> None:
    """An 8 KB grep output two turns back: its best case cannot repay the rewritten span."""
    grep = Candidate(position_tokens=6_000, original_tokens=2_000, compacted_tokens=200)
    cached_prefix = 6_000 + 2_000 + 3_000  # the output and two turns after it
    decision = preflight(
        [grep],
        cached_prefix,
        future_requests=6,
        write_rate=PRO.cache_write,
        read_rate=PRO.cache_read,
        expected_summariser_usd=0.0,
    )
    assert decision.stage == decision.inputs.stage == "preflight"
    assert decision.inputs.removed_tokens_per_request == 2_000  # best case: all of it
    assert decision.inputs.rewritten_tokens == 5_000
    assert not decision.approved  # so the summariser is never called


def test_batch_charges_the_rewrite_premium_once() -> None:
    a = Candidate(position_tokens=1_000, original_tokens=3_000, compacted_tokens=300)
    b = Candidate(position_tokens=5_000, original_tokens=2_000, compacted_tokens=200)
    both = batch([a, b], cached_prefix_tokens=10_000)
    assert both.rewritten_tokens == 9_000  # from the earliest candidate, not 9,000 + 5,000
    assert both.removed_tokens_per_request == 4_500
    assert (both.new, both.reused) == (2, 0)


def test_a_cache_reuse_adds_no_premium_and_no_saving() -> None:
    reused = Candidate(1_000, 3_000, 300, cached=True)
    fresh = Candidate(5_000, 2_000, 200)
    mixed = batch([reused, fresh], cached_prefix_tokens=10_000)
    assert (mixed.rewritten_tokens, mixed.removed_tokens_per_request) == (5_000, 1_800)
    only_reuse = batch([reused], cached_prefix_tokens=10_000)
    assert (only_reuse.rewritten_tokens, only_reuse.new, only_reuse.reused) == (0, 0, 1)


def test_an_uncached_candidate_is_a_rewrite_not_a_reuse() -> None:
    """The seed's bug 2: an uncached summary candidate must pay the rewrite premium."""
    uncached = Candidate(1_000, 3_000, 300, cached=False)
    decision = preflight(
        [uncached], 10_000, future_requests=6, write_rate=PRO.cache_write, read_rate=PRO.cache_read
    )
    assert decision.inputs.rewritten_tokens == 9_000
    assert decision.premium_usd == pytest.approx(9_000 * (0.435 - 0.003625) / 1e6)


def test_final_checks_the_actual_candidates_with_the_summariser_cost() -> None:
    candidate = Candidate(position_tokens=0, original_tokens=95_000, compacted_tokens=0)
    decision = final(
        [candidate], 15_000, future_requests=8, write_rate=6.25, read_rate=0.5, summariser_usd=0.1
    )
    assert decision.stage == "final"
    assert decision.net_usd == pytest.approx(0.29375 - 0.1)


def test_regret_compares_the_assumed_n_with_the_actual_future() -> None:
    decision = gate(inputs())  # approved at N = 8; break-even N* = 1.8158
    later = regret(decision, actual_future_requests=1)
    assert (later.assumed_requests, later.actual_requests) == (8, 1)
    assert later.would_flip
    assert later.actual_net_usd == pytest.approx(95_000 * 0.5 / 1e6 - 15_000 * 5.75 / 1e6)
    assert later.actual_net_usd is not None
    assert later.regret_usd == pytest.approx(-later.actual_net_usd)
    right = regret(decision, actual_future_requests=20)
    assert (right.would_flip, right.regret_usd) == (False, 0.0)


def test_regret_of_a_declined_saving_is_the_saving_missed() -> None:
    decision = gate(inputs(future_requests=1))
    assert not decision.approved
    later = regret(decision, actual_future_requests=8)
    assert later.would_flip and later.regret_usd == pytest.approx(0.29375)


def test_regret_of_a_fail_closed_decision_never_flips() -> None:
    later = regret(gate(inputs(write_rate=None)), actual_future_requests=100)
    assert (later.would_flip, later.actual_net_usd, later.regret_usd) == (False, None, 0.0)


def test_rates_come_from_the_cache_model_and_an_unpriced_model_fails_closed() -> None:
    assert rates_for(MODELS["anthropic"], "claude-opus-4-6") == (6.25, 0.5)
    assert rates_for(MODELS["deepseek"], "deepseek-v4-pro") == (0.435, 0.003625)
    assert rates_for(MODELS["no-cache"], "deepseek-v4-pro") == (0.435, 0.435)
    w, c = rates_for(MODELS["openai"], "gpt-unknown")
    decision = gate(inputs(write_rate=w, read_rate=c))
    assert (decision.approved, decision.reason) == (False, "no_pricing")


def test_known_answer_at_claude_opus_4_6_prices() -> None:
    """C = 0.5 and W = 6.25 are Opus 4.6's read and 5-minute write prices."""
    w, c = rates_for(MODELS["anthropic"], "claude-opus-4-6")
    decision = gate(inputs(write_rate=w, read_rate=c))
    assert (decision.gross_usd, decision.net_usd) == (pytest.approx(0.38), pytest.approx(0.29375))
