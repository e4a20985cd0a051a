"""Cache behaviour per (configuration, policy): hit share, a cause for every missed token, and
how often the policy transformed anew against reused its compacted bytes."""

from __future__ import annotations

import polars as pl

from jobs.toolout.tables import by_unit
from pipeline.toolout.records import CAUSES


def _keyed(frame: pl.DataFrame | pl.LazyFrame, rows: pl.DataFrame) -> pl.LazyFrame:
    return frame.lazy().join(
        rows.lazy().select("row_id", "config_id", pl.col("arm").alias("policy")), on="row_id"
    )


def _per_turn(keyed: pl.LazyFrame) -> pl.LazyFrame:
    return (
        keyed.group_by("config_id", "policy")
        .agg(
            pl.len().alias("requests"),
            pl.col("input_tokens").sum(),
            pl.col("cached_tokens").sum(),
            pl.col("written_tokens").sum(),
            pl.col("cost_usd").sum(),
            *(pl.col(f"miss_{c}_tokens").sum() for c in CAUSES),
            *(pl.col(f"miss_{c}_usd").sum() for c in CAUSES),
        )
        .with_columns((pl.col("cached_tokens") / pl.col("input_tokens")).alias("cache_hit_share"))
    )


def cache_table(
    turns: pl.DataFrame | pl.LazyFrame, sessions: pl.DataFrame, rows: pl.DataFrame
) -> pl.DataFrame:
    """Hit share, miss causes (tokens and USD) and applications, one row per unit; `turns`
    may be a lazy scan, read one unit at a time (tables.by_unit)."""
    per_turn = by_unit(turns, rows, lambda unit: _per_turn(_keyed(unit, rows)))
    per_session = (
        _keyed(sessions, rows)
        .group_by("config_id", "policy")
        .agg(
            pl.col("bytes_removed").sum(),
            pl.col("applications_new").sum(),
            pl.col("applications_reused").sum(),
            (pl.col("outputs_compacted") > 0).sum().alias("sessions_transformed"),
            pl.len().alias("sessions"),
        )
        .collect()
    )
    return per_turn.join(per_session, on=["config_id", "policy"]).sort("config_id", "policy")
