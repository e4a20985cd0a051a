"""The run overview's "Facts most often lost": per arm, the fold indices where graded values
were first lost and the labels lost most often (issue 35 item 2).

Each unit's lineage is `pipeline.carrier.lineage`'s, as on its unit page. Bounded, because the
overview is drawn on every visit and a run may hold 10,000 units of 40 kB of carried text:
- units: the valid final attempts (the units every mean reads); past `MAX_UNITS`, the first
  `MAX_UNITS // arms` of each arm by row id, and the page says how many it read;
- columns: checks `row_id, label, kind, expected, outcome`; folds `row_id, fold_index, chunks,
  usable, carried_text` (chunks and usable for the planted-chunk rule), read `BLOCK` units at
  a time, so memory follows a block;
- the result is kept with the run's cached tables and dropped with them when the run changes.
A run whose folds hold no carried text (or no folds) says so in one line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipeline.study_pages.carrier_lineage import unit_lineage
from pipeline.view.runs import Run

MAX_UNITS = 1_000
BLOCK = 250
TOP = 5
CACHE_KEY = "__facts_lost__"
CHECKS = ("row_id", "label", "kind", "expected", "outcome")
FOLDS = ("row_id", "fold_index", "chunks", "usable", "carried_text")


@dataclass(frozen=True)
class ArmLost:
    """One arm's row of the table."""

    arm: str
    units: int  # units read
    values: int  # graded values traced
    lost: int  # values first lost at some fold
    by_fold: dict[int, int]  # fold index -> values first lost there
    never_carried: int  # never held, planted chunk unknown: lost at no known fold
    top: list[tuple[str, str, int]]  # (label, kind, times lost), most often first


@dataclass(frozen=True)
class FactsLost:
    arms: list[ArmLost]
    folds: list[int]  # every fold index some arm lost a value at, in order
    read: int
    valid: int
    capped: bool
    per_arm: int  # the most units read of one arm when capped
    chunks_known: bool
    note: str | None  # one line instead of the table (no folds, no carried text)


def _per_arm(valid: pl.DataFrame) -> int:
    return max(1, MAX_UNITS // max(1, valid["arm"].n_unique()))


def _units(run: Run) -> tuple[pl.DataFrame, int]:
    """The (arm, row_id) to read, and how many valid final units there are."""
    valid = run.final.filter(pl.col("valid").fill_null(False)).select("arm", "row_id")
    valid = valid.sort("arm", "row_id")
    if valid.height <= MAX_UNITS:
        return valid, valid.height
    return valid.group_by("arm", maintain_order=True).head(_per_arm(valid)), valid.height


def _block(run: Run, table: str, columns: Sequence[str], row_ids: list[str]) -> pl.DataFrame:
    scan = run.scan(table).select(columns).filter(pl.col("row_id").is_in(row_ids))
    return scan.collect()


def _count(run: Run, chosen: pl.DataFrame, fixture: Any) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per arm: units, values traced and folds with carried text; and every lost value as
    (arm, fold_index, label, kind), fold_index null for one never carried at no known fold."""
    arm_of = dict(zip(chosen["row_id"].to_list(), chosen["arm"].to_list(), strict=True))
    units: Counter[str] = Counter(arm_of.values())
    values: Counter[str] = Counter()
    texts: Counter[str] = Counter()
    lost: list[tuple[str, int | None, str, str]] = []
    row_ids = list(arm_of)
    for start in range(0, len(row_ids), BLOCK):
        block = row_ids[start : start + BLOCK]
        checks = _block(run, "checks", CHECKS, block).partition_by("row_id", as_dict=True)
        folds = _block(run, "folds", FOLDS, block).partition_by("row_id", as_dict=True)
        for (row_id,), frame in folds.items():
            texts[arm_of[str(row_id)]] += int(frame["carried_text"].is_not_null().sum())
        for (row_id,), unit_checks in checks.items():
            arm = arm_of[str(row_id)]
            unit_folds = folds.get((row_id,))
            fold_rows = [] if unit_folds is None else unit_folds.to_dicts()
            for line in unit_lineage(unit_checks.to_dicts(), fold_rows, fixture):
                values[arm] += 1
                if line.first_lost is not None or line.never_carried:
                    lost.append((arm, line.first_lost, line.label, line.kind))
    per_arm = pl.DataFrame(
        {
            "arm": sorted(units),
            "units": [units[a] for a in sorted(units)],
            "values": [values[a] for a in sorted(units)],
            "folds_with_text": [texts[a] for a in sorted(units)],
        },
        schema={
            "arm": pl.String,
            "units": pl.Int64,
            "values": pl.Int64,
            "folds_with_text": pl.Int64,
        },
    )
    events = pl.DataFrame(
        lost,
        schema={"arm": pl.String, "fold_index": pl.Int64, "label": pl.String, "kind": pl.String},
        orient="row",
    )
    return per_arm, events


def _arm(row: dict[str, Any], events: pl.DataFrame) -> ArmLost:
    mine = events.filter(pl.col("arm") == row["arm"])
    at_fold = mine.filter(pl.col("fold_index").is_not_null()).group_by("fold_index").len()
    top = mine.group_by("label", "kind").len().sort(["len", "label"], descending=[True, False])
    return ArmLost(
        arm=row["arm"],
        units=row["units"],
        values=row["values"],
        lost=int(mine["fold_index"].is_not_null().sum()),
        by_fold=dict(sorted(zip(at_fold["fold_index"], at_fold["len"], strict=True))),
        never_carried=int(mine["fold_index"].is_null().sum()),
        top=[(r["label"], r["kind"], r["len"]) for r in top.head(TOP).to_dicts()],
    )


def _counted(run: Run) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`_count` of the chosen units, kept with the run's cached tables (module doc)."""
    if CACHE_KEY not in run._frames:
        chosen, _valid = _units(run)
        fixture, _refused = run.json_input("fixture.json")
        run._frames[CACHE_KEY + "arms"], run._frames[CACHE_KEY] = _count(run, chosen, fixture)
    return run._frames[CACHE_KEY + "arms"], run._frames[CACHE_KEY]


def facts_most_often_lost(run: Run) -> FactsLost:
    """The table's content (module doc)."""
    fixture, _refused = run.json_input("fixture.json")
    known = bool(fixture and fixture.get("planted"))
    if "folds" not in run.layout.tables or "checks" not in run.layout.tables:
        note = "This run has no folds or checks table: no fact lineage to count."
        return FactsLost([], [], 0, 0, capped=False, per_arm=0, chunks_known=known, note=note)
    chosen, valid = _units(run)
    arm_counts, events = _counted(run)
    if not arm_counts["folds_with_text"].sum():
        note = (
            "No fact lineage: the valid units' folds hold no carried text (no folds, or a run "
            "from before the folds table kept it)."
        )
        return FactsLost([], [], 0, valid, capped=False, per_arm=0, chunks_known=known, note=note)
    arms = [_arm(row, events) for row in arm_counts.to_dicts()]
    folds = sorted({index for arm in arms for index in arm.by_fold})
    capped = chosen.height < valid
    most = _per_arm(chosen) if capped else 0
    return FactsLost(arms, folds, chosen.height, valid, capped, most, known, None)
