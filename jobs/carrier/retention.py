"""Carrier retention per (config, arm): how many graded values the final carrier still held.

Why: recall mixes two losses (paper §4.10): values dropped during the folds, and values the
answer turn failed to read back. Retention isolates the first. On tiny models a code-written
ledger can hold values the model cannot answer from; this table shows that as measured.
Denominator: valid final rows whose every check records carrier presence.
"""

from __future__ import annotations

import polars as pl


def carrier_retention(with_checks: pl.DataFrame) -> pl.DataFrame:
    """config_id, arm, audited_rows, mean_retention (share of checks present), mean_recall."""
    audited = with_checks.filter(
        pl.col("checks").is_not_null()
        & (pl.col("checks") > 0)
        & (pl.col("presence_known") == pl.col("checks"))
    )
    return (
        audited.group_by("config_id", "arm")
        .agg(
            pl.len().cast(pl.Int64).alias("audited_rows"),
            (pl.col("present") / pl.col("checks")).mean().alias("mean_retention"),
            pl.col("recall").mean().alias("mean_recall"),
        )
        .sort("config_id", "arm")
    )
