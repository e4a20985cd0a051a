"""Threshold tests per configuration: full (recall = 1) and half (recall >= 0.5).

Complete pairs are counted as both / only_a / only_b / neither; p_value is the exact
two-sided McNemar (binomial) test on the discordant pairs (1.0 when there are none).
"""

from __future__ import annotations

import polars as pl

from jobs import stats
from jobs.carrier.columns import FULL_RECALL, HALF_RECALL
from jobs.small_sample import MIN_SPREAD_N

THRESHOLDS = {"full": FULL_RECALL, "half": HALF_RECALL}

SCHEMA = pl.Schema(
    {
        "config_id": pl.String(),
        "threshold": pl.String(),
        "both": pl.Int64(),
        "only_a": pl.Int64(),
        "only_b": pl.Int64(),
        "neither": pl.Int64(),
        "p_value": pl.Float64(),
        "small_sample": pl.Boolean(),
    }
)


def threshold_table(pairs: pl.LazyFrame) -> pl.DataFrame:
    """`pairs` has config_id, recall_a, recall_b (one row per complete pair)."""
    counts = pl.concat(
        [
            pairs.with_columns(
                (pl.col("recall_a") >= cut).alias("hit_a"),
                (pl.col("recall_b") >= cut).alias("hit_b"),
            )
            .group_by("config_id")
            .agg(
                pl.lit(name).alias("threshold"),
                (pl.col("hit_a") & pl.col("hit_b")).sum().cast(pl.Int64).alias("both"),
                (pl.col("hit_a") & ~pl.col("hit_b")).sum().cast(pl.Int64).alias("only_a"),
                (~pl.col("hit_a") & pl.col("hit_b")).sum().cast(pl.Int64).alias("only_b"),
                (~pl.col("hit_a") & ~pl.col("hit_b")).sum().cast(pl.Int64).alias("neither"),
            )
            for name, cut in THRESHOLDS.items()
        ]
    ).collect()
    # One p-value per (config, threshold): a loop over configurations, not over rows.
    p_values = [
        stats.mcnemar_exact_p(only_a, only_b)
        for only_a, only_b in zip(
            counts.get_column("only_a").to_list(),
            counts.get_column("only_b").to_list(),
            strict=True,
        )
    ]
    return (
        counts.with_columns(
            pl.Series("p_value", p_values, dtype=pl.Float64),
            (pl.sum_horizontal("both", "only_a", "only_b", "neither") < MIN_SPREAD_N).alias(
                "small_sample"
            ),
        )
        .select(list(SCHEMA))
        .cast(SCHEMA)
        .sort("config_id", "threshold")
    )
