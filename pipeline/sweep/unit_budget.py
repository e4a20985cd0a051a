"""A budget buys whole units: the coordinator's rule for starting one more unit (issue 31 §6).

The request boundary admits each request against the run's spend (pipeline/sweep/budget.py),
but that rule alone cannot tell a finishing unit from a fresh one: dispatch is breadth-first,
so a budget below the run's cost used to end with every unit in flight and none whole (a
96-unit sim sweep of $6.57 ended with 0 units valid under `budget.usd=0.60`, and under 3.94).
This rule sits one level up, in the coordinator's dispatch, and decides which units may
start at all.

Rule (docs/engine.md, "A budget buys whole units"): a unit may start only while

    spent + sum over the units in flight and this one of (expected cost + dearest request)
          + dearest request <= budget.usd

A unit's expected cost is the dearest finished unit of its kind: the same arm on the same
endpoint. The dearest request (what any finished unit paid for one request) is the
per-request rule's own reservation: it admits a request only while spend plus that much per
request in flight and one more fits, and a unit near its end may have spent nearly its whole
expected cost already, so without this margin the per-request rule refuses a request at the
end and cuts every unit in flight (measured: 10 of 58 units cut at a $3.94 sim budget).
Decisions:

- Per kind, not the run's dearest unit: within one kind the sim's units differ by a few
  percent, across kinds by 2.6x (endpoint prices and verbosity, arm output), and a hosted
  panel's prices differ tenfold and more. The run's dearest unit, learnt from the first
  finished unit (arm `j` of repeat 0, the schedule's first), let a $3.94 sim budget start
  60 units and end with 9 whole.
- A kind with no finished unit yet has at most one unit in flight (it is how its cost is
  learnt); its next unit waits, and so does everything after it on that endpoint, so an
  endpoint still runs its units in order. An unknown kind counts at the dearest finished
  unit of its endpoint (prices and verbosity are most of the difference); on an endpoint
  with no finished unit, at its worst case (`first_guess`: the plan's requests per unit,
  each the largest request, at the endpoint's prices), or the run's dearest unit where the
  worst case is not known (0 when neither is). Counting a new endpoint at the run's dearest
  unit let a $0.60 sim run start a unit of a 1.7x dearer endpoint and lose 3 units to the
  per-request rule.
- A unit on an endpoint with no finished unit starts whenever nothing is in flight and a
  unit like the run's dearest (plus its margin) would fit, or nothing finished yet and
  spend is under the budget: the worst case is loose (3x the dearest sim unit) and, as a
  stop rule, ended a $0.60 sim run with half its budget unspent; running the unit alone is
  how the endpoint's cost is learnt, and the per-request rule bounds it. Any other unit
  that does not fit with nothing in flight ends the sweep.
- A unit's cost is what it ran up whether paid now or earlier (the larger of the bill's
  `cost_usd`, cache hits at their original cost, and `spent_usd`), learnt only from attempts
  that ran to their end (valid or arm behaviour); an infrastructure failure stops early and
  would understate it.
- Whole repeats first: under `budget.usd` the coordinator dispatches in `repeat_major`
  order (execution group, repeat, then configuration as given, then the schedule's arm
  order), not the plan's unit-by-unit round-robin over configurations, which at a $0.60 sim
  budget completed the first arm of every configuration and no pair. Each endpoint still
  runs its own units in schedule order, so only which endpoint goes first changes.
- The queue's order is kept: when the head may not start, nothing behind it starts. When
  nothing is in flight and the head still may not start, the budget is spent: the sweep
  stops as `budget_exhausted`, and a resume with a larger budget continues.

Before a priced sweep under `budget.usd`, `cover_line` says on stderr how many units the budget
is sure to buy, from the plan's worst case at the endpoints' prices (the probes record no
cost). `budget.requests` keeps only the per-request rule. Pure: values in, decisions out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from pipeline.config.schema import EndpointConfig, Prices
from pipeline.study import Study, UnitRunner, UnitSpec


class UnitKind(NamedTuple):
    """What a unit's cost depends on: its endpoint (prices, verbosity) and its arm."""

    config_id: str
    arm: str


def kind_of(spec: UnitSpec) -> UnitKind:
    return UnitKind(spec.config_id, spec.arm)


@dataclass
class UnitCosts:
    """What finished units cost (USD): the dearest per kind, and the dearest single request.
    The coordinator feeds it the attempts that ran to their end."""

    dearest: dict[UnitKind, float] = field(default_factory=dict)
    dearest_request: float = 0.0

    def observe(self, kind: UnitKind, usd: float, dearest_request: float = 0.0) -> None:
        self.dearest[kind] = max(self.dearest.get(kind, 0.0), usd)
        self.dearest_request = max(self.dearest_request, dearest_request)

    def knows_endpoint(self, config_id: str) -> bool:
        return any(k.config_id == config_id for k in self.dearest)

    def expected(self, kind: UnitKind, first_guess: Mapping[str, float]) -> float:
        """What a unit of `kind` is expected to cost (see the module doc)."""
        if kind in self.dearest:
            return self.dearest[kind]
        endpoint = [usd for k, usd in self.dearest.items() if k.config_id == kind.config_id]
        if endpoint:
            return max(endpoint)
        guess = first_guess.get(kind.config_id, 0.0)
        return guess if guess > 0 else max(self.dearest.values(), default=0.0)


@dataclass(frozen=True)
class StartCheck:
    """The state `may_start` decides on: spend so far and the units in flight per kind."""

    budget_usd: float | None
    spent_usd: float
    in_flight: Mapping[UnitKind, int]


def learning(kind: UnitKind, check: StartCheck, costs: UnitCosts) -> bool:
    """Is the first unit of `kind` still out under `budget.usd`? Then its endpoint starts
    nothing more until it is back: what the kind costs is not known yet."""
    return (
        check.budget_usd is not None
        and kind not in costs.dearest
        and check.in_flight.get(kind, 0) > 0
    )


def may_start(
    kind: UnitKind,
    check: StartCheck,
    costs: UnitCosts,
    first_guess: Mapping[str, float] | None = None,
) -> bool:
    """Whether one more unit of `kind` may start now under the budget."""
    if check.budget_usd is None:
        return True
    guess = first_guess or {}
    if learning(kind, check, costs):
        return False
    margin = costs.dearest_request  # the per-request rule's reservation (module doc)
    if not any(check.in_flight.values()) and not costs.knows_endpoint(kind.config_id):
        if not costs.dearest:  # a session's first unit
            return check.spent_usd < check.budget_usd
        # alone, a new endpoint learns its cost, if a unit like the run's dearest would fit
        typical = max(costs.dearest.values()) + 2 * margin
        return check.spent_usd + typical <= check.budget_usd
    committed = sum(n * (costs.expected(k, guess) + margin) for k, n in check.in_flight.items())
    own = costs.expected(kind, guess) + margin
    return check.spent_usd + committed + own + margin <= check.budget_usd


def repeat_major(specs: Sequence[UnitSpec]) -> list[UnitSpec]:
    """`specs` by execution group, repeat, configuration (first seen first), then the order
    given (the schedule's arm order): whole repeats before the next repeat of anyone."""
    first_seen: dict[str, int] = {}
    for spec in specs:
        first_seen.setdefault(spec.config_id, len(first_seen))
    return sorted(
        specs, key=lambda s: (s.execution_group, s.repeat, first_seen[s.config_id])
    )  # stable: the arm order within a repeat is the one given


# -- before the sweep: what the budget is expected to cover -----------------------------------
@dataclass(frozen=True)
class UnitWorstCase:
    """A unit's worst case on one endpoint: its requests, each the study's largest request
    (prompt plus reply, `ProbePlan.context_tokens`) billed at the dearer of the endpoint's
    input and output prices. `usd` is None when the study does not say its requests per unit.
    """

    requests: int | None
    request_tokens: int
    usd: float | None


def unit_worst_case(
    prices: Prices, requests_per_unit: int | None, request_tokens: int
) -> UnitWorstCase:
    per_token = max(prices.input_per_mtok, prices.output_per_mtok) / 1_000_000
    usd = None if requests_per_unit is None else requests_per_unit * request_tokens * per_token
    return UnitWorstCase(requests_per_unit, request_tokens, usd)


def plan_worst_cases(
    study: Study, endpoints: Sequence[EndpointConfig], runners: Mapping[str, UnitRunner]
) -> dict[str, UnitWorstCase]:
    """Every endpoint's unit worst case for this study (the coordinator's `first_guess`);
    `runners` are the ones the sweep built for its configurations (config_id -> runner)."""
    tokens = study.probe_plan().context_tokens
    return {
        ep.config_id: unit_worst_case(ep.prices, runners[ep.config_id].requests_per_unit, tokens)
        for ep in endpoints
    }


def priced(endpoints: Sequence[EndpointConfig]) -> bool:
    return any(ep.prices.input_per_mtok or ep.prices.output_per_mtok for ep in endpoints)


def cover_line(
    budget_usd: float,
    specs: Sequence[UnitSpec],
    worst: Mapping[str, UnitWorstCase],
    spent_usd: float = 0.0,
) -> str:
    """One line for stderr: how many of `specs` (whole repeats first) the budget is sure to buy.

    The probes record no cost, so the line rests on the plan's worst case and says so; a real
    unit costs less, so the budget covers at least this many. On a resume `spent_usd` is what
    earlier sessions paid (budgets are per run)."""
    left = budget_usd - spent_usd
    head = f"budget ${budget_usd:,.2f}" + (f" (${left:,.2f} left)" if spent_usd else "")
    cases = [worst[spec.config_id] for spec in repeat_major(specs)]  # the coordinator's order
    if any(case.usd is None for case in cases):
        return (
            f"{head}: what it covers is known only once units finish (the study does not say "
            "how many requests a unit sends)"
        )
    covered, total = 0, 0.0
    for case in cases:
        total += case.usd or 0.0
        if total > left:
            break
        covered += 1
    requests = sorted({case.requests for case in cases if case.requests is not None})
    tokens = max((case.request_tokens for case in cases), default=0)
    return (
        f"{head} covers at least {covered:,} of {len(specs):,} units at the endpoints' prices "
        f"and the plan's worst case ({'/'.join(map(str, requests))} requests a unit of up to "
        f"{tokens:,} tokens each; the probes record no cost)"
    )


def budget_preview(
    budget_usd: float | None,
    study: Study,
    endpoints: Sequence[EndpointConfig],
    specs: Sequence[UnitSpec],
    spent_usd: float = 0.0,
    *,
    runners: Mapping[str, UnitRunner],
) -> tuple[str | None, dict[str, float]]:
    """The pre-sweep line (None: no `budget.usd`, or no endpoint is priced) and each endpoint's
    unit worst case in USD, the coordinator's guess before any unit finished."""
    if budget_usd is None:
        return None, {}
    worst = plan_worst_cases(study, endpoints, runners)
    guess = {cid: case.usd or 0.0 for cid, case in worst.items()}
    if not priced(endpoints):
        return None, guess
    return cover_line(budget_usd, specs, worst, spent_usd), guess
