"""A carrier unit's fact lineage, from the rows its page already read (issue 35 item 2).

The unit's `checks` give the graded values and the answer's outcome, its `folds` the carried
text of every fold, the run's `fixture.json` the chunk that plants each value; the rules of
present, lost and absent are `pipeline.carrier.lineage`'s. A fixture that is missing or refused
leaves the planted chunks unknown: a value is then lost only after a fold held it, and the page
says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.carrier.lineage import (
    FoldText,
    GradedValue,
    Lineage,
    State,
    chunk_indices,
    lineage,
)

# a text marker beside each colour, so a state never rests on colour alone
MARKERS: Mapping[State, str] = {"present": "✓", "lost": "✗", "absent": "·"}


def planted_chunks(fixture: Mapping[str, Any] | None) -> dict[str, int]:
    """The chunk that plants each value of the fixture (empty without one)."""
    found: dict[str, int] = {}
    for fact in (fixture or {}).get("planted") or []:
        value, chunk = fact.get("value"), fact.get("chunk")
        if value and isinstance(chunk, int):
            found[str(value)] = chunk
    return found


def graded_values(checks: Sequence[Mapping[str, Any]]) -> list[GradedValue]:
    return [
        GradedValue(str(c["label"]), str(c.get("kind") or ""), str(c["expected"]), c.get("outcome"))
        for c in checks
        if c.get("expected")
    ]


def fold_texts(folds: Sequence[Mapping[str, Any]]) -> list[FoldText]:
    return [
        FoldText(
            int(f["fold_index"]),
            f.get("carried_text"),
            chunk_indices(f.get("chunks")),
            f.get("usable"),
        )
        for f in folds
    ]


def unit_lineage(
    checks: Sequence[Mapping[str, Any]],
    folds: Sequence[Mapping[str, Any]],
    fixture: Mapping[str, Any] | None,
) -> tuple[Lineage, ...]:
    """One lineage per graded check of the unit, in the checks' order."""
    return lineage(graded_values(checks), fold_texts(folds), planted_chunks(fixture))


def first_lost_text(line: Lineage) -> str:
    """What the table's "first lost" cell says."""
    if line.first_lost is not None:
        said = f"fold {line.first_lost}"
        if line.never_carried:
            said += ", never carried"  # the fold that folded its chunk dropped it
        elif line.regained:
            said += " (held again later)"
        return said
    return "never carried" if line.never_carried else "kept"


def lost_title(lost: Sequence[Lineage]) -> str:
    """The tooltip of a fold that first lost values: each one's label and value."""
    return "first lost here: " + "; ".join(f"{line.label} ({line.value})" for line in lost)
