"""The seed's economic gate for rewriting cached history, and the regret of each decision.

A rewrite of an older message changes the prompt prefix from that point on, so the cached span
after it is billed again. Compaction pays only when

    N > (R · max(0, W − C) + S) / (D · C)

N: expected future requests that carry the rewritten prefix; R: cached span tokens the rewrite
invalidates; W: the write/input rate (a provider without a write fee bills a rewritten token as
input); C: the cache-read rate; D: tokens removed per future request; S: summariser cost in USD.
Rates are USD per million tokens, so in dollars:

    gross = N · D · C / 1e6          (what the removed tokens would have cost as cache hits)
    premium = R · max(0, W − C) / 1e6 (the rewrite's extra cost, once)
    net = gross − premium − S         (approve iff net > 0, which is N > break_even_requests)

Decisions (the seed's, and where it was silent):
- `preflight` checks the best case before any summary is paid for: the candidates reduced to
  nothing (D = their tokens) at the expected summariser cost; `final` checks the actual
  candidates and counts S as the actual cost (the decision records the net of the whole
  operation; pass S = 0 to treat the summaries as sunk).
- **A batch pays the rewrite premium once**: R is the cached span from the earliest new
  transformation to the end of the cached prefix, not a sum over candidates. A candidate whose
  compacted bytes the cache already holds (a cache reuse) adds neither R nor D; an uncached
  candidate is a rewrite even when its summary exists (the seed's bug 2).
- **Fail closed**: unknown or missing rates (None, NaN) decide False with reason `no_pricing`;
  D · C <= 0 decides False with `no_saving` (nothing removed, or removed tokens were free).
- Negative inputs are a bug and raise ValueError.
Every decision keeps its inputs, reason and predicted net; `regret` sets it against the number
of later requests the transcript actually had. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pipeline.toolout.cache_models import CacheModel, UnknownPriceError

MTOK = 1_000_000

Stage = Literal["preflight", "final"]
Reason = Literal["approved", "below_break_even", "no_pricing", "no_saving"]


@dataclass(frozen=True)
class GateInputs:
    """One gate check's inputs (rates USD per MTok, S in USD)."""

    future_requests: float  # N
    rewritten_tokens: int  # R
    write_rate: float | None  # W
    read_rate: float | None  # C
    removed_tokens_per_request: int  # D
    summariser_usd: float = 0.0  # S
    stage: Stage = "final"


@dataclass(frozen=True)
class GateDecision:
    inputs: GateInputs
    approved: bool
    reason: Reason
    gross_usd: float | None  # None when the gate could not price the decision
    premium_usd: float | None
    net_usd: float | None  # the predicted net saving
    break_even_requests: float | None  # N*: approve iff N > N*

    @property
    def stage(self) -> Stage:
        return self.inputs.stage


def gate(inputs: GateInputs) -> GateDecision:
    """Approve a rewrite only when the predicted net saving is positive; fail closed otherwise."""
    n, r, d, s = (
        inputs.future_requests,
        inputs.rewritten_tokens,
        inputs.removed_tokens_per_request,
        inputs.summariser_usd,
    )
    if min(n, r, d, s) < 0 or not all(math.isfinite(x) for x in (n, s)):
        raise ValueError(f"gate inputs must be finite and >= 0: {inputs}")
    w, c = inputs.write_rate, inputs.read_rate
    if w is None or c is None or not (math.isfinite(w) and math.isfinite(c)) or min(w, c) < 0:
        return GateDecision(inputs, False, "no_pricing", None, None, None, None)
    premium = r * max(0.0, w - c) / MTOK
    per_request = d * c / MTOK
    if per_request <= 0:
        return GateDecision(inputs, False, "no_saving", 0.0, premium, -(premium + s), None)
    gross = n * per_request
    net = gross - premium - s
    approved = net > 0
    return GateDecision(
        inputs,
        approved,
        "approved" if approved else "below_break_even",
        gross,
        premium,
        net,
        (premium + s) / per_request,
    )


def rates_for(cache_model: CacheModel, model: str) -> tuple[float | None, float | None]:
    """(W, C) for the gate under a cache model; (None, None) for an unpriced model.

    W is the rate a rewritten token is billed at: the write price under explicit breakpoints,
    the input price where there is no write fee (and under no cache, where C is input too,
    so a rewrite costs no premium and a removed token saves its input price).
    """
    try:
        prices = cache_model.prices_for(model)
    except UnknownPriceError:
        return None, None
    return prices.cache_write, prices.cache_read


@dataclass(frozen=True)
class Candidate:
    """One tool output the policy would compact on this request."""

    position_tokens: int  # prompt tokens before it (where the rewrite would start)
    original_tokens: int
    compacted_tokens: int  # preflight: the best case (0); final: the actual compacted form
    cached: bool = False  # its compacted bytes are already in the cached prefix: a reuse


@dataclass(frozen=True)
class Batch:
    """R and D of a batch: the premium counted once, reuses counted in neither."""

    rewritten_tokens: int
    removed_tokens_per_request: int
    new: int  # candidates that are new transformations
    reused: int


def batch(candidates: Sequence[Candidate], cached_prefix_tokens: int) -> Batch:
    """R from the earliest new transformation to the cached prefix's end; D over new ones."""
    new = [c for c in candidates if not c.cached]
    if any(c.compacted_tokens > c.original_tokens or c.position_tokens < 0 for c in candidates):
        raise ValueError("a candidate must not grow and must sit inside the prompt")
    removed = sum(c.original_tokens - c.compacted_tokens for c in new)
    start = min((c.position_tokens for c in new), default=None)
    rewritten = 0 if start is None else max(0, cached_prefix_tokens - start)
    return Batch(rewritten, removed, len(new), len(candidates) - len(new))


def _check(
    stage: Stage,
    candidates: Sequence[Candidate],
    cached_prefix_tokens: int,
    *,
    future_requests: float,
    write_rate: float | None,
    read_rate: float | None,
    summariser_usd: float,
) -> GateDecision:
    b = batch(candidates, cached_prefix_tokens)
    return gate(
        GateInputs(
            future_requests=future_requests,
            rewritten_tokens=b.rewritten_tokens,
            write_rate=write_rate,
            read_rate=read_rate,
            removed_tokens_per_request=b.removed_tokens_per_request,
            summariser_usd=summariser_usd,
            stage=stage,
        )
    )


def preflight(
    candidates: Sequence[Candidate],
    cached_prefix_tokens: int,
    *,
    future_requests: float,
    write_rate: float | None,
    read_rate: float | None,
    expected_summariser_usd: float = 0.0,
) -> GateDecision:
    """The best case before paying for summaries: every new candidate reduced to nothing."""
    best = [replace(c, compacted_tokens=0) if not c.cached else c for c in candidates]
    return _check(
        "preflight",
        best,
        cached_prefix_tokens,
        future_requests=future_requests,
        write_rate=write_rate,
        read_rate=read_rate,
        summariser_usd=expected_summariser_usd,
    )


def final(
    candidates: Sequence[Candidate],
    cached_prefix_tokens: int,
    *,
    future_requests: float,
    write_rate: float | None,
    read_rate: float | None,
    summariser_usd: float = 0.0,
) -> GateDecision:
    """The check on the actual compacted candidates, with the summariser cost paid."""
    return _check(
        "final",
        candidates,
        cached_prefix_tokens,
        future_requests=future_requests,
        write_rate=write_rate,
        read_rate=read_rate,
        summariser_usd=summariser_usd,
    )


@dataclass(frozen=True)
class Regret:
    """A decision against the transcript's actual future."""

    assumed_requests: float  # the N the gate assumed
    actual_requests: int  # later requests the transcript actually had
    actual_net_usd: float | None  # the net saving at the actual N (None: unpriced)
    would_flip: bool  # the decision at the actual N differs
    regret_usd: float  # what the decision lost against hindsight (0 when it was right)


def regret(decision: GateDecision, actual_future_requests: int) -> Regret:
    """How the decision would have gone had the gate known the transcript's real future."""
    if actual_future_requests < 0:
        raise ValueError(f"actual_future_requests must be >= 0, got {actual_future_requests}")
    hindsight = gate(replace(decision.inputs, future_requests=actual_future_requests))
    net = hindsight.net_usd
    lost = 0.0
    if net is not None and decision.approved != hindsight.approved:
        lost = abs(net)  # approved a loss, or declined a saving
    return Regret(
        assumed_requests=decision.inputs.future_requests,
        actual_requests=actual_future_requests,
        actual_net_usd=net,
        would_flip=decision.approved != hindsight.approved,
        regret_usd=lost,
    )
