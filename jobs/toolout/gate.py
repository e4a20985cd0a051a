"""The economic gate's decisions and their regret (the N it assumed against the transcript's)."""

from __future__ import annotations

import polars as pl

from jobs.small_sample import small_cell_expr
from jobs.toolout.tables import by_unit


def gate_table(decisions: pl.DataFrame | pl.LazyFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """One row per (configuration, policy) the gate was asked in; `decisions` may be a lazy
    scan, read one unit at a time (tables.by_unit: the mode and median need a unit's all)."""
    keys = rows.lazy().select("row_id", "config_id", pl.col("arm").alias("policy"))

    def aggregate(unit: pl.LazyFrame) -> pl.LazyFrame:
        asked = unit.filter(pl.col("gate_reason").is_not_null()).join(keys, on="row_id")
        return (
            asked.group_by("config_id", "policy")
            .agg(
                pl.len().alias("asked"),
                pl.col("gate_approved").sum().alias("approved"),
                pl.col("gate_reason").mode().first().alias("usual_reason"),
                pl.col("gate_assumed_requests").first().alias("assumed_requests"),
                pl.col("later_requests").median().alias("median_later_requests"),
                pl.col("gate_would_flip").sum().alias("would_flip"),
                pl.col("gate_regret_usd").sum().alias("regret_usd"),
            )
            .with_columns(small_cell_expr("asked"))
        )

    return by_unit(decisions, rows, aggregate)
