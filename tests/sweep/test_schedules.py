"""Williams and Latin schedules: balance of position and first-order carryover."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import fields

import pytest

from pipeline.sweep.schedules import (
    ScheduleClosure,
    balanced,
    carryover_counts,
    closes,
    closing_repeats,
    closure,
    cycle_length,
    latin,
    position_counts,
    row_offset,
    rows_for,
    schedule_rows,
    williams,
)


def adjacent_pairs(rows: list[list[int]]) -> Counter[tuple[int, int]]:
    return Counter((row[i], row[i + 1]) for row in rows for i in range(len(row) - 1))


def positions(rows: list[list[int]]) -> Counter[tuple[int, int]]:
    return Counter((item, pos) for row in rows for pos, item in enumerate(row))


@pytest.mark.parametrize("n", range(2, 8))
def test_williams_every_ordered_pair_is_adjacent_equally_often(n: int) -> None:
    pairs = adjacent_pairs(williams(n))
    assert set(pairs) == {(a, b) for a in range(n) for b in range(n) if a != b}
    assert len(set(pairs.values())) == 1


@pytest.mark.parametrize("n", range(2, 8))
def test_williams_every_item_takes_every_position_equally_often(n: int) -> None:
    rows = williams(n)
    counts = positions(rows)
    assert set(counts) == {(a, p) for a in range(n) for p in range(n)}
    assert set(counts.values()) == {len(rows) // n}


@pytest.mark.parametrize("n", range(1, 8))
def test_williams_has_n_rows_when_even_and_2n_when_odd(n: int) -> None:
    rows = williams(n)
    expected = 1 if n == 1 else (n if n % 2 == 0 else 2 * n)
    assert len(rows) == expected
    assert all(sorted(row) == list(range(n)) for row in rows)


@pytest.mark.parametrize("n", range(1, 8))
def test_latin_square_balances_position(n: int) -> None:
    rows = latin(n)
    assert len(rows) == n
    assert set(positions(rows).values()) == {1}


def test_latin_square_confounds_carryover_with_arm() -> None:
    # The paper's caution: each arm keeps a single predecessor on a rotating square.
    assert set(adjacent_pairs(latin(4))) == {(0, 1), (1, 2), (2, 3), (3, 0)}


def test_closes_only_on_whole_cycles() -> None:
    assert closes("williams", 4, 8)
    assert not closes("williams", 3, 3)  # odd: a cycle is 6 rows
    assert closes("williams", 3, 6)
    assert not closes("latin", 2, 7)  # the paper's sweep whose rotation did not close


def test_unknown_schedule_and_empty_arm_list_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown schedule"):
        schedule_rows("random", 3)
    with pytest.raises(ValueError, match="at least one arm"):
        williams(0)


def panel_rows(name: str, n: int, repeats: int, configs: int) -> list[list[int]]:
    return [row for i in range(configs) for row in rows_for(name, n, repeats, i)]


def row_uses(name: str, n: int, repeats: int, configs: int) -> list[int]:
    cycle = schedule_rows(name, n)
    used = panel_rows(name, n, repeats, configs)
    return [sum(1 for row in used if row == cycle_row) for cycle_row in cycle]


@pytest.mark.parametrize(
    ("name", "n", "expected"),
    [("williams", 1, 1), ("williams", 4, 4), ("williams", 13, 26), ("latin", 13, 13)],
)
def test_cycle_length_is_n_for_even_williams_and_latin_and_2n_for_odd_williams(
    name: str, n: int, expected: int
) -> None:
    assert cycle_length(name, n) == expected


def test_default_four_arms_two_repeats_does_not_close_and_names_four() -> None:
    result = closure("williams", 4, 2)
    assert not result.closes
    assert result.closing_repeats == 4
    assert result.warning() == (
        "schedule williams over 4 arms does not close with 2 repeats: use repeats=4 "
        "(or a multiple of 4) for position and carryover balance"
    )


def test_recent_panel_thirteen_arms_four_repeats_names_twenty_six() -> None:
    result = closure("williams", 13, 4)
    assert (result.cycle_length, result.closes, result.closing_repeats) == (26, False, 26)
    assert "use repeats=26 (or a multiple of 26)" in (result.warning() or "")


@pytest.mark.parametrize(
    ("name", "n", "repeats", "expected"),
    [("williams", 4, 4, 4), ("williams", 4, 5, 8), ("williams", 3, 7, 12), ("latin", 2, 7, 8)],
)
def test_closing_repeats_is_the_next_multiple_of_the_cycle(
    name: str, n: int, repeats: int, expected: int
) -> None:
    assert closing_repeats(name, n, repeats) == expected
    assert closes(name, n, expected)


def test_a_closed_schedule_has_no_warning() -> None:
    assert closure("williams", 4, 8).warning() is None
    assert closure("williams", 1, 1).warning() is None


def test_latin_warning_promises_position_balance_only() -> None:
    # Closing a rotating square does not balance carryover, so the line must not say it does.
    warning = closure("latin", 2, 7).warning() or ""
    assert warning.endswith("use repeats=8 (or a multiple of 2) for position balance")


def test_closure_record_is_json_ready_for_the_manifest() -> None:
    record = closure("williams", 13, 4).as_record()
    assert record == {
        "schedule": "williams",
        "arms": 13,
        "repeats": 4,
        "cycle_length": 26,
        "closes": False,
        "closing_repeats": 26,
        "configs": 1,
        "panel_closes": False,
        "panel_closing_repeats": 26,
    }
    assert json.loads(json.dumps(record)) == record
    assert set(record) == {field.name for field in fields(ScheduleClosure)}


def test_zero_repeats_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one repeat"):
        closure("williams", 4, 0)


def test_offset_zero_for_first_config_keeps_the_paper_schedule() -> None:
    for name in ("williams", "latin"):
        for n in range(1, 8):
            rows = schedule_rows(name, n)
            for repeats in range(1, 2 * len(rows) + 2):
                assert row_offset(0, repeats, len(rows)) == 0
                expected = [rows[r % len(rows)] for r in range(repeats)]
                assert rows_for(name, n, repeats, 0) == expected


def test_configs_blocks_of_rows_follow_each_other_around_the_cycle() -> None:
    # Williams over 4 arms, 2 repeats: config 0 rows 0, 1; config 1 rows 2, 3; config 2 wraps.
    rows = williams(4)
    assert [row_offset(i, 2, 4) for i in range(3)] == [0, 2, 0]
    assert rows_for("williams", 4, 2, 1) == [rows[2], rows[3]]
    # More repeats than rows: config 1 starts where config 0 stopped (5 mod 4 = 1).
    assert rows_for("williams", 4, 5, 1) == [rows[1], rows[2], rows[3], rows[0], rows[1]]


@pytest.mark.parametrize(
    ("name", "n", "repeats", "configs"),
    [
        ("williams", 4, 2, 2),  # the local panel: 2 configs x 2 repeats = one 4-row cycle
        ("williams", 3, 2, 3),  # odd: L = 6
        ("williams", 13, 4, 13),  # 13 x 4 = 52 = two 26-row cycles
        ("williams", 6, 4, 3),  # 12 = two 6-row cycles
    ],
)
def test_offsets_balance_the_panel_when_configs_times_repeats_fills_cycles(
    name: str, n: int, repeats: int, configs: int
) -> None:
    assert not closes(name, n, repeats)
    assert not any(balanced(rows_for(name, n, repeats, i), n) for i in range(configs))
    assert balanced(panel_rows(name, n, repeats, configs), n)


def test_without_offsets_the_same_panel_stays_unbalanced() -> None:
    # What the offset buys: every config repeating rows 0, 1 never reaches rows 2, 3.
    same_rows = [row for _ in range(2) for row in rows_for("williams", 4, 2, 0)]
    assert not balanced(same_rows, 4)


@pytest.mark.parametrize("name", ["williams", "latin"])
@pytest.mark.parametrize("n", [2, 3, 4, 5, 13])
@pytest.mark.parametrize("repeats", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("configs", [1, 2, 3, 5, 20])
def test_offsets_without_full_panel_cycle_are_as_even_as_possible(
    name: str, n: int, repeats: int, configs: int
) -> None:
    uses = row_uses(name, n, repeats, configs)
    assert sum(uses) == repeats * configs
    assert max(uses) - min(uses) <= 1


def test_recent_panel_twenty_configs_use_rows_three_or_four_times() -> None:
    # 20 admitted configs x 4 repeats = 80 rows against 26: 3 full cycles and 2 rows over.
    assert sorted(row_uses("williams", 13, 4, 20)) == [3] * 24 + [4] * 2


def test_position_and_carryover_counts_read_within_rows_only() -> None:
    rows = [[0, 1, 2], [2, 0, 1]]
    first, second = {(0, 0): 1, (1, 1): 1, (2, 2): 1}, {(2, 0): 1, (0, 1): 1, (1, 2): 1}
    assert position_counts(rows) == first | second
    # (2, 2) across the row boundary is not carryover.
    assert carryover_counts(rows) == {(0, 1): 2, (1, 2): 1, (2, 0): 1}


@pytest.mark.parametrize("n", range(2, 9))
def test_balanced_accepts_a_full_williams_cycle(n: int) -> None:
    assert balanced(williams(n), n)


@pytest.mark.parametrize("n", range(3, 9))
def test_balanced_rejects_a_latin_squares_carryover(n: int) -> None:
    # The paper's design: every position balanced, every arm with one predecessor.
    rows = latin(n)
    assert set(position_counts(rows).values()) == {1}
    assert not balanced(rows, n)


def test_two_arms_latin_and_williams_coincide_and_both_balance() -> None:
    assert latin(2) == williams(2)
    assert balanced(latin(2), 2)


@pytest.mark.parametrize("n", [3, 5, 7])
def test_half_an_odd_williams_cycle_is_not_balanced(n: int) -> None:
    assert not balanced(williams(n)[:n], n)


def test_balanced_refuses_no_rows_and_accepts_a_single_arm() -> None:
    assert not balanced([], 3)
    assert balanced([[0]], 1)


# --- the panel as a whole (issue 19 item 12) -------------------------------------------------


def test_a_panel_that_tiles_whole_cycles_gets_no_warning() -> None:
    # the default local panel: 2 configurations x 2 repeats = one 4-row Williams cycle
    result = closure("williams", 4, 2, configs=2)
    assert not result.closes and result.panel_closes
    assert result.warning() is None
    assert result.as_record()["panel_closes"] is True


def test_a_panel_that_does_not_tile_names_its_rows_and_the_repeats_that_balance_it() -> None:
    result = closure("williams", 4, 2, configs=3)
    assert not result.panel_closes and result.panel_closing_repeats == 4
    assert result.warning() == (
        "schedule williams over 4 arms does not balance across the panel: 3 configurations x "
        "2 repeats = 6 rows, not a multiple of its 4-row cycle; use repeats=4 for panel-level "
        "position and carryover balance"
    )
    five = closure("williams", 13, 4, configs=5)  # 20 rows of a 26-row cycle
    assert five.panel_closing_repeats == 26
    assert "use repeats=26 for panel-level" in (five.warning() or "")
    two = closure("williams", 4, 1, configs=2)  # 2 rows of 4: repeats=2 tiles, 4 per config
    assert two.panel_closing_repeats == 2
    assert (two.warning() or "").endswith(
        "use repeats=2 for panel-level position and carryover balance (repeats=4 balances "
        "each configuration too)"
    )
