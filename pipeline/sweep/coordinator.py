"""The event loop of a sweep: dispatch, collect, re-queue, budgets, graceful stop.

It knows nothing of Ray or HTTP: a Dispatcher submits trajectories and reports completions
(Ray in production, scripted fakes in tests). It is the only writer of the sweep's tables,
through the Sink.

Rules:
- An infrastructure-invalid attempt (retryable) is re-queued as attempt + 1 while attempts
  remain; arm behaviour is never re-queued (DESIGN §4).
- A lost worker's in-flight trajectories become infrastructure attempts (`worker_lost`) and
  are re-queued the same way.
- A budget stop or a signal stops dispatching; attempts already in flight are paid for, so
  they are awaited and written. What never ran is reported as not run with the reason.
- Budgets, totals and the manifest count completed rows only. A dispatcher may also offer
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
    cost_usd: float
    requests: int
    attempts: int


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
        self.stopping: RunStatus | None = None
        self.in_flight_total = 0
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
        while queue and free > 0 and self._budget_allows_one_more():
            spec = queue.popleft()
            if room[spec.config_id] > 0:
                self.dispatcher.submit(spec)
                self.in_flight_total += 1
                self.sink.event("dispatch", config_id=spec.config_id, row_id=spec.row_id)
                room[spec.config_id] -= 1
                free -= 1
            else:
                held.append(spec)
        queue.extendleft(reversed(held))  # held specs go back in front, in order

    def _collect(self, completion: Completion, queue: deque[UnitSpec]) -> None:
        spec = completion.spec
        records = completion.records
        if records is None:
            detail = completion.lost_detail or "worker lost"
            records = self.lost_records(spec, detail)
            self.sink.event("worker_lost", config_id=spec.config_id, row_id=spec.row_id)
        outcome = records.outcome
        self.sink.add(records)
        self.in_flight_total -= 1
        self.attempts += 1
        self.cost += outcome.cost_usd
        self.requests += outcome.requests
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
            self.progress.record(spec.config_id, records.outcome)

    def carry_over(self, *, cost_usd: float, requests: float, attempts: float) -> None:
        """Start from what earlier sessions of a resumed run spent (budgets are per run)."""
        self.cost, self.requests, self.attempts = cost_usd, int(requests), int(attempts)

    def _budget_allows_one_more(self) -> bool:
        """Would one more attempt, at the mean cost so far, stay within the budgets?

        Attempts in flight are counted at the mean too, so the sweep stops dispatching before
        the money runs out rather than after. Before the first completion the mean is unknown
        (zero), so the first wave can overshoot by at most the in-flight caps.
        """
        done = max(self.attempts, 1)
        ahead = self.in_flight_total + 1
        usd, requests = self.budget.usd, self.budget.requests
        if usd is not None and self.cost + ahead * self.cost / done > usd:
            return False
        return requests is None or self.requests + ahead * self.requests / done <= requests

    def _check_guards(self, queued: int) -> None:
        if self.stopping:
            return
        spent = (self.budget.usd is not None and self.cost >= self.budget.usd) or (
            self.budget.requests is not None and self.requests >= self.budget.requests
        )
        starved = self.in_flight_total == 0 and not self._budget_allows_one_more()
        if queued > 0 and (spent or starved):  # with nothing left to dispatch, nothing to stop
            self.stopping = "budget_exhausted"
        elif self.should_stop():
            self.stopping = "stopped"
        if self.stopping:
            self.sink.event(self.stopping, cost_usd=round(self.cost, 6), requests=self.requests)

    def run(self, specs: list[UnitSpec]) -> SweepOutcome:
        """Run until every spec is final or a guard stops dispatching.

        A second interrupt (KeyboardInterrupt) abandons attempts in flight: they are not
        written, so a resume runs them again; everything already collected is flushed.
        """
        queue: deque[UnitSpec] = deque(specs)
        # An endpoint missing from `caps` gets one trajectory in flight.
        self.caps = {**{spec.config_id: 1 for spec in specs}, **self.caps}
        try:
            self._loop(queue)
        except KeyboardInterrupt:
            self.stopping = "stopped"
            self.sink.event("aborted", cost_usd=round(self.cost, 6), requests=self.requests)
        self.sink.flush()
        return SweepOutcome(
            status=self.stopping or "completed",
            not_dispatched=tuple(queue),
            cost_usd=self.cost,
            requests=self.requests,
            attempts=self.attempts,
        )

    def _loop(self, queue: deque[UnitSpec]) -> None:
        while queue or self.dispatcher.busy():
            self._check_guards(len(queue))
            if not self.stopping:
                self._dispatch(queue)
            elif not self.dispatcher.busy():
                break
            for completion in self.dispatcher.poll(self.poll_s):
                self._collect(completion, queue)
            self._check_guards(len(queue))
            self.sink.maybe_flush()
            if self.progress:
                live = self.live_source.live() if self.live_source is not None else None
                self.progress.refresh(cost_usd=self.cost, requests=self.requests, live=live)
