"""Arm orders within an execution group: Williams design (default) and rotating Latin square.

The paper interleaved arms on a rotating Latin square, which balances position but confounds
first-order carryover with arm (each arm keeps the same predecessor) and says a Williams design
would fix that. So the default here is Williams (1949): every arm takes every position, and
every ordered pair of distinct arms is adjacent, equally often over one full cycle of rows.

A cycle is ``n`` rows for an even number of arms and ``2n`` rows (the square plus its mirror
image) for an odd number; a Latin cycle is ``n`` rows. Balance holds only over complete cycles,
and the default sweeps do not complete them (4 arms x 2 repeats against 4 Williams rows; 13 arms
x 4 repeats against 26). The paper disclosed one sweep whose rotation did not close and left it
there. Here ``closure`` turns that into a value the sweep records per execution group and a
one-line warning naming the repeat count that would close.

Beyond the paper, a per-configuration row offset: configuration ``i`` (0-based, panel order)
starts at row ``(i * repeats) mod L``. The configurations' blocks then tile the cycle end to
end, so every row is used as evenly as possible across the panel, and when ``configs * repeats``
is a multiple of ``L`` the panel as a whole balances position and carryover even though no
single configuration closes. Configuration 0 keeps the paper's schedule (offset 0). The offset
balances pooled (panel-level) comparisons only; a configuration that does not close is still
unbalanced on its own.

Items are arm indices ``0..n-1``; ``n == 1`` gives the single row ``[[0]]``. Everything here is
a pure function of values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

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


def cycle_length(name: str, n: int) -> int:
    """Rows in one full cycle: the unit over which the schedule's balance holds."""
    return len(schedule_rows(name, n))


def closes(name: str, n: int, repeats: int) -> bool:
    """True when ``repeats`` is a whole number of schedule cycles (balance then holds)."""
    return repeats % cycle_length(name, n) == 0


def closing_repeats(name: str, n: int, repeats: int) -> int:
    """The smallest repeat count ``>= repeats`` that closes: the next multiple of the cycle."""
    _check_repeats(repeats)
    length = cycle_length(name, n)
    return -(-repeats // length) * length


@dataclass(frozen=True)
class ScheduleClosure:
    """Whether one execution group's repeats complete the schedule's cycles, and what would.

    `closes` is per configuration; `panel_closes` is the panel as a whole, whose blocks tile
    the cycle end to end (the row offset above): `configs * repeats` rows from row 0.
    """

    schedule: str
    arms: int
    repeats: int
    cycle_length: int
    closes: bool
    closing_repeats: int
    configs: int = 1
    panel_closes: bool = False
    panel_closing_repeats: int = 0

    def warning(self) -> str | None:
        """One line when the panel as a whole leaves a cycle unfinished, else None.

        A panel that balances as a whole (the default: 2 configurations x 2 repeats over 4
        Williams rows) gets no warning, even though no single configuration closes (issue 19).
        """
        if self.panel_closes:
            return None
        # A closed Latin square still confounds carryover, so promise only what closing buys.
        balance = "position" if self.schedule == "latin" else "position and carryover"
        if self.configs == 1:
            return (
                f"schedule {self.schedule} over {self.arms} arms does not close with "
                f"{self.repeats} repeats: use repeats={self.closing_repeats} (or a multiple of "
                f"{self.cycle_length}) for {balance} balance"
            )
        each = ""
        if self.panel_closing_repeats != self.closing_repeats:
            each = f" (repeats={self.closing_repeats} balances each configuration too)"
        return (
            f"schedule {self.schedule} over {self.arms} arms does not balance across the panel: "
            f"{self.configs} configurations x {self.repeats} repeats = "
            f"{self.configs * self.repeats} rows, not a multiple of its {self.cycle_length}-row "
            f"cycle; use repeats={self.panel_closing_repeats} for panel-level {balance} "
            f"balance{each}"
        )

    def as_record(self) -> dict[str, str | int | bool]:
        """The manifest record (JSON-ready), one per execution group."""
        return {
            "schedule": self.schedule,
            "arms": self.arms,
            "repeats": self.repeats,
            "cycle_length": self.cycle_length,
            "closes": self.closes,
            "closing_repeats": self.closing_repeats,
            "configs": self.configs,
            "panel_closes": self.panel_closes,
            "panel_closing_repeats": self.panel_closing_repeats,
        }


def closure(name: str, n: int, repeats: int, configs: int = 1) -> ScheduleClosure:
    """The closure value of schedule ``name`` over ``n`` arms, ``repeats`` repeats and a panel
    of ``configs`` configurations."""
    _check_repeats(repeats)
    length = cycle_length(name, n)
    panel_repeats = next(r for r in range(repeats, repeats + length) if configs * r % length == 0)
    return ScheduleClosure(
        schedule=name,
        arms=n,
        repeats=repeats,
        cycle_length=length,
        closes=repeats % length == 0,
        closing_repeats=closing_repeats(name, n, repeats),
        configs=configs,
        panel_closes=configs * repeats % length == 0,
        panel_closing_repeats=panel_repeats,
    )


def row_offset(config_index: int, repeats: int, cycle_length: int) -> int:
    """First row of configuration ``config_index``: its block follows the previous config's."""
    if config_index < 0:
        raise ValueError(f"config_index must be >= 0, got {config_index}")
    _check_repeats(repeats)
    if cycle_length < 1:
        raise ValueError(f"cycle_length must be >= 1, got {cycle_length}")
    return (config_index * repeats) % cycle_length


def rows_for(name: str, n: int, repeats: int, config_index: int) -> Schedule:
    """The rows configuration ``config_index`` runs, in repeat order: row ``(offset + r) mod L``."""
    rows = schedule_rows(name, n)
    start = row_offset(config_index, repeats, len(rows))
    return [list(rows[(start + r) % len(rows)]) for r in range(repeats)]


def position_counts(rows: Schedule) -> dict[tuple[int, int], int]:
    """How often each ``(item, position)`` occurs; pairs that never occur are absent."""
    return dict(Counter((item, pos) for row in rows for pos, item in enumerate(row)))


def carryover_counts(rows: Schedule) -> dict[tuple[int, int], int]:
    """How often each ``(predecessor, item)`` is adjacent within a row (rows do not chain)."""
    return dict(Counter((row[i - 1], row[i]) for row in rows for i in range(1, len(row))))


def balanced(rows: Schedule, n: int) -> bool:
    """Every item equally often in every position and every ordered distinct pair equally often
    adjacent. No rows is not balanced: there is nothing to claim balance for."""
    _check(n)
    if not rows:
        return False
    positions = position_counts(rows)
    pairs = carryover_counts(rows)
    return (
        set(positions) == {(item, pos) for item in range(n) for pos in range(n)}
        and len(set(positions.values())) == 1
        and set(pairs) == {(a, b) for a in range(n) for b in range(n) if a != b}
        and len(set(pairs.values())) <= 1  # n == 1 has no pairs at all
    )


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


def _check_repeats(repeats: int) -> None:
    if repeats < 1:
        raise ValueError(f"a sweep needs at least one repeat, got {repeats}")
