"""Williams and Latin schedules: balance of position and first-order carryover."""

from __future__ import annotations

from collections import Counter

import pytest

from pipeline.sweep.schedules import closes, latin, schedule_rows, williams


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
