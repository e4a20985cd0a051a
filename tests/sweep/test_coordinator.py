"""The coordinator's rules, with a scripted dispatcher (no Ray, no HTTP)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pipeline.config import BudgetConfig
from pipeline.study import UnitSpec
from pipeline.sweep.coordinator import Completion, Coordinator
from pipeline.sweep.rows import UnitRecords
from pipeline.sweep.sink import Sink
from tests.store.layouts import CARRIER_LAYOUT
from tests.sweep.rowfactory import records_for

Outcome = Callable[[UnitSpec], UnitRecords | None]


def records(
    spec: UnitSpec,
    *,
    valid: bool,
    reason: str | None = None,
    retryable: bool = False,
    cost: float = 0.0,
) -> UnitRecords:
    return records_for(spec, valid=valid, reason=reason, retryable=retryable, cost=cost)


class ScriptedDispatcher:
    """Completes each submitted spec on the next poll with `outcome(spec)`."""

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.pending: list[UnitSpec] = []
        self.submitted: list[UnitSpec] = []

    def submit(self, spec: UnitSpec) -> None:
        self.pending.append(spec)
        self.submitted.append(spec)

    def in_flight(self, config_id: str) -> int:
        return sum(s.config_id == config_id for s in self.pending)

    def busy(self) -> bool:
        return bool(self.pending)

    def poll(self, timeout_s: float) -> list[Completion]:
        done, self.pending = self.pending, []
        out = []
        for spec in done:
            recs = self.outcome(spec)
            out.append(Completion(spec, recs, None if recs else "ActorDiedError"))
        return out


def specs(n: int, config: str = "c1") -> list[UnitSpec]:
    return [UnitSpec("run", config, "m", "f", "q", 0, r, 0) for r in range(n)]


def coordinator(tmp_path: Path, dispatcher: ScriptedDispatcher, **kw: Any) -> Coordinator:
    def lost(spec: UnitSpec, detail: str) -> UnitRecords:
        return records(spec, valid=False, reason="infrastructure:worker_lost", retryable=True)

    return Coordinator(
        dispatcher=dispatcher,
        sink=Sink(tmp_path, "run", CARRIER_LAYOUT),
        attempt_limit=kw.pop("attempt_limit", 3),
        budget=kw.pop("budget", BudgetConfig()),
        caps=kw.pop("caps", {"c1": 2}),
        lost_records=lost,
        poll_s=0.0,
        **kw,
    )


def written_rows(tmp_path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted((tmp_path / "rows").glob("*.parquet")):
        rows += pq.read_table(path).to_pylist()
    return rows


def test_infrastructure_invalid_rows_are_requeued_as_new_attempts(tmp_path: Path) -> None:
    def outcome(spec: UnitSpec) -> UnitRecords:
        if spec.attempt == 0:
            return records(spec, valid=False, reason="infrastructure:http_503", retryable=True)
        return records(spec, valid=True)

    result = coordinator(tmp_path, ScriptedDispatcher(outcome)).run(specs(3))
    rows = written_rows(tmp_path)
    assert result.status == "completed"
    assert sorted((r["repeat"], r["attempt"], r["valid"]) for r in rows) == [
        (0, 0, False),
        (0, 1, True),
        (1, 0, False),
        (1, 1, True),
        (2, 0, False),
        (2, 1, True),
    ]


def test_arm_behaviour_invalid_rows_are_never_requeued(tmp_path: Path) -> None:
    dispatcher = ScriptedDispatcher(
        lambda s: records(s, valid=False, reason="catch_up", retryable=False)
    )
    coordinator(tmp_path, dispatcher).run(specs(2))
    assert [s.attempt for s in dispatcher.submitted] == [0, 0]


def test_attempts_stop_at_the_limit(tmp_path: Path) -> None:
    dispatcher = ScriptedDispatcher(
        lambda s: records(s, valid=False, reason="infrastructure:timeout", retryable=True)
    )
    coordinator(tmp_path, dispatcher, attempt_limit=3).run(specs(1))
    assert [s.attempt for s in dispatcher.submitted] == [0, 1, 2]


def test_lost_worker_in_flight_becomes_an_infrastructure_attempt(tmp_path: Path) -> None:
    dispatcher = ScriptedDispatcher(lambda s: None if s.attempt == 0 else records(s, valid=True))
    coordinator(tmp_path, dispatcher).run(specs(1))
    rows = written_rows(tmp_path)
    assert [(r["attempt"], r["invalid_reason"]) for r in rows] == [
        (0, "infrastructure:worker_lost"),
        (1, None),
    ]


def test_budget_stop_writes_what_was_paid_and_leaves_the_rest(tmp_path: Path) -> None:
    dispatcher = ScriptedDispatcher(lambda s: records(s, valid=True, cost=1.0))
    result = coordinator(tmp_path, dispatcher, budget=BudgetConfig(usd=2.5), caps={"c1": 1}).run(
        specs(6)
    )
    assert result.status == "budget_exhausted"
    # the per-request rule is the workers'; the coordinator starts a unit only while the
    # budget covers it at the dearest unit of its kind (unit_budget.py): a third $1 unit
    # would pass $2.50, so it never starts and nothing is cut
    assert len(written_rows(tmp_path)) == 2 and result.cost_usd == 2.0
    assert len(result.not_dispatched) == 4 and result.cut == 0


def test_an_attempt_the_budget_cut_is_not_run_and_stops_dispatching(tmp_path: Path) -> None:
    from pipeline.sweep.bill import Bill
    from pipeline.sweep.rows import cut_records

    def outcome(s: UnitSpec) -> UnitRecords:
        if s.repeat == 1:
            return cut_records(s, "budget_exhausted", Bill(requests=2, spent_usd=0.5), ())
        return records(s, valid=True, cost=0.1)

    result = coordinator(
        tmp_path, ScriptedDispatcher(outcome), budget=BudgetConfig(usd=10), caps={"c1": 1}
    ).run(specs(4))
    assert result.status == "budget_exhausted" and result.cut == 1
    assert [s.repeat for s in result.not_dispatched] == [1, 2, 3]  # the cut one first
    assert [r["repeat"] for r in written_rows(tmp_path)] == [0]  # no row for the cut attempt
    assert result.cost_usd == 0.6  # what it paid before the stop counts


def test_endpoint_cap_bounds_in_flight(tmp_path: Path) -> None:
    peak = 0

    class Peeking(ScriptedDispatcher):
        def poll(self, timeout_s: float) -> list[Completion]:
            nonlocal peak
            peak = max(peak, len(self.pending))
            return super().poll(timeout_s)

    coordinator(tmp_path, Peeking(lambda s: records(s, valid=True)), caps={"c1": 2}).run(specs(7))
    assert peak == 2


def test_stop_request_stops_dispatching(tmp_path: Path) -> None:
    calls = {"n": 0}

    def should_stop() -> bool:
        calls["n"] += 1
        return calls["n"] > 2

    result = coordinator(
        tmp_path,
        ScriptedDispatcher(lambda s: records(s, valid=True)),
        caps={"c1": 1},
        should_stop=should_stop,
    ).run(specs(5))
    assert result.status == "stopped" and result.not_dispatched


def test_a_budget_that_covers_the_sweep_completes_it(tmp_path: Path) -> None:
    dispatcher = ScriptedDispatcher(lambda s: records(s, valid=True, cost=1.0))
    result = coordinator(tmp_path, dispatcher, budget=BudgetConfig(usd=3.0), caps={"c1": 1}).run(
        specs(3)
    )
    assert result.status == "completed" and len(written_rows(tmp_path)) == 3
