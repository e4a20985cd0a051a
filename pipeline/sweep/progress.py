"""Live progress of a sweep: units done / planned, per-endpoint rate, errors, cost, ETA.

Uses rich when attached to a terminal; otherwise prints one plain line every `every_s`
seconds to stderr, so logs of batch jobs show progress too.

Two sources feed it:
- completed rows (`record`), and the coordinator's authoritative totals (`refresh`'s
  `cost_usd` and `requests`, which budgets and the manifest use too);
- live counters of the attempts whose rows have not reached the driver yet (`refresh`'s
  `live`): each EndpointWorker counts their requests, steps, tokens and cost as they happen
  (`pipeline.sweep.boundary.RequestBoundary`), and the dispatcher fetches them every few seconds.
  A unit against a slow local model can take a minute, so without them the display would
  stand still until the first one ends.

Live numbers are display only and never double count: an attempt is in the live counters
until the driver collects its row, and in the row totals from then on.

The ETA is based on requests: work done is every final unit's requests plus the requests the
attempts in flight have had answered, against planned units x the runner's
`requests_per_unit` (the study's runner says how many requests a unit sends). A step is a
request of the runner's step purpose. The display's words for a unit and a step come from the
study (`Study.progress_labels`), and so do the row columns of work a study prices without
sending (toolout's replayed requests and their cost): the line shows their sums apart, "priced
offline", so an offline replay does not read "requests 0 … cost $0.0000" while it prices
thousands. The ETA is shown once `ETA_MIN_REQUESTS` have been answered, long before the first
unit ends. Without live counters (a dispatcher that has none) it falls back to final units
against planned units.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pipeline.study import ProgressLabels, UnitOutcome
from pipeline.sweep.bill import Bill

ETA_MIN_REQUESTS = 3  # answered requests before a request-based ETA is shown
TTY_EVERY_S = 0.5  # the rich table is rebuilt at most this often (it refreshes twice a second)
PLAIN_ENDPOINTS = 10  # endpoints named on the plain line's "in flight" part, at most


@dataclass(slots=True)
class LiveCounts:
    """What one attempt has done so far, counted by its worker as it happens.

    `sent` counts requests as a row's `requests` column does (every request started, failed
    ones included); `completed` the answered ones, `failed` those that raised. `steps` are
    answered requests of the runner's step purpose (a Bill's `steps`), `tokens` reported
    prompt + completion tokens, `cost_usd` the priced cost. `finished`: the attempt has ended,
    but its row has not left the worker yet (its batch is still running).
    """

    sent: int = 0
    completed: int = 0
    failed: int = 0
    steps: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    finished: bool = False

    def copy(self) -> LiveCounts:
        return replace(self)

    @property
    def open(self) -> int:
        """Requests sent and not yet answered."""
        return self.sent - self.completed - self.failed


@dataclass(frozen=True)
class EndpointLive:
    """One endpoint's attempts whose rows have not reached the driver yet (row_id -> counts)."""

    steps_per_unit: int | None  # step requests per unit; None: the study cannot say
    attempts: dict[str, LiveCounts] = field(default_factory=dict)
    requests_per_unit: int | None = None  # the ETA's basis: every request of a unit


@dataclass
class _LiveSum:
    sent: int = 0
    open: int = 0
    completed: int = 0
    steps: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    running: int = 0  # attempts in flight that have not ended

    def add(self, other: _LiveSum) -> None:
        self.sent += other.sent
        self.open += other.open
        self.completed += other.completed
        self.steps += other.steps
        self.tokens += other.tokens
        self.cost_usd += other.cost_usd
        self.running += other.running


def _summed(attempts: Iterable[LiveCounts]) -> _LiveSum:
    out = _LiveSum()
    for a in attempts:
        out.sent += a.sent
        out.open += a.open
        out.completed += a.completed
        out.steps += a.steps
        out.tokens += a.tokens
        out.cost_usd += a.cost_usd
        out.running += not a.finished
    return out


class ProgressView:
    def __init__(
        self,
        planned: int,
        *,
        enabled: bool = True,
        every_s: float = 10.0,
        labels: ProgressLabels,
    ) -> None:
        self.planned = planned
        self.labels = labels
        self.enabled = enabled
        self.every_s = every_s
        self.started = time.monotonic()
        self.done: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        # This session's completed rows, per endpoint (the live counters add to these).
        self.row_requests: Counter[str] = Counter()
        self.row_steps: Counter[str] = Counter()
        self.row_tokens: Counter[str] = Counter()
        self.priced_requests = 0  # the study's priced-offline work (ProgressLabels), all rows
        self.priced_cost_usd = 0.0
        self.finals = 0
        self.cost = 0.0
        self.requests = 0
        self.live: Mapping[str, EndpointLive] = {}
        self._last_line = 0.0
        self._last_table = 0.0
        self._live: Any = None
        if enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.live import Live

            self._live = Live(console=Console(stderr=True), refresh_per_second=2, transient=False)
            self._live.start()

    @property
    def wants_live(self) -> bool:
        """Whether live counters are worth fetching (they are display only)."""
        return self.enabled

    def record(
        self,
        config_id: str,
        outcome: UnitOutcome,
        bill: Bill,
        row: Mapping[str, Any] | None = None,
    ) -> None:
        """A collected attempt; `row`: its study columns (the priced-offline work's source)."""
        self.done[config_id] += 1
        if not outcome.valid:
            self.errors[config_id] += 1
        if outcome.valid or not outcome.retryable:
            self.finals += 1
        self.row_requests[config_id] += bill.requests
        self.row_steps[config_id] += bill.steps
        tokens = (bill.prompt_tokens or 0) + (bill.completion_tokens or 0)
        self.row_tokens[config_id] += tokens
        if row is not None and self.labels.priced_requests is not None:
            self.priced_requests += int(row.get(self.labels.priced_requests) or 0)
        if row is not None and self.labels.priced_cost_usd is not None:
            self.priced_cost_usd += float(row.get(self.labels.priced_cost_usd) or 0.0)

    def _by_endpoint(self) -> dict[str, _LiveSum]:
        return {cid: _summed(view.attempts.values()) for cid, view in self.live.items()}

    def requests_per_unit(self) -> int | None:
        """Requests per unit, as the workers report it (None before any report or if unknown)."""
        for view in self.live.values():
            return view.requests_per_unit
        return None

    def steps_per_unit(self) -> int | None:
        """Steps per unit, as the workers report it (None before any report or if unknown)."""
        for view in self.live.values():
            return view.steps_per_unit
        return None

    def _eta(self, live: Mapping[str, _LiveSum]) -> tuple[float, str] | None:
        """(seconds, basis): request-based once a few requests are answered (module doc)."""
        elapsed = time.monotonic() - self.started
        per = self.requests_per_unit()
        if per is not None:
            done = self.finals * per + sum(s.completed for s in live.values())
            if done >= ETA_MIN_REQUESTS:
                return elapsed / done * max(self.planned * per - done, 0), "requests"
        if not self.finals:
            return None
        return elapsed / self.finals * max(self.planned - self.finals, 0), self.labels.unit

    def eta_s(self) -> float | None:
        eta = self._eta(self._by_endpoint())
        return None if eta is None else eta[0]

    def summary_line(self, *, per_endpoint: bool = True) -> str:
        live = self._by_endpoint()
        total = _LiveSum()
        for s in live.values():
            total.add(s)
        steps = sum(self.row_steps.values()) + total.steps
        per_unit = self.steps_per_unit()
        steps_text = f"{steps}/{self.planned * per_unit}" if per_unit is not None else str(steps)
        tokens = sum(self.row_tokens.values()) + total.tokens
        eta = self._eta(live)
        eta_text = f"{eta[0]:.0f}s (by {eta[1]})" if eta is not None else "?"
        return (
            f"{self.labels.unit} {self.finals}/{self.planned}  "
            f"in flight {total.running}{self._running_text(live) if per_endpoint else ''}  "
            f"attempts {sum(self.done.values())}  errors {sum(self.errors.values())}  "
            f"requests {self.requests + total.sent}{self._sent_word()} ({total.open} open)  "
            f"{self.labels.step} {steps_text}  "
            f"tokens {tokens}  cost ${self.cost + total.cost_usd:.4f}{self._priced_text()}  "
            f"eta {eta_text}"
        )

    def _sent_word(self) -> str:
        return " sent" if self.labels.priced_requests is not None else ""

    def _priced_text(self) -> str:
        """`  priced offline: N requests, $X` for a study that prices what it does not send."""
        if self.labels.priced_requests is None:
            return ""
        return f"  priced offline: {self.priced_requests} requests, ${self.priced_cost_usd:.4f}"

    @staticmethod
    def _running_text(live: Mapping[str, _LiveSum]) -> str:
        """` (a 2, b 1)`: units in flight per endpoint, the busiest first."""
        busy = sorted(((-s.running, cid) for cid, s in live.items() if s.running))
        if not busy:
            return ""
        named = [f"{cid} {-n}" for n, cid in busy[:PLAIN_ENDPOINTS]]
        if len(busy) > PLAIN_ENDPOINTS:
            named.append(f"+{len(busy) - PLAIN_ENDPOINTS} more")
        return " (" + ", ".join(named) + ")"

    def _table(self) -> Any:
        from rich.table import Table

        elapsed = max(time.monotonic() - self.started, 1e-9)
        live = self._by_endpoint()
        table = Table(title=self.summary_line(per_endpoint=False), title_justify="left")
        columns = (
            "endpoint",
            "in flight",
            "requests",
            self.labels.step,
            "attempts",
            "per min",
            "invalid",
        )
        for column in columns:
            table.add_column(column)
        for config_id in sorted(set(self.done) | set(live)):
            s = live.get(config_id, _LiveSum())
            rate = self.done[config_id] / elapsed * 60
            table.add_row(
                config_id,
                str(s.running),
                str(self.row_requests[config_id] + s.sent),
                str(self.row_steps[config_id] + s.steps),
                str(self.done[config_id]),
                f"{rate:.1f}",
                str(self.errors[config_id]),
            )
        return table

    def refresh(
        self, *, cost_usd: float, requests: int, live: Mapping[str, EndpointLive] | None = None
    ) -> None:
        """`cost_usd` and `requests`: the coordinator's totals from completed rows; `live`:
        the attempts not collected yet, per endpoint (None: keep the last)."""
        if not self.enabled:
            return
        self.cost, self.requests = cost_usd, requests
        if live is not None:
            self.live = live
        now = time.monotonic()
        if self._live is not None:
            if now - self._last_table >= TTY_EVERY_S:
                self._last_table = now
                self._live.update(self._table())
        elif now - self._last_line >= self.every_s:
            self._last_line = now
            print(self.summary_line(), file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.stop()
        elif self.enabled:
            print(self.summary_line(), file=sys.stderr, flush=True)
