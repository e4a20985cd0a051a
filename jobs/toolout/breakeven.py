"""Break-even: how many later requests a rewrite needs before it pays, per provider x policy.

The seed's condition N > (R·max(0, W−C) + S) / (D·C), with S = 0 (no summariser): for each new
transformation the replay recorded, R is the request's tokens from the output on (the span the
rewrite invalidates) and D the tokens it removes per later request. N* is reported per
(configuration, policy) as the median over its new transformations, beside the median of the
later requests the transcripts actually had; the curve is N* = max(0, W−C)/C · R/D against
D/R for each configuration's rates (pipeline.toolout.economics.rates_for).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from jobs.small_sample import small_cell_expr
from jobs.toolout.tables import by_unit
from pipeline.toolout.cache_models import CacheModel
from pipeline.toolout.economics import rates_for


def rates(rows: pl.DataFrame, models: Mapping[str, CacheModel]) -> pl.DataFrame:
    """(config_id, W, C, premium ratio (W−C)/C) from each unit's cache model and model."""
    seen = rows.select("config_id", "cache_model", "model").unique().sort("config_id")
    records = []
    for config_id, cache_model, model in seen.iter_rows():
        write, read = rates_for(models[cache_model], model)
        ratio = max(0.0, write - read) / read if write is not None and read else None
        records.append({"config_id": config_id, "w": write, "c": read, "premium_ratio": ratio})
    schema = {"config_id": pl.String, "w": pl.Float64, "c": pl.Float64, "premium_ratio": pl.Float64}
    return pl.DataFrame(records, schema=schema)


def breakeven_table(
    decisions: pl.DataFrame | pl.LazyFrame, rows: pl.DataFrame, rates_: pl.DataFrame
) -> pl.DataFrame:
    """One row per (configuration, policy) with new transformations; `decisions` may be a
    lazy scan, read one unit at a time (tables.by_unit: the medians need a unit's all)."""
    keys = rows.lazy().select("row_id", "config_id", pl.col("arm").alias("policy"))

    def aggregate(unit: pl.LazyFrame) -> pl.LazyFrame:
        new = (
            unit.filter(pl.col("new") & (pl.col("shown_tokens") < pl.col("original_tokens")))
            .join(keys, on="row_id")
            .join(rates_.lazy(), on="config_id")
            .with_columns(
                (pl.col("original_tokens") - pl.col("shown_tokens")).alias("removed_tokens"),
            )
            .with_columns(
                (pl.col("removed_tokens") / pl.col("rewritten_tokens")).alias("d_over_r"),
                (
                    pl.col("premium_ratio") * pl.col("rewritten_tokens") / pl.col("removed_tokens")
                ).alias("n_star"),
            )
        )
        return (
            new.group_by("config_id", "policy")
            .agg(
                pl.len().alias("transformations"),
                pl.col("premium_ratio").first(),
                pl.col("d_over_r").median().alias("median_d_over_r"),
                pl.col("n_star").median().alias("median_n_star"),
                pl.col("later_requests").median().alias("median_later_requests"),
                (pl.col("later_requests") > pl.col("n_star")).mean().alias("share_repaid"),
            )
            .with_columns(small_cell_expr("transformations"))
        )

    return by_unit(decisions, rows, aggregate)
