"""The plan: schedule rows per repeat, row ids, dispatch interleaving, plan table."""

from __future__ import annotations

from collections import Counter

import pytest

from pipeline.store.schemas import PLAN
from pipeline.sweep.plan import (
    UnitSpec,
    build_plan,
    dispatch_order,
    plan_table,
    specs_from_plan,
)
from pipeline.sweep.schedules import williams

CONFIGS = [("c1", "model-1", "fam-a"), ("c2", "model-2", "fam-b"), ("c3", "model-3", "fam-a")]
ARMS = ["m", "x", "q"]


def test_build_plan_has_one_spec_per_config_arm_repeat() -> None:
    specs = build_plan("run", CONFIGS, ARMS, 6, 0, "williams")
    assert len(specs) == 3 * 3 * 6
    assert len({s.key for s in specs}) == len(specs)
    assert {s.attempt for s in specs} == {0}


def test_repeat_r_runs_arms_in_schedule_row_r_mod_rows() -> None:
    specs = build_plan("run", CONFIGS[:1], ARMS, 8, 2, "williams")
    rows = williams(3)  # 6 rows: repeat 7 uses row 1
    for repeat in (0, 5, 7):
        order = sorted((s for s in specs if s.repeat == repeat), key=lambda s: s.schedule_position)
        assert [s.arm for s in order] == [ARMS[i] for i in rows[repeat % 6]]
    assert {s.execution_group for s in specs} == {2}


def test_latin_plan_leads_with_each_arm_equally_often() -> None:
    specs = build_plan("run", CONFIGS[:1], ARMS, 3, 0, "latin")
    leaders = Counter(s.arm for s in specs if s.schedule_position == 0)
    assert leaders == {"m": 1, "x": 1, "q": 1}


def test_row_id_is_deterministic_and_names_the_attempt() -> None:
    spec = UnitSpec("run", "c1", "m1", "f", "q", 0, 3, 1, attempt=2)
    assert spec.row_id == "c1/q/g0/r3/a2"
    assert spec.key == ("c1", "q", 0, 3)


def test_dispatch_order_gives_every_config_work_first() -> None:
    specs = build_plan("run", CONFIGS, ARMS, 2, 0, "williams")
    ordered = dispatch_order(specs)
    assert sorted(ordered, key=lambda s: s.row_id) == sorted(specs, key=lambda s: s.row_id)
    assert [s.config_id for s in ordered[:3]] == ["c1", "c2", "c3"]
    first_c1 = [s for s in ordered if s.config_id == "c1"][:3]
    assert [(s.repeat, s.schedule_position) for s in first_c1] == [(0, 0), (0, 1), (0, 2)]


def test_plan_table_marks_excluded_config_arms_not_run() -> None:
    specs = build_plan("run", CONFIGS[:2], ARMS, 2, 0, "williams")
    table = plan_table(specs, {("c2", "q"): "probe_rejected_schema"})
    assert table.schema == PLAN
    records = table.to_pylist()
    excluded = [r for r in records if r["status"] == "not_run"]
    assert {(r["config_id"], r["arm"]) for r in excluded} == {("c2", "q")}
    assert {r["not_run_reason"] for r in excluded} == {"probe_rejected_schema"}
    assert len(excluded) == 2
    assert all(r["not_run_reason"] is None for r in records if r["status"] == "pending")


def test_specs_from_plan_rebuilds_the_runnable_specs() -> None:
    specs = build_plan("run", CONFIGS[:2], ARMS, 2, 0, "williams")
    table = plan_table(specs, {("c2", "q"): "probe_rejected_schema"})
    rebuilt = specs_from_plan(table)
    assert set(rebuilt) == {s for s in specs if (s.config_id, s.arm) != ("c2", "q")}


def test_build_plan_refuses_duplicate_configs_and_arms() -> None:
    with pytest.raises(ValueError, match="config_id 'c1'"):
        build_plan("run", [CONFIGS[0], CONFIGS[0]], ARMS, 1, 0, "williams")
    with pytest.raises(ValueError, match="arm 'q'"):
        build_plan("run", CONFIGS, ["q", "q"], 1, 0, "williams")
