"""Live replay: the cache model's predicted hits beside the hits the endpoint reported.

Only requests actually sent (`turns.live_sent`) count, so both sides describe the same
requests. Shares are per side's own prompt count: predicted hits over the estimated input
tokens, reported hits over the reported prompt tokens (the real tokenizer, chat template
included), so a tokenizer difference does not read as a cache difference. The estimator's
error is estimated input tokens over reported prompt tokens, minus one (negative: the byte
estimator undercounts). `mean_share_gap` is the mean over requests of |predicted share −
reported share|: 0 when the model predicts every request's hits.
"""

from __future__ import annotations

import polars as pl

from jobs.small_sample import MIN_CELL_N

COLUMNS = {
    "config_id": pl.String,
    "policy": pl.String,
    "requests": pl.Int64,
    "input_tokens": pl.Int64,
    "predicted_cached_tokens": pl.Int64,
    "reported_prompt_tokens": pl.Int64,
    "reported_cached_tokens": pl.Int64,
    "predicted_hit_share": pl.Float64,
    "reported_hit_share": pl.Float64,
    "mean_share_gap": pl.Float64,
    "median_estimator_error": pl.Float64,
    "small_sample": pl.Boolean,
}


def sent_turns(turns: pl.DataFrame | pl.LazyFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """Every sent request with its configuration and policy (few: the live budget's).

    `turns` may be a lazy scan: it is filtered before anything is collected."""
    sent = turns.lazy().filter(pl.col("live_sent") & pl.col("reported_prompt_tokens").is_not_null())
    keys = rows.lazy().select("row_id", "config_id", pl.col("arm").alias("policy"))
    return sent.join(keys, on="row_id").collect()


def live_table(turns: pl.DataFrame | pl.LazyFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """One row per (configuration, policy) with sent requests; empty for an offline run."""
    sent = sent_turns(turns, rows)
    if sent.height == 0:
        return pl.DataFrame(schema=COLUMNS)
    return (
        sent.group_by("config_id", "policy")
        .agg(
            pl.len().cast(pl.Int64).alias("requests"),
            pl.col("input_tokens").sum(),
            pl.col("cached_tokens").sum().alias("predicted_cached_tokens"),
            pl.col("reported_prompt_tokens").sum(),
            pl.col("reported_cached_tokens").sum(),
            (
                pl.col("cached_tokens") / pl.col("input_tokens")
                - pl.col("reported_cached_tokens") / pl.col("reported_prompt_tokens")
            )
            .abs()
            .mean()
            .alias("mean_share_gap"),
            (pl.col("input_tokens") / pl.col("reported_prompt_tokens") - 1)
            .median()
            .alias("median_estimator_error"),
        )
        .with_columns(
            (pl.col("predicted_cached_tokens") / pl.col("input_tokens")).alias(
                "predicted_hit_share"
            ),
            (pl.col("reported_cached_tokens") / pl.col("reported_prompt_tokens")).alias(
                "reported_hit_share"
            ),
            (pl.col("requests") < MIN_CELL_N).alias("small_sample"),
        )
        .select(list(COLUMNS))
        .cast(COLUMNS)  # type: ignore[arg-type]
        .sort("config_id", "policy")
    )
