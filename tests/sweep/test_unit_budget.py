"""A budget buys whole units (issue 31 §6): the pure start rule and the coordinator using it."""

from __future__ import annotations

from collections import deque
from pathlib import Path

import pytest

from pipeline.config import BudgetConfig
from pipeline.config.schema import Prices
from pipeline.study import UnitSpec
from pipeline.sweep.rows import UnitRecords
from pipeline.sweep.unit_budget import (
    StartCheck,
    UnitCosts,
    UnitKind,
    UnitWorstCase,
    cover_line,
    may_start,
    repeat_major,
    unit_worst_case,
)
from tests.sweep.test_coordinator import ScriptedDispatcher, coordinator, records, written_rows

J0, J1, Q0 = UnitKind("c0", "j"), UnitKind("c1", "j"), UnitKind("c0", "q")


def check(spent: float, budget: float | None = 10.0, **in_flight: int) -> StartCheck:
    flight = {UnitKind(*key.split("_")): n for key, n in in_flight.items()}
    return StartCheck(budget, spent, flight)


def known(**dearest: float) -> UnitCosts:
    return UnitCosts({UnitKind(*key.split("_")): usd for key, usd in dearest.items()})


def test_without_a_dollar_budget_every_unit_may_start() -> None:
    assert may_start(J0, check(99.0, budget=None, c0_j=500), UnitCosts())


def test_a_unit_starts_only_while_spend_units_in_flight_and_its_own_cost_fit() -> None:
    costs = known(c0_j=2.0, c0_q=3.0)
    assert may_start(J0, check(3.0, c0_j=1, c0_q=1), costs)  # 3 + 2 + 3 + 2 = 10 fits
    assert not may_start(Q0, check(3.0, c0_j=1, c0_q=1), costs)  # 3 + 2 + 3 + 3 = 11
    assert may_start(Q0, check(2.0, c0_j=1, c0_q=1), costs)  # 2 + 2 + 3 + 3 = 10


def test_each_unit_in_flight_also_keeps_room_for_one_dearest_request() -> None:
    costs = known(c0_j=2.0)
    costs.observe(J0, 2.0, dearest_request=0.5)
    # 4 + 2 x (2 + 0.5) + 0.5 = 9.5 fits; a third unit would need 12
    assert may_start(J0, check(4.0, c0_j=1), costs)
    assert not may_start(J0, check(4.0, c0_j=2), costs)


def test_a_kind_with_no_finished_unit_has_one_unit_in_flight() -> None:
    costs = known(c0_j=1.0)
    assert may_start(Q0, check(0.0, c0_j=1), costs)  # counted at its endpoint's dearest unit
    assert not may_start(Q0, check(0.0, c0_j=1, c0_q=1), costs)  # its first is still out


def test_a_new_endpoint_counts_at_its_worst_case_while_others_are_in_flight() -> None:
    costs, guess = known(c0_j=1.0), {"c1": 6.5}
    assert not may_start(J1, check(2.0, c0_j=2), costs, guess)  # 2 + 2 + 6.5 > 10
    assert may_start(J1, check(2.0, c0_j=1), costs, guess)  # 2 + 1 + 6.5 = 9.5
    # with no worst case known, the run's dearest unit stands in
    assert may_start(J1, check(2.0, c0_j=2), costs, {})


def test_a_new_endpoint_starts_alone_even_when_its_worst_case_exceeds_what_is_left() -> None:
    costs, guess = known(c0_j=1.0), {"c1": 60.0}
    assert may_start(J1, check(9.0), costs, guess)
    assert not may_start(J1, check(9.5), costs, guess)  # not even a unit like the dearest
    assert not may_start(J0, check(9.5), costs, guess)  # a known kind that cannot fit: done


def test_a_sessions_first_unit_always_starts() -> None:
    assert may_start(J0, check(0.0, budget=0.5), UnitCosts(), {"c0": 99.0})


def test_repeat_major_puts_whole_repeats_first_and_keeps_the_arm_order() -> None:
    def spec(config: str, arm: str, repeat: int, position: int) -> UnitSpec:
        return UnitSpec("run", config, "m", "f", arm, 0, repeat, position)

    # the plan's dispatch order: round-robin over configurations, unit by unit
    given = [
        spec("c0", "q", 0, 0), spec("c1", "j", 0, 0), spec("c0", "j", 0, 1),
        spec("c1", "q", 0, 1), spec("c0", "j", 1, 0), spec("c1", "q", 1, 0),
        spec("c0", "q", 1, 1), spec("c1", "j", 1, 1),
    ]  # fmt: skip
    assert [(s.config_id, s.repeat, s.arm) for s in repeat_major(given)] == [
        ("c0", 0, "q"), ("c0", 0, "j"), ("c1", 0, "j"), ("c1", 0, "q"),
        ("c0", 1, "j"), ("c0", 1, "q"), ("c1", 1, "q"), ("c1", 1, "j"),
    ]  # fmt: skip


def test_the_worst_case_prices_every_request_at_the_largest_size_and_dearer_price() -> None:
    case = unit_worst_case(Prices(input_per_mtok=2, output_per_mtok=10), 4, 5_000)
    assert case.usd == pytest.approx(4 * 5_000 * 10 / 1e6)
    assert unit_worst_case(Prices(), None, 5_000).usd is None


def test_the_cover_line_counts_the_units_the_budget_buys_whole_repeats_first() -> None:
    units = [UnitSpec("run", c, "m", "f", "j", 0, r, 0) for c in ("a", "b") for r in range(3)]
    worst = {"a": UnitWorstCase(4, 5_000, 0.2), "b": UnitWorstCase(4, 5_000, 1.0)}
    line = cover_line(1.5, units, worst)
    assert line.startswith("budget $1.50 covers at least 3 of 6 units")  # a, b, a: $1.40
    assert "worst case" in line and "4 requests a unit of up to 5,000 tokens" in line
    assert "($1.00 left)" in cover_line(1.5, units, worst, spent_usd=0.5)
    unknown = {"a": UnitWorstCase(None, 5_000, None), "b": worst["b"]}
    assert "known only once units finish" in cover_line(1.5, units, unknown)


# -- the coordinator: whole units, no cut, whole repeats first -------------------------------
def plan(configs: int, arms: str, repeats: int) -> list[UnitSpec]:
    """The plan's dispatch order: round-robin over configurations, unit by unit."""
    per_config = [
        [UnitSpec("run", f"c{i}", "m", "f", arm, 0, r, p) for r in range(repeats)
         for p, arm in enumerate(arms)]
        for i in range(configs)
    ]  # fmt: skip
    return [unit for depth in zip(*per_config, strict=True) for unit in depth]


def dearer_on_c1(spec: UnitSpec) -> UnitRecords:
    return records(spec, valid=True, cost=2.0 if spec.config_id == "c1" else 1.0)


def test_a_budget_below_the_sweep_buys_whole_repeats_and_cuts_nothing(tmp_path: Path) -> None:
    dispatcher = ScriptedDispatcher(dearer_on_c1)
    result = coordinator(
        tmp_path, dispatcher, budget=BudgetConfig(usd=7.5), caps={"c0": 8, "c1": 8}
    ).run(plan(2, "jq", 3))  # 12 units, $18
    assert result.status == "budget_exhausted" and result.cut == 0
    rows = written_rows(tmp_path)
    assert result.cost_usd == sum(r["cost_usd"] for r in rows) == 7.0
    # repeat 0 of both ($6, each kind's first unit at once), then c0's repeat 1 in its arm
    # order: j ($7) fits, q would make $8
    first = repeat_major(plan(2, "jq", 3))[:5]
    assert dispatcher.submitted == first and len(result.not_dispatched) == 7
    assert sorted(r["row_id"] for r in rows) == sorted(s.row_id for s in first)


def test_the_same_sweep_without_a_budget_keeps_the_plans_order(tmp_path: Path) -> None:
    dispatcher = ScriptedDispatcher(dearer_on_c1)
    result = coordinator(tmp_path, dispatcher, caps={"c0": 8, "c1": 8}).run(plan(2, "jq", 3))
    assert result.status == "completed" and dispatcher.submitted == plan(2, "jq", 3)


def test_an_endpoint_learning_a_kinds_cost_holds_its_later_units(tmp_path: Path) -> None:
    dispatcher = ScriptedDispatcher(lambda s: records(s, valid=True, cost=1.0))
    coord = coordinator(tmp_path, dispatcher, budget=BudgetConfig(usd=100), caps={"c0": 8})
    coord.unit_costs.observe(UnitKind("c0", "j"), 1.0)  # j is known, q is not
    pending = deque(plan(1, "qj", 2))
    coord._dispatch(pending)  # one dispatch scan, before any completion
    # q r0 goes out to learn q's cost, j r0 after it; q r1 waits for it, and j r1 behind q r1
    assert [(s.repeat, s.arm) for s in dispatcher.submitted] == [(0, "q"), (0, "j")]
    assert [(s.repeat, s.arm) for s in pending] == [(1, "q"), (1, "j")]
