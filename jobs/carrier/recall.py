"""The recall table per (config, arm), over the final attempts.

Decisions:
- A trajectory's outcome is its final attempt, by the store's one rule
  (`pipeline.store.final_rows`: the highest `attempt`; a duplicated attempt or a row without
  a validity verdict is a RunDirError, never a tie to break). Earlier attempts are neither
  outcomes nor missing.
- A null `invalid_reason` on an invalid row is reported as `unspecified`.
- Every recall-table statistic except the final/invalid counts is over valid final rows.
"""

from __future__ import annotations

import polars as pl

from jobs.carrier.columns import FULL_RECALL, HALF_RECALL
from jobs.small_sample import small_cell_expr

UNSPECIFIED_REASON = "unspecified"


def config_labels(final: pl.LazyFrame) -> pl.LazyFrame:
    """config_id → model and family (first non-null; the config_id itself when none)."""
    return final.group_by("config_id").agg(
        pl.col("model").drop_nulls().first().fill_null(pl.col("config_id").first()),
        pl.col("family").drop_nulls().first().fill_null(pl.col("config_id").first()),
    )


def _valid(column: str) -> pl.Expr:
    return pl.col(column).filter(pl.col("valid"))


def recall_by_config_arm(final: pl.LazyFrame) -> pl.DataFrame:
    """Per (config_id, arm): denominators, recall summaries and invalid counts by reason."""
    summary = final.group_by("config_id", "arm").agg(
        pl.len().cast(pl.Int64).alias("final_rows"),
        pl.col("valid").sum().cast(pl.Int64).alias("valid_rows"),
        (~pl.col("valid")).sum().cast(pl.Int64).alias("invalid_rows"),
        _valid("recall").mean().alias("mean_recall"),
        (pl.col("valid") & (pl.col("recall") >= HALF_RECALL))
        .sum()
        .cast(pl.Int64)
        .alias("rows_half"),
        (pl.col("valid") & (pl.col("recall") >= FULL_RECALL))
        .sum()
        .cast(pl.Int64)
        .alias("rows_full"),
        (pl.col("valid") & (pl.col("parse_failures") > 0))
        .sum()
        .cast(pl.Int64)
        .alias("parse_failure_rows"),
        _valid("parse_failures").sum().cast(pl.Int64).alias("parse_failures"),
        _valid("fill").mean().alias("mean_fill"),
        _valid("headings_carried").cast(pl.Float64).mean().alias("mean_headings"),
    )
    labelled = (
        summary.join(config_labels(final), on="config_id", how="left")
        .select("config_id", "model", "family", pl.all().exclude("config_id", "model", "family"))
        .sort("config_id", "arm")
        .with_columns(small_cell_expr("valid_rows"))
        .collect()
    )
    return _with_invalid_reasons(labelled, final)


def _with_invalid_reasons(table: pl.DataFrame, final: pl.LazyFrame) -> pl.DataFrame:
    """Adds one `invalid_<reason>` count column per reason seen among invalid final rows."""
    reasons = (
        final.filter(~pl.col("valid"))
        .with_columns(pl.col("invalid_reason").fill_null(UNSPECIFIED_REASON))
        .group_by("config_id", "arm", "invalid_reason")
        .agg(pl.len().cast(pl.Int64).alias("count"))
        .collect()
    )
    if reasons.is_empty():
        return table
    wide = reasons.with_columns(("invalid_" + pl.col("invalid_reason")).alias("reason")).pivot(
        on="reason", index=["config_id", "arm"], values="count", sort_columns=True
    )
    reason_columns = [c for c in wide.columns if c not in ("config_id", "arm")]
    return table.join(wide, on=["config_id", "arm"], how="left").with_columns(
        pl.col(reason_columns).fill_null(0)
    )


def simulated_any(rows: pl.LazyFrame) -> bool:
    """True when any row (any attempt) is marked simulated."""
    value = rows.select(pl.col("simulated").fill_null(value=False).any()).collect().item()
    return bool(value)


def arms_present(final: pl.LazyFrame) -> frozenset[str]:
    arms = final.select(pl.col("arm").drop_nulls().unique()).collect().to_series()
    return frozenset(str(arm) for arm in arms.to_list())
