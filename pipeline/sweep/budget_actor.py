"""The run's budget on Ray: one actor owns the ledger for every EndpointWorker of the run.

A worker awaits `admit` before each request and sends `settle` without waiting (Ray keeps one
caller's calls to an actor in order). The actor exists only when the run has a budget, so an
unbudgeted sweep pays nothing for it on the request path.

The gate that travels to the EndpointWorkers names the actor; it does not hold its handle.
Ray puts any argument that contains an object ref (a pickled actor handle carries one) in the
object store, and for an actor that Ray restarts (`max_restarts=-1`) its core worker then
logged `core_worker.cc ... E ... has constructor arguments in the object store` on every
budgeted sweep (issue 32 §18), with reason: a restart after that object went out of scope
would fail. A name is a plain string, inlined with the rest of the settings; each process
looks the actor up once (`ray.get_actor`). The driver's gate keeps the handle it created, which
keeps the actor alive for the session.
"""

from __future__ import annotations

import uuid
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
    """A BudgetGate over the run's BudgetActor, by the actor's name (module doc)."""

    def __init__(self, name: str, handle: Any = None) -> None:
        self.name = name
        self._handle = handle

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "_handle": None}  # never pickle the handle (module doc)

    @property
    def handle(self) -> Any:
        if self._handle is None:
            self._handle = ray.get_actor(self.name)
        return self._handle

    async def admit(self, estimate_usd: float = 0.0) -> float | None:
        reserved: float | None = await self.handle.admit.remote(estimate_usd)
        return reserved

    def settle(self, reserved_usd: float, spent_usd: float) -> None:
        self.handle.settle.remote(reserved_usd, spent_usd)

    def charge(self, spent_usd: float) -> None:
        self.handle.charge.remote(spent_usd)


def start_budget(budget: BudgetConfig, *, spent_usd: float, requests: int) -> RayGate:
    name = f"foldsweep-budget-{uuid.uuid4().hex}"  # unique: runs may share a cluster
    options = BudgetActor.options(name=name)  # type: ignore[attr-defined]
    return RayGate(name, options.remote(budget, spent_usd, requests))
