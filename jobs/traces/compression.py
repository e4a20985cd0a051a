"""Part 2 per band: what each summariser arm kept and how much it shortened, per configuration.

One row per (config_id, arm, band), then one per (config_id, arm) with band `all`. Medians
skip nulls: `compression_chars` is null for an empty summary (counted in `empty_summaries`),
a retention is null for a trace without facts of that kind, a precision for a summary without
facts. `greedy_ok` counts rows whose sent body was greedy with thinking off (`greedy` and
`thinking_state == "off"`) among the rows a request was sent for (`greedy_checked`; the
extractive arm sends none, so both are 0 there); `repeat_identical` counts the repeated
summaries whose bytes matched among `repeat_checked`. Bands are ordered shortest first (by
their shortest trace), `all` last.
"""

from __future__ import annotations

import polars as pl

from jobs.small_sample import MIN_CELL_N
from pipeline.traces.compression.facts import KINDS

ALL_BANDS = "all"
KEYS = ("config_id", "arm", "band")


def band_ranks(compressions: pl.DataFrame) -> dict[str, int]:
    """Band -> rank, shortest band first (by its shortest trace); `all` last."""
    shortest = compressions.group_by("band").agg(pl.col("trace_chars").min()).sort("trace_chars")
    ranks = {str(band): rank for rank, band in enumerate(shortest["band"].to_list())}
    return {**ranks, ALL_BANDS: len(ranks)}


def _aggregates() -> list[pl.Expr]:
    greedy_ok = pl.col("greedy") & (pl.col("thinking_state") == "off")
    return [
        pl.len().cast(pl.Int64).alias("n"),
        pl.col("synthetic").sum().cast(pl.Int64).alias("synthetic"),
        pl.col("empty_summary").sum().cast(pl.Int64).alias("empty_summaries"),
        pl.col("trace_chars").median().alias("median_trace_chars"),
        pl.col("summary_chars").median().alias("median_summary_chars"),
        pl.col("compression_chars").median().alias("median_compression_chars"),
        pl.col("compression_tokens").median().alias("median_compression_tokens"),
        pl.col("retention").median().alias("median_retention"),
        *(pl.col(f"retention_{k}").median().alias(f"median_retention_{k}") for k in KINDS),
        pl.col("facts_total").sum().cast(pl.Int64).alias("facts"),
        pl.col("retained_total").sum().cast(pl.Int64).alias("retained"),
        pl.col("precision").median().alias("median_precision"),
        pl.col("invented").sum().cast(pl.Int64).alias("invented"),
        pl.col("greedy").is_not_null().sum().cast(pl.Int64).alias("greedy_checked"),
        greedy_ok.sum().cast(pl.Int64).alias("greedy_ok"),
        pl.col("repeat_identical").is_not_null().sum().cast(pl.Int64).alias("repeat_checked"),
        pl.col("repeat_identical").sum().cast(pl.Int64).alias("repeat_identical"),
    ]


def by_band(compressions: pl.DataFrame) -> pl.DataFrame:
    """The per-band and overall table of `compressions` (joined to config_id and arm)."""
    ranks = band_ranks(compressions)
    per_band = compressions.group_by(KEYS).agg(_aggregates())
    overall = (
        compressions.group_by("config_id", "arm")
        .agg(_aggregates())
        .with_columns(pl.lit(ALL_BANDS).alias("band"))
        .select(per_band.columns)
    )
    return (
        pl.concat([per_band, overall])
        .with_columns(
            pl.when(pl.col("greedy_checked") > 0)
            .then(pl.col("greedy_ok") / pl.col("greedy_checked"))
            .alias("greedy_ok_share"),
            (pl.col("n") < MIN_CELL_N).alias("small_sample"),
        )
        .sort(
            "config_id",
            "arm",
            pl.col("band").replace_strict(ranks, default=len(ranks), return_dtype=pl.Int64),
        )
    )


def _values(column: str) -> pl.Expr:
    """The distinct non-null values of `column`, sorted, as one `, `-joined string."""
    return pl.col(column).drop_nulls().unique().sort().cast(pl.String).str.join(", ").alias(column)


def decoding_table(compressions: pl.DataFrame) -> pl.DataFrame:
    """Per (config_id, arm): what the sent bodies said about decoding, and the repeat check.

    The sent_* columns list the distinct values sent (`""` when no request was sent: the
    extractive arm); `greedy_ok` / `greedy_checked` and `repeat_identical` / `repeat_checked`
    as in `by_band`.
    """
    greedy_ok = pl.col("greedy") & (pl.col("thinking_state") == "off")
    return (
        compressions.group_by("config_id", "arm")
        .agg(
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("greedy").is_not_null().sum().cast(pl.Int64).alias("greedy_checked"),
            greedy_ok.sum().cast(pl.Int64).alias("greedy_ok"),
            _values("sent_temperature"),
            _values("sent_top_p"),
            _values("sent_seed"),
            _values("sent_enable_thinking"),
            _values("thinking_state"),
            _values("decoding_problem"),
            _values("finish_reason"),
            _values("token_counter"),
            _values("token_null_reason"),
            pl.col("repeat_identical").is_not_null().sum().cast(pl.Int64).alias("repeat_checked"),
            pl.col("repeat_identical").sum().cast(pl.Int64).alias("repeat_identical"),
        )
        .sort("config_id", "arm")
    )
