"""The per-configuration schedule offset, as the plan applies it (issue 10, beyond the paper)."""

from __future__ import annotations

from collections import defaultdict

from pipeline.sweep.plan import build_plan
from pipeline.sweep.schedules import balanced, closes, schedule_rows

ARMS = ["j", "m", "q", "x"]


def _orders(
    configs: int, arms: list[str], repeats: int, schedule: str
) -> dict[str, list[list[int]]]:
    specs = build_plan(
        "run", [(f"c{i}", f"m{i}", "fam") for i in range(configs)], arms, repeats, 0, schedule
    )
    rows: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)
    for spec in specs:
        rows[(spec.config_id, spec.repeat)].append((spec.schedule_position, arms.index(spec.arm)))
    by_config: dict[str, list[list[int]]] = defaultdict(list)
    for (config_id, _), items in sorted(rows.items()):
        by_config[config_id].append([arm for _, arm in sorted(items)])
    return by_config


def test_default_panel_balances_although_no_configuration_closes() -> None:
    """Local default: 2 configs x 4 arms x 2 repeats against a 4-row Williams cycle."""
    orders = _orders(2, ARMS, 2, "williams")
    assert not closes("williams", 4, 2)
    assert not balanced(orders["c0"], 4) and not balanced(orders["c1"], 4)
    assert balanced(orders["c0"] + orders["c1"], 4)


def test_first_configuration_keeps_the_schedule_rows_in_order() -> None:
    orders = _orders(3, ARMS, 2, "williams")
    assert orders["c0"] == schedule_rows("williams", 4)[:2]
    assert orders["c1"] == schedule_rows("williams", 4)[2:4]


def test_without_the_offset_the_same_panel_would_repeat_rows() -> None:
    """What the offset fixes: every config running rows 0 and 1 leaves rows 2 and 3 unused."""
    rows = schedule_rows("williams", 4)
    unbalanced = [rows[0], rows[1]] * 2
    assert not balanced(unbalanced, 4)
