"""Two or more runs side by side, on the (configuration, arm) cells they share.

A cell is compared on its valid final units: their count and the mean of one metric, a
numeric column every run has (`?metric=`; default the first of PREFERRED present, else the
first shared numeric column). Cells only some runs have are counted, not dropped silently.
An arm's tooltip is its description from the first run whose study describes it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from pipeline.view.runs import Run

PREFERRED = ("recall", "replay_cost_usd", "recited", "items", "cost_usd")
CELL = ("config_id", "arm")


@dataclass(frozen=True)
class Comparison:
    metric: str | None
    metrics: list[str]
    cells: list[dict[str, object]]  # config_id, arm, then n_<i> and mean_<i> per run
    only_some: int


def compare(runs: Sequence[Run], units: Sequence[pl.DataFrame], metric: str | None) -> Comparison:
    numeric = [
        {
            n
            for n, t in frame.schema.items()
            if t.is_numeric()
            and n not in ("execution_group", "repeat", "attempt", "schedule_position", "seed")
        }
        for frame in units
    ]
    shared = sorted(set.intersection(*numeric)) if numeric else []
    chosen = (
        metric
        if metric in shared
        else next((m for m in PREFERRED if m in shared), shared[0] if shared else None)
    )
    per_run = []
    for index, frame in enumerate(units):
        valid = frame.filter(pl.col("verdict") == "valid")
        aggs = [pl.len().alias(f"n_{index}")]
        if chosen:
            aggs.append(pl.col(chosen).cast(pl.Float64).mean().alias(f"mean_{index}"))
        per_run.append(
            frame.select(CELL)
            .unique()
            .join(valid.group_by(CELL).agg(aggs), on=list(CELL), how="left")
        )
    keys = [set(map(tuple, f.select(CELL).rows())) for f in per_run]
    common = set.intersection(*keys) if keys else set()
    joined = per_run[0]
    for other in per_run[1:]:
        joined = joined.join(other, on=list(CELL), how="inner")
    joined = joined.sort(CELL)
    only_some = len(set.union(*keys) - common) if keys else 0
    return Comparison(chosen, shared, joined.to_dicts(), only_some)


def arm_title(runs: Sequence[Run], arm: object) -> str:
    """The arm's description from the first run that has one ('' when none does)."""
    return next((title for run in runs if (title := run.arm_title(arm))), "")
