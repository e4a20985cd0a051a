"""Fact lineage: for each graded value, the folds whose carrier held it and the fold that lost it.

The carrier study's core question (issue 35) is where a fact disappears. The grader audits only
the final carrier (`checks.present_in_carrier`); this follows each graded value through every
fold's carried text, with the grader's own whole-token rule (`grade.contains_token`), so a
value the lineage calls present is one the audit would count.

Decisions (docs/carrier.md, "Fact lineage"):
- A fold's state for a value is `present` (a whole token of that fold's carried text),
  `lost` (absent from a fold at which the value was due) or `absent` (absent, not yet due).
- A value is due from the first usable fold that folded its planted chunk (the fixture's
  `chunk`): before that it cannot have been carried, so it cannot be lost. An unusable fold
  (catch-up) keeps the previous carrier and its chunks stay pending, so it does not make the
  value due. Without the planted chunk (a fixture missing or refused, or a value not in it),
  a value is due from the first fold that held it.
- A value is also due from any fold that held it, whichever chunk planted it.
- `first_lost` is the first fold whose state is `lost`. A value due but never held is
  `never_carried` and, when its chunk is known, first lost at the fold that folded its chunk;
  without the chunk it has no first lost fold.
- A value held again after it was lost stays first lost where it was (`regained` says so).
- `in_final` is the last fold's state (`present`), None for a unit without folds; it matches
  the audit's `present_in_carrier`, which reads the same text.

Pure: values in, values out; no table, no file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from pipeline.carrier.grade import contains_token

__all__ = [
    "FoldState",
    "FoldText",
    "GradedValue",
    "Lineage",
    "State",
    "lineage",
    "lost_at",
]

State = Literal["present", "lost", "absent"]


@dataclass(frozen=True)
class GradedValue:
    """One graded check of the unit: its label, kind, expected value and the answer's outcome."""

    label: str
    kind: str
    value: str
    outcome: str | None = None


@dataclass(frozen=True)
class FoldText:
    """One fold of the unit, as the folds table holds it."""

    index: int
    carried_text: str | None
    chunks: tuple[int, ...] = ()
    usable: bool | None = True  # None (unknown): taken as usable


@dataclass(frozen=True)
class FoldState:
    index: int
    state: State


@dataclass(frozen=True)
class Lineage:
    """One graded value through the unit's folds (rules in the module docstring)."""

    label: str
    kind: str
    value: str
    outcome: str | None
    planted_chunk: int | None
    states: tuple[FoldState, ...]
    first_lost: int | None
    never_carried: bool
    regained: bool

    @property
    def present_at(self) -> tuple[int, ...]:
        return tuple(s.index for s in self.states if s.state == "present")

    @property
    def in_final(self) -> bool | None:
        return self.states[-1].state == "present" if self.states else None


def chunk_indices(text: str | None) -> tuple[int, ...]:
    """The folds table's `chunks` ("1,2") as indices; anything else in it is ignored."""
    return tuple(int(part) for part in str(text or "").split(",") if part.strip().isdigit())


def _due_from(folds: Sequence[FoldText], chunk: int | None) -> int | None:
    """The index of the first usable fold that folded `chunk` (None: none did, or unknown)."""
    if chunk is None:
        return None
    for fold in folds:
        if chunk in fold.chunks and fold.usable is not False:
            return fold.index
    return None


def _one(value: GradedValue, folds: Sequence[FoldText], chunk: int | None) -> Lineage:
    due_at = _due_from(folds, chunk)
    held = [contains_token(fold.carried_text or "", value.value) for fold in folds]
    states: list[FoldState] = []
    due = False
    first_lost: int | None = None
    regained = False
    for fold, present in zip(folds, held, strict=True):
        due = due or present or (due_at is not None and fold.index >= due_at)
        if present:
            state: State = "present"
            regained = regained or first_lost is not None
        elif due:
            state = "lost"
            first_lost = fold.index if first_lost is None else first_lost
        else:
            state = "absent"
        states.append(FoldState(fold.index, state))
    return Lineage(
        label=value.label,
        kind=value.kind,
        value=value.value,
        outcome=value.outcome,
        planted_chunk=chunk,
        states=tuple(states),
        first_lost=first_lost,
        never_carried=not any(held),
        regained=regained,
    )


def lineage(
    values: Iterable[GradedValue],
    folds: Sequence[FoldText],
    planted_chunks: Mapping[str, int] | None = None,
) -> tuple[Lineage, ...]:
    """One `Lineage` per graded value, in the order given. `folds` are the unit's folds in
    fold order; `planted_chunks` maps a value to the chunk that plants it (the fixture's)."""
    ordered = sorted(folds, key=lambda fold: fold.index)
    chunks = planted_chunks or {}
    return tuple(_one(value, ordered, chunks.get(value.value)) for value in values)


def lost_at(lineages: Iterable[Lineage]) -> dict[int, list[Lineage]]:
    """The values first lost at each fold index (folds that lost none are left out)."""
    found: dict[int, list[Lineage]] = {}
    for line in lineages:
        if line.first_lost is not None:
            found.setdefault(line.first_lost, []).append(line)
    return found
