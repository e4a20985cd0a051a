"""The run's budget on Ray: one actor owns the ledger for every EndpointWorker of the run.

A worker awaits `admit` before each request and sends `settle` without waiting (Ray keeps one
caller's calls to an actor in order). The actor exists only when the run has a budget, so an
unbudgeted sweep pays nothing for it on the request path.
"""

from __future__ import annotations

from typing import Any

import ray

from pipeline.config.schema import BudgetConfig
from pipeline.sweep.budget import BudgetLedger, LedgerState


@ray.remote(num_cpus=0, max_restarts=0)
class BudgetActor:
    def __init__(self, budget: BudgetConfig, spent_usd: float, requests: int) -> None:
        self.ledger = BudgetLedger(budget, spent_usd=spent_usd, requests=requests)

    def admit(self, estimate_usd: float) -> float | None:
        return self.ledger.admit(estimate_usd)

    def settle(self, reserved_usd: float, spent_usd: float) -> None:
        self.ledger.settle(reserved_usd, spent_usd)

    def charge(self, spent_usd: float) -> None:
        self.ledger.charge(spent_usd)

    def state(self) -> LedgerState:
        return self.ledger.state()


class RayGate:
    """A BudgetGate over the run's BudgetActor (picklable: it is a handle)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    async def admit(self, estimate_usd: float = 0.0) -> float | None:
        reserved: float | None = await self.handle.admit.remote(estimate_usd)
        return reserved

    def settle(self, reserved_usd: float, spent_usd: float) -> None:
        self.handle.settle.remote(reserved_usd, spent_usd)

    def charge(self, spent_usd: float) -> None:
        self.handle.charge.remote(spent_usd)


def start_budget(budget: BudgetConfig, *, spent_usd: float, requests: int) -> RayGate:
    handle = BudgetActor.remote(budget, spent_usd, requests)  # type: ignore[attr-defined]
    return RayGate(handle)
