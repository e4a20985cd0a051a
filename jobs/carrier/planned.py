"""Planned-repeat missingness bounds of the panel effect (needs plan.parquet).

Every planned block (config, execution group, repeat) in which both arms are planned counts.
An outcome is missing when its final attempt is invalid or it was never run. `lo` imputes a
missing b as 0 and a missing a as 1; `hi` imputes b as 1 and a as 0. Block effects are averaged
per configuration, then across configurations with equal weight, including configurations
without a complete pair (their blocks are all imputed).
"""

from __future__ import annotations

import polars as pl

from jobs.carrier.columns import BLOCK
from jobs.carrier.paired import Contrast
from jobs.stats import Interval


def planned_blocks(plan: pl.LazyFrame, contrast: Contrast) -> pl.LazyFrame:
    """Blocks in which both arms of the contrast are planned."""
    return (
        plan.filter(pl.col("arm").is_in([contrast.a, contrast.b]))
        .select(*BLOCK, "arm")
        .unique()
        .group_by(list(BLOCK))
        .agg(pl.col("arm").n_unique().alias("arms"))
        .filter(pl.col("arms") == 2)
        .select(*BLOCK)
    )


def bounds_by_config(plan: pl.LazyFrame, final: pl.LazyFrame, contrast: Contrast) -> pl.DataFrame:
    """Per configuration: planned blocks and the lo / hi mean effect."""

    def outcome(arm: str, name: str) -> pl.LazyFrame:
        return final.filter(pl.col("valid") & (pl.col("arm") == arm)).select(
            *BLOCK, pl.col("recall").alias(name)
        )

    blocks = planned_blocks(plan, contrast)
    on = list(BLOCK)
    return (
        blocks.join(outcome(contrast.a, "recall_a"), on=on, how="left")
        .join(outcome(contrast.b, "recall_b"), on=on, how="left")
        .with_columns(
            (pl.col("recall_b").fill_null(0.0) - pl.col("recall_a").fill_null(1.0)).alias("lo"),
            (pl.col("recall_b").fill_null(1.0) - pl.col("recall_a").fill_null(0.0)).alias("hi"),
        )
        .group_by("config_id")
        .agg(
            pl.len().cast(pl.Int64).alias("planned_blocks"),
            pl.col("lo").mean(),
            pl.col("hi").mean(),
        )
        .sort("config_id")
        .collect()
    )


def planned_bounds(
    plan: pl.LazyFrame | None, final: pl.LazyFrame, contrast: Contrast
) -> Interval | None:
    """[lo, hi] of the equal-configuration mean; None without a plan or planned blocks."""
    if plan is None:
        return None
    per_config = bounds_by_config(plan, final, contrast)
    if per_config.is_empty():
        return None
    lo = per_config.get_column("lo").mean()
    hi = per_config.get_column("hi").mean()
    if not isinstance(lo, float) or not isinstance(hi, float):
        return None
    return Interval(lo, hi)
