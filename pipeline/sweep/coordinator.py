"""The event loop of a sweep: dispatch, collect, re-queue, budgets, graceful stop.

It knows nothing of Ray or HTTP: a Dispatcher submits units and reports completions
(Ray in production, scripted fakes in tests). It is the only writer of the sweep's tables,
through the Sink.

Rules:
- An infrastructure-invalid attempt (retryable) is re-queued as attempt + 1 while attempts
  remain; arm behaviour is never re-queued (DESIGN §4).
- A lost worker's in-flight units become infrastructure attempts (`worker_lost`) and
  are re-queued the same way.
- Budgets are checked before every request, by the request boundary in the workers
  (pipeline/sweep/budget.py). An attempt the budget cut comes back without a row (`cut`): its
  unit is not run (`budget_exhausted`), nothing more is dispatched, the attempts in flight
  are awaited (each ends at its next request), and a resume continues the cut units, their
  earlier requests answered from the response cache. The coordinator itself also stops
  dispatching once what was spent reaches a budget.
- Under `budget.usd` a budget buys whole units (pipeline/sweep/unit_budget.py): a unit starts
  only while the spend, the expected cost of the units in flight and its own fit the budget;
  whole repeats go first, and the queue keeps its order (when the head may not start,
  nothing behind it does). When nothing is in flight and the head still may not start, the
  sweep stops as `budget_exhausted`.
- A signal stops dispatching; attempts already in flight are awaited and written. What never
  ran is reported as not run with the reason.
- Totals count collected attempts: `cost_usd` is what this session paid (`spent_usd`: cache
  hits are free), `requests` what it sent. A dispatcher may also offer
  `live()` (the RayDispatcher does): live counters of the attempts in flight, which go to the
  progress display and nowhere else.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from pipeline.config.schema import BudgetConfig
from pipeline.store.manifest import RunStatus
from pipeline.study import UnitSpec
from pipeline.sweep.progress import EndpointLive, ProgressView
from pipeline.sweep.rows import UnitRecords
from pipeline.sweep.sink import Sink
from pipeline.sweep.unit_budget import (
    StartCheck,
    UnitCosts,
    UnitKind,
    kind_of,
    learning,
    may_start,
    repeat_major,
)


@dataclass(frozen=True)
class Completion:
    spec: UnitSpec
    records: UnitRecords | None  # None: the worker was lost mid-flight
    lost_detail: str | None = None


class Dispatcher(Protocol):
    def submit(self, spec: UnitSpec) -> None: ...
    def poll(self, timeout_s: float) -> list[Completion]: ...
    def in_flight(self, config_id: str) -> int: ...
    def busy(self) -> bool: ...


@runtime_checkable
class LiveSource(Protocol):
    """Optional extra of a Dispatcher: live counters per endpoint, without blocking."""

    def live(self) -> Mapping[str, EndpointLive]: ...


@dataclass(frozen=True)
class SweepOutcome:
    status: RunStatus  # completed | budget_exhausted | stopped
    not_dispatched: tuple[UnitSpec, ...]
    cost_usd: float  # paid this session (cache hits are free)
    requests: int  # sent this session
    attempts: int
    cache_hits: int = 0
    cut: int = 0  # attempts the budget stopped mid-flight (their units are not run)
    stop_reason: str | None = None  # why the first cut came: budget_exhausted | provider_credits
    stop_detail: str | None = None  # the provider's own message, for provider_credits


class Coordinator:
    def __init__(
        self,
        *,
        dispatcher: Dispatcher,
        sink: Sink,
        attempt_limit: int,
        budget: BudgetConfig,
        caps: dict[str, int],
        lost_records: Callable[[UnitSpec, str], UnitRecords],
        progress: ProgressView | None = None,
        should_stop: Callable[[], bool] = lambda: False,
        poll_s: float = 0.2,
        first_guess: Mapping[str, float] | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.sink = sink
        self.attempt_limit = attempt_limit
        self.budget = budget
        self.caps = caps
        self.lost_records = lost_records
        self.progress = progress
        self.should_stop = should_stop
        self.poll_s = poll_s
        self.cost = 0.0
        self.requests = 0
        self.attempts = 0
        self.cache_hits = 0
        self.cut: list[UnitSpec] = []
        self.stop_reason: str | None = None  # a cut's reason: budget_exhausted, provider_credits
        self.stop_detail: str | None = None  # what the provider said, for provider_credits
        self.stopping: RunStatus | None = None
        self.in_flight_total = 0
        # a budget buys whole units: the dearest finished unit per endpoint, and each
        # endpoint's worst case before any unit finished (unit_budget.py)
        self.unit_costs = UnitCosts()
        self.first_guess: Mapping[str, float] = first_guess or {}
        self.in_flight_by: dict[UnitKind, int] = {}
        self.live_source: LiveSource | None = None
        if progress is not None and progress.wants_live and isinstance(dispatcher, LiveSource):
            self.live_source = dispatcher

    def _dispatch(self, queue: deque[UnitSpec]) -> None:
        """Submit queued specs whose endpoint has room, preserving order otherwise.

        The scan stops once no endpoint has room: a long queue is not walked on every poll
        (it was, and cost the driver, which also hosts sim servers, a core under load).
        """
        room = {cid: cap - self.dispatcher.in_flight(cid) for cid, cap in self.caps.items()}
        free = sum(r for r in room.values() if r > 0)
        held: deque[UnitSpec] = deque()
        while queue and free > 0 and not self._spent():
            spec = queue.popleft()
            cid, kind = spec.config_id, kind_of(spec)
            if room[cid] <= 0:
                held.append(spec)
            elif learning(kind, self._start_check(), self.unit_costs):
                held.append(spec)  # its kind's cost is being learnt: the endpoint waits
                room[cid] = 0
            elif not self._affordable(kind):
                held.append(spec)  # the budget does not cover it yet: nothing jumps ahead
                break
            else:
                self.dispatcher.submit(spec)
                self.in_flight_total += 1
                self.in_flight_by[kind] = self.in_flight_by.get(kind, 0) + 1
                self.sink.event("dispatch", config_id=cid, row_id=spec.row_id)
                room[cid] -= 1
                free -= 1
        queue.extendleft(reversed(held))  # held specs go back in front, in order

    def _start_check(self) -> StartCheck:
        return StartCheck(self.budget.usd, self.cost, self.in_flight_by)

    def _affordable(self, kind: UnitKind) -> bool:
        """May one more unit of `kind` start under `budget.usd`? (unit_budget.py)"""
        return may_start(kind, self._start_check(), self.unit_costs, self.first_guess)

    def _collect(self, completion: Completion, queue: deque[UnitSpec]) -> None:
        spec = completion.spec
        records = completion.records
        if records is None:
            detail = completion.lost_detail or "worker lost"
            records = self.lost_records(spec, detail)
            self.sink.event("worker_lost", config_id=spec.config_id, row_id=spec.row_id)
        outcome, bill = records.outcome, records.bill
        self.sink.add(records)
        self.in_flight_total -= 1
        self.in_flight_by[kind_of(spec)] -= 1
        self.cost += bill.spent_usd
        self.requests += bill.paid_requests
        self.cache_hits += bill.cache_hits
        if records.cut is not None:  # the budget stopped it: not run, continued on resume
            self.cut.append(spec)
            self.sink.event(
                "budget_cut", config_id=spec.config_id, row_id=spec.row_id, cut=records.cut
            )
            if self.stop_reason is None:  # the first stop names why (budget or provider 402)
                self.stop_reason = records.cut
                self.stop_detail = outcome.error_detail
            self.stopping = self.stopping or "budget_exhausted"
            return
        self.attempts += 1
        if completion.records is not None and not outcome.retryable:  # ran to its end
            self._learn_cost(spec, records)
        self.sink.event(
            "complete",
            config_id=spec.config_id,
            row_id=spec.row_id,
            valid=outcome.valid,
            reason=outcome.invalid_reason,
        )
        if outcome.retryable and not outcome.valid:
            if spec.attempt + 1 < self.attempt_limit:
                queue.append(replace(spec, attempt=spec.attempt + 1))
                self.sink.event("requeue", config_id=spec.config_id, row_id=spec.row_id)
            else:
                self.sink.event("attempts_exhausted", config_id=spec.config_id, row_id=spec.row_id)
        if self.progress:
            self.progress.record(spec.config_id, records.outcome, bill, row=records.row)

    def _learn_cost(self, spec: UnitSpec, records: UnitRecords) -> None:
        """What the unit cost, paid now or earlier, and its dearest request (unit_budget.py)."""
        bill = records.bill
        paid = [float(r.get("spent_usd") or 0.0) for r in records.requests]
        self.unit_costs.observe(
            kind_of(spec), max(bill.cost_usd, bill.spent_usd), max(paid, default=0.0)
        )

    def carry_over(self, *, cost_usd: float, requests: float, attempts: float) -> None:
        """Start from what earlier sessions of a resumed run spent (budgets are per run)."""
        self.cost, self.requests, self.attempts = cost_usd, int(requests), int(attempts)

    def _spent(self) -> bool:
        """Has what was paid reached a budget? (The per-request rule is the workers'.)"""
        usd, requests = self.budget.usd, self.budget.requests
        return (usd is not None and self.cost >= usd) or (
            requests is not None and self.requests >= requests
        )

    def _check_guards(self, queue: deque[UnitSpec]) -> None:
        if self.stopping:
            return
        if queue and self._spent():  # with nothing left to dispatch, nothing to stop
            self.stopping = "budget_exhausted"
        elif queue and not self.dispatcher.busy() and not self._affordable(kind_of(queue[0])):
            self.stopping = "budget_exhausted"  # what is left cannot buy the next unit
        elif self.should_stop():
            self.stopping = "stopped"
        if self.stopping:
            self.sink.event(self.stopping, cost_usd=round(self.cost, 6), requests=self.requests)

    def run(self, specs: list[UnitSpec]) -> SweepOutcome:
        """Run until every spec is final or a guard stops dispatching.

        A second interrupt (KeyboardInterrupt) abandons attempts in flight: they are not
        written, so a resume runs them again; everything already collected is flushed.
        """
        # under a dollar budget, whole repeats first (unit_budget.py)
        ordered = repeat_major(specs) if self.budget.usd is not None else specs
        queue: deque[UnitSpec] = deque(ordered)
        # An endpoint missing from `caps` gets one unit in flight.
        self.caps = {**{spec.config_id: 1 for spec in specs}, **self.caps}
        try:
            self._loop(queue)
        except KeyboardInterrupt:
            self.stopping = "stopped"
            self.sink.event("aborted", cost_usd=round(self.cost, 6), requests=self.requests)
        self.sink.flush()
        return SweepOutcome(
            status=self.stopping or "completed",
            not_dispatched=(*self.cut, *queue),
            cost_usd=self.cost,
            requests=self.requests,
            attempts=self.attempts,
            cache_hits=self.cache_hits,
            cut=len(self.cut),
            stop_reason=self.stop_reason,
            stop_detail=self.stop_detail,
        )

    def _loop(self, queue: deque[UnitSpec]) -> None:
        while queue or self.dispatcher.busy():
            self._check_guards(queue)
            if not self.stopping:
                self._dispatch(queue)
            elif not self.dispatcher.busy():
                break
            for completion in self.dispatcher.poll(self.poll_s):
                self._collect(completion, queue)
            self._check_guards(queue)
            self.sink.maybe_flush()
            if self.progress:
                live = self.live_source.live() if self.live_source is not None else None
                self.progress.refresh(cost_usd=self.cost, requests=self.requests, live=live)
