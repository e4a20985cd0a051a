"""Live progress of a sweep: trajectories done / planned, per-endpoint rate, errors, cost, ETA.

Uses rich when attached to a terminal; otherwise prints one plain line every `every_s`
seconds to stderr, so logs of batch jobs show progress too.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Any


class ProgressView:
    def __init__(self, planned: int, *, enabled: bool = True, every_s: float = 10.0) -> None:
        self.planned = planned
        self.enabled = enabled
        self.every_s = every_s
        self.started = time.monotonic()
        self.done: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.finals = 0
        self.cost = 0.0
        self.requests = 0
        self._last_line = 0.0
        self._live: Any = None
        if enabled and sys.stderr.isatty():
            from rich.console import Console
            from rich.live import Live

            self._live = Live(console=Console(stderr=True), refresh_per_second=2, transient=False)
            self._live.start()

    def record(self, config_id: str, row: dict[str, Any]) -> None:
        self.done[config_id] += 1
        if not row["valid"]:
            self.errors[config_id] += 1
        if row["valid"] or not row["retryable"]:
            self.finals += 1

    def eta_s(self) -> float | None:
        elapsed = time.monotonic() - self.started
        if not self.finals:
            return None
        return elapsed / self.finals * max(self.planned - self.finals, 0)

    def summary_line(self) -> str:
        eta = self.eta_s()
        eta_text = f"{eta:.0f}s" if eta is not None else "?"
        return (
            f"trajectories {self.finals}/{self.planned}  attempts {sum(self.done.values())}  "
            f"errors {sum(self.errors.values())}  requests {self.requests}  "
            f"cost ${self.cost:.4f}  eta {eta_text}"
        )

    def _table(self) -> Any:
        from rich.table import Table

        elapsed = max(time.monotonic() - self.started, 1e-9)
        table = Table(title=self.summary_line(), title_justify="left")
        for column in ("endpoint", "attempts", "per min", "invalid"):
            table.add_column(column)
        for config_id in sorted(self.done):
            rate = self.done[config_id] / elapsed * 60
            table.add_row(
                config_id, str(self.done[config_id]), f"{rate:.1f}", str(self.errors[config_id])
            )
        return table

    def refresh(self, *, cost_usd: float, requests: int) -> None:
        if not self.enabled:
            return
        self.cost, self.requests = cost_usd, requests
        if self._live is not None:
            self._live.update(self._table())
        elif time.monotonic() - self._last_line >= self.every_s:
            self._last_line = time.monotonic()
            print(self.summary_line(), file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._live is not None:
            self._live.update(self._table())
            self._live.stop()
        elif self.enabled:
            print(self.summary_line(), file=sys.stderr, flush=True)
