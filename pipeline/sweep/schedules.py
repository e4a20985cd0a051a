"""Arm orders within an execution group: Williams design (default) and rotating Latin square.

The paper interleaved arms on a rotating Latin square, which balances position but confounds
first-order carryover with arm (each arm keeps the same predecessor) and says a Williams design
would fix that. So the default here is Williams (1949): every arm takes every position, and
every ordered pair of distinct arms is adjacent, equally often over one full cycle of rows.

A cycle is ``n`` rows for an even number of arms and ``2n`` rows (the square plus its mirror
image) for an odd number. Balance holds only over complete cycles: ``closes`` says whether a
number of repeats completes them, and the sweep records that in the manifest (the paper
disclosed a sweep whose rotation did not close).

Items are arm indices ``0..n-1``; ``n == 1`` gives the single row ``[[0]]``.
"""

from __future__ import annotations

from collections.abc import Callable

Schedule = list[list[int]]


def williams(n: int) -> Schedule:
    """Williams design for ``n`` items: n rows (n even) or 2n rows (n odd)."""
    _check(n)
    if n == 1:
        return [[0]]
    first = _zigzag(n)
    rows = [[(item + shift) % n for item in first] for shift in range(n)]
    if n % 2:
        rows += [list(reversed(row)) for row in rows]
    return rows


def latin(n: int) -> Schedule:
    """Rotating (cyclic) Latin square: row r is ``r, r+1, ..., r+n-1`` mod n."""
    _check(n)
    return [[(row + col) % n for col in range(n)] for row in range(n)]


SCHEDULES: dict[str, Callable[[int], Schedule]] = {"williams": williams, "latin": latin}


def schedule_rows(name: str, n: int) -> Schedule:
    """The rows of schedule ``name`` (williams | latin) for ``n`` arms."""
    try:
        build = SCHEDULES[name]
    except KeyError:
        raise ValueError(f"unknown schedule {name!r}; choose one of {sorted(SCHEDULES)}") from None
    return build(n)


def closes(name: str, n: int, repeats: int) -> bool:
    """True when ``repeats`` is a whole number of schedule cycles (balance then holds)."""
    return repeats % len(schedule_rows(name, n)) == 0


def _zigzag(n: int) -> list[int]:
    """0, 1, n-1, 2, n-2, ...: the first row whose successive differences are all distinct."""
    order = [0]
    low, high = 1, n - 1
    take_low = True
    while len(order) < n:
        if take_low:
            order.append(low)
            low += 1
        else:
            order.append(high)
            high -= 1
        take_low = not take_low
    return order


def _check(n: int) -> None:
    if n < 1:
        raise ValueError(f"a schedule needs at least one arm, got {n}")
