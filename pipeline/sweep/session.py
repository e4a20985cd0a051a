"""One sweep session's view of its run directory: plan, rows and manifest state.

Why one object: the driver used to re-read rows/ for the owed specs, for the budgets carried
over, for the final counts and for the summary, and to rewrite the plan from what it read.
Here the committed rows are read once, when the session opens; rows this session commits are
added from the Sink (which wrote them), so every later question is answered in memory. The
plan is handed in (a resumed run's, as `prepare` read it) or written once when planned, and
kept in memory either way, never read back; at the session's close its statuses (`done` for
every key whose final attempt is final) are written back in one atomic replace, with the
manifest.

Only the columns those questions read are kept (`SESSION_COLUMNS`: the key, attempt, outcome,
cost, requests, simulated), not whole rows: 10,000 full rows as Arrow at the session's close
cost the driver about 94 MB of RSS (answer texts and all), the slim columns a few
(docs/benchmarks.md, memory).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.endpoints.probe import spent_by_probes
from pipeline.store.final import KEY
from pipeline.store.layout import Layout
from pipeline.store.manifest import (
    Manifest,
    RunStatus,
    outcome_counts,
    utc_now,
    write_manifest,
)
from pipeline.store.parts import store_plan, write_plan
from pipeline.store.reader import read_table
from pipeline.study import Record, UnitSpec
from pipeline.sweep.plan import dispatch_order, specs_from_plan
from pipeline.sweep.resume import resume_diff, specs_to_run

SESSION_COLUMNS = (
    "row_id",
    *KEY,
    "attempt",
    "valid",
    "invalid_reason",
    "retryable",
    "cost_usd",
    "requests",
    "simulated",
)
"""The rows columns a session answers from (resume diff, outcome counts, budgets)."""


class RunSession:
    """Plan, rows and manifest of one session; the only reader of rows/ in the driver."""

    def __init__(
        self,
        run_dir: Path,
        layout: Layout,
        manifest: Manifest,
        attempt_limit: int,
        *,
        plan: pa.Table | None,
    ):
        """`plan` is the run's as found (None: a new run, planned later with `set_plan`)."""
        self.run_dir = run_dir
        self.layout = layout
        self.manifest = manifest
        self.attempt_limit = attempt_limit
        self.plan = plan
        rows_schema = layout.schema("rows")
        self._schema = pa.schema([rows_schema.field(name) for name in SESSION_COLUMNS])
        # the one read of rows/
        self._prior = read_table(run_dir, "rows", layout).select(list(SESSION_COLUMNS))
        self._new: list[Record] = []
        self._rows: pa.Table | None = self._prior
        # what the run's requests paid: budgets count money spent, not replies' cost
        requests = read_table(run_dir, "requests", layout).select(
            ["spent_usd", "cache_hit", "attempt_in_request"]
        )
        self._paid_usd = float(pc.sum(requests.column("spent_usd")).as_py() or 0.0)
        first = pc.fill_null(pc.equal(requests.column("attempt_in_request"), 0), True)
        sent = pc.and_(pc.invert(pc.fill_null(requests.column("cache_hit"), False)), first)
        self._sent = int(pc.sum(sent).as_py() or 0)
        self._requests_on_record = requests.num_rows > 0

    # -- rows -------------------------------------------------------------------------------
    def add_rows(self, records: Sequence[Record]) -> None:
        """Rows this session committed (the Sink's `written`), in commit order."""
        if records:
            self._new.extend({name: r[name] for name in SESSION_COLUMNS} for r in records)
            self._rows = None

    def rows(self) -> pa.Table:
        """The run's rows so far, `SESSION_COLUMNS` only."""
        if self._rows is None:
            new = pa.Table.from_pylist(self._new, schema=self._schema)
            self._rows = pa.concat_tables([self._prior, new])
        return self._rows

    def add_requests(self, records: Sequence[Record]) -> None:
        """Request records this session committed (the Sink's), for the run's spend."""
        for record in records:
            self._paid_usd += record["spent_usd"] or 0.0
            self._sent += _sent_request(record)
        self._requests_on_record = self._requests_on_record or bool(records)

    def spent(self) -> dict[str, float]:
        """What the run has paid and sent so far: budgets are per run, not per session.

        From the `requests` table (cache hits are free, and attempts the budget cut count); a
        run written before that table existed is counted from its rows.
        """
        rows = self.rows()
        probes = spent_by_probes(self.manifest.probes)  # their replies are paid for too
        if not self._requests_on_record:
            if rows.num_rows == 0:
                return {"cost_usd": probes, "requests": 0.0, "attempts": 0.0}
            cost = pc.sum(rows.column("cost_usd")).as_py() or 0.0
            sent = pc.sum(rows.column("requests")).as_py() or 0
            return {
                "cost_usd": float(cost) + probes,
                "requests": float(sent),
                "attempts": rows.num_rows,
            }
        return {
            "cost_usd": self._paid_usd + probes,
            "requests": float(self._sent),
            "attempts": rows.num_rows,
        }

    def any_simulated(self) -> bool:
        rows = self.rows()
        return rows.num_rows > 0 and bool(pc.any(rows.column("simulated")).as_py())

    # -- plan -------------------------------------------------------------------------------
    def set_plan(self, plan: pa.Table) -> None:
        """Write the plan (once, before any dispatch) and keep it as written."""
        self.plan = store_plan(self.run_dir, plan)

    def owed_specs(self) -> list[UnitSpec]:
        """Every attempt still owed, in dispatch order."""
        assert self.plan is not None, "owed_specs before the plan was written"
        state = resume_diff(self.plan, self.rows(), self.attempt_limit)
        return dispatch_order(specs_to_run(specs_from_plan(self.plan), state))

    def _plan_with_statuses(self) -> pa.Table:
        """The plan with status `done` for every key whose final attempt is final."""
        assert self.plan is not None
        done = set(resume_diff(self.plan, self.rows(), self.attempt_limit).done)
        keys = zip(
            *(self.plan.column(c).to_pylist() for c in ("config_id", "arm", "execution_group")),
            self.plan.column("repeat").to_pylist(),
            strict=True,
        )
        statuses = self.plan.column("status").to_pylist()
        updated = [
            "done" if (c, a, g, r) in done else s
            for (c, a, g, r), s in zip(keys, statuses, strict=True)
        ]
        index = self.plan.schema.get_field_index("status")
        return self.plan.set_column(index, "status", pa.array(updated, pa.string()))

    # -- manifest ---------------------------------------------------------------------------
    def write(self, manifest: Manifest) -> Manifest:
        self.manifest = manifest
        write_manifest(self.run_dir, manifest)
        return manifest

    def update_extra(self, **extra: Any) -> Manifest:
        return self.write(
            dataclasses.replace(self.manifest, extra={**self.manifest.extra, **extra})
        )

    def finish(self, status: RunStatus, extra: dict[str, Any]) -> Manifest:
        """Close the session: plan statuses and manifest counts from the rows in memory."""
        if self.plan is None:  # no plan yet: there are no counts to state
            closed = dataclasses.replace(
                self.manifest,
                status=status,
                finished_at=utc_now(),
                extra={**self.manifest.extra, **extra},
            )
            return self.write(closed)
        self.plan = self._plan_with_statuses()
        write_plan(self.run_dir, self.plan)
        unfinished = None if status in ("completed", "nothing_ran") else status
        if unfinished is not None and isinstance(extra.get("stop_reason"), str):
            unfinished = extra["stop_reason"]  # e.g. provider_credits, under budget_exhausted
        counts = outcome_counts(self.plan, self.rows(), unfinished_as=unfinished)
        closed = self.manifest.finish(status, counts)
        return self.write(dataclasses.replace(closed, extra={**closed.extra, **extra}))


def _sent_request(record: Record) -> bool:
    """A request counted against `budget.requests`: sent, not a cache hit, and its first
    HTTP attempt (a retry is the same request again; the requests table holds each)."""
    return not record["cache_hit"] and not record.get("attempt_in_request")
