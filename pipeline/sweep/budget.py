"""The run's budget, checked before every request (not between attempts).

Rule (docs/engine.md, "The request boundary"): a request is admitted only while the run's
spend, plus a reservation for every request in flight, plus one more reservation stays under
`budget.usd`; a reservation is the dearest request seen so far or, before any request of the
run has settled with a cost, the request's own worst case at the endpoint's prices (its
estimated prompt plus `max_tokens` of output; 0 where the endpoint has no prices). The worst
case guards the first wave, when nothing is known; after it the dearest real request is a
far closer guess (a worst case at a 2,400-token cap stopped a sweep with half its budget
unspent and no unit finished).
`budget.requests` counts requests sent (cache hits are free) and in flight, and is never
exceeded. The first refusal stops the run for good (sticky): every later request is refused,
so the units in flight end at their next request as not run (`budget_exhausted`), and a
resume continues them, answering their earlier requests from the response cache.

Why the bound holds: when the last request was admitted, spend + reservations + its own
reservation was under the budget, and every reply that settles later costs at most the
dearest request, so the overshoot is at most (requests in flight) x (the dearest request).

`BudgetLedger` is the pure rule. In one process a worker calls it directly (`LocalGate`); on
Ray one `BudgetActor` (pipeline/sweep/budget_actor.py) owns it for every worker of the run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pipeline.config.schema import BudgetConfig

BUDGET_STOP = "budget_exhausted"
PROVIDER_CREDITS = "provider_credits"  # the not-run reason of a provider's 402 stop


class BudgetStop(BaseException):
    """Raised at a request the budget refuses; ends the unit as not run.

    A BaseException so that no study's `except Exception` can turn it into data: a study
    never decides what a budget stop means.
    """

    reason = BUDGET_STOP


class ProviderCreditsStop(BudgetStop):
    """The provider refused to bill the account (HTTP 402: out of credits, a key's spend
    limit): the unit ends not run (`provider_credits`) and the run stops like a budget stop."""

    reason = PROVIDER_CREDITS

    def __init__(self, provider_message: str) -> None:
        super().__init__(provider_message)
        self.provider_message = provider_message


@dataclass(frozen=True)
class LedgerState:
    spent_usd: float
    requests: int
    in_flight: int
    dearest_usd: float
    stopped: bool


class BudgetLedger:
    """The pure admission rule over one run's spend (see the module doc)."""

    def __init__(self, budget: BudgetConfig, *, spent_usd: float = 0.0, requests: int = 0):
        self.usd = budget.usd
        self.max_requests = budget.requests
        self.spent_usd = spent_usd
        self.requests = requests
        self.reserved_usd = 0.0
        self.in_flight = 0
        self.dearest_usd = 0.0
        self.stopped = False

    def admit(self, estimate_usd: float = 0.0) -> float | None:
        """A reservation (USD) for one more request, or None: refused, and stopped for good."""
        if self.stopped:
            return None
        ahead = self.dearest_usd if self.dearest_usd > 0 else estimate_usd
        over_usd = self.usd is not None and self.spent_usd + self.reserved_usd + ahead >= self.usd
        over_requests = (
            self.max_requests is not None and self.requests + self.in_flight + 1 > self.max_requests
        )
        if over_usd or over_requests:
            self.stopped = True
            return None
        self.reserved_usd += ahead
        self.in_flight += 1
        return ahead

    def settle(self, reserved_usd: float, spent_usd: float, *, sent: bool = True) -> None:
        """A request admitted with `reserved_usd` ended, having cost `spent_usd`."""
        self.reserved_usd = max(0.0, self.reserved_usd - reserved_usd)
        self.in_flight -= 1
        self.spent_usd += spent_usd
        self.requests += sent
        self.dearest_usd = max(self.dearest_usd, spent_usd)

    def charge(self, spent_usd: float) -> None:
        """Money spent outside any admitted request (the probes, before the first unit)."""
        self.spent_usd += spent_usd

    def state(self) -> LedgerState:
        return LedgerState(
            self.spent_usd, self.requests, self.in_flight, self.dearest_usd, self.stopped
        )


class BudgetGate(Protocol):
    """What the request boundary asks before it sends a request."""

    async def admit(self, estimate_usd: float = 0.0) -> float | None: ...

    def settle(self, reserved_usd: float, spent_usd: float) -> None: ...

    def charge(self, spent_usd: float) -> None: ...


class LocalGate:
    """The ledger itself, for workers in this process (tests, one-process tools)."""

    def __init__(self, ledger: BudgetLedger) -> None:
        self.ledger = ledger

    async def admit(self, estimate_usd: float = 0.0) -> float | None:
        return self.ledger.admit(estimate_usd)

    def settle(self, reserved_usd: float, spent_usd: float) -> None:
        self.ledger.settle(reserved_usd, spent_usd)

    def charge(self, spent_usd: float) -> None:
        self.ledger.charge(spent_usd)


def budget_set(budget: BudgetConfig) -> bool:
    """Whether the run has a budget at all (no budget: no gate, nothing on the hot path)."""
    return budget.usd is not None or budget.requests is not None
