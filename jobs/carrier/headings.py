"""Exploratory: rendered headings against recall, within (config, arm, execution group) cells.

Both variables are centred on their cell means; the slope is Σx̃ỹ / Σx̃² and the residual r is
Σx̃ỹ / √(Σx̃² Σỹ²). Only informative cells enter: at least two valid final rows with a recorded
heading count that is not constant within the cell (a cell without heading variation carries
no information about the association). `pooled_r` is the raw correlation over all such rows
of the run, for contrast with the within-cell figure. Headings are post-treatment: this is an
association, not a mediation estimate.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import polars as pl

from jobs.small_sample import small_spread

CELL = ("config_id", "arm", "execution_group")


@dataclass(frozen=True)
class HeadingsAssociation:
    cells: int
    rows: int
    slope: float | None
    residual_r: float | None

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "small_sample": small_spread(self.rows)}


def _recorded(final: pl.LazyFrame) -> pl.LazyFrame:
    return final.filter(
        pl.col("valid") & pl.col("headings_carried").is_not_null() & pl.col("recall").is_not_null()
    ).select(
        *CELL, pl.col("headings_carried").cast(pl.Float64).alias("x"), pl.col("recall").alias("y")
    )


def centred_informative(final: pl.LazyFrame) -> pl.DataFrame:
    """Rows of informative cells with x̃ and ỹ (cell-mean-removed headings and recall)."""
    return (
        _recorded(final)
        .with_columns(
            (pl.col("x") - pl.col("x").mean().over(CELL)).alias("xc"),
            (pl.col("y") - pl.col("y").mean().over(CELL)).alias("yc"),
            pl.col("x").n_unique().over(CELL).alias("distinct_x"),
        )
        .filter(pl.col("distinct_x") >= 2)
        .collect()
    )


def association(centred: pl.DataFrame) -> HeadingsAssociation:
    if centred.is_empty():
        return HeadingsAssociation(0, 0, None, None)
    sums = centred.select(
        (pl.col("xc") * pl.col("yc")).sum().alias("sxy"),
        (pl.col("xc") ** 2).sum().alias("sxx"),
        (pl.col("yc") ** 2).sum().alias("syy"),
    ).row(0, named=True)
    cells = centred.select(pl.struct(list(CELL)).n_unique()).item()
    sxy, sxx, syy = float(sums["sxy"]), float(sums["sxx"]), float(sums["syy"])
    slope = sxy / sxx if sxx > 0 else None
    r = sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None
    return HeadingsAssociation(int(cells), centred.height, slope, r)


def headings_summary(final: pl.LazyFrame) -> dict[str, object]:
    """headings.json: the all-arm association, the pooled raw r, and one entry per arm."""
    centred = centred_informative(final)
    recorded = (
        _recorded(final).select(pl.len().alias("rows"), pl.corr("x", "y").alias("r")).collect()
    )
    pooled_r = recorded.item(0, "r")
    overall = association(centred)
    by_arm = {
        str(arm): association(centred.filter(pl.col("arm") == arm)).to_json()
        for arm in sorted(centred.get_column("arm").unique().to_list())
    }
    return {
        **overall.to_json(),
        "pooled_rows": int(recorded.item(0, "rows")),
        "pooled_r": None if pooled_r is None or math.isnan(pooled_r) else float(pooled_r),
        "by_arm": by_arm,
    }
