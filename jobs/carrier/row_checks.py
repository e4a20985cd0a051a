"""Check-level facts folded to one row per graded row (shared by dependence, audit, answers).

Checks join rows on `row_id` alone (row ids are unique within a run directory). The
aggregation runs once per analysis, so the ten-million-row checks table is scanned once.
"""

from __future__ import annotations

import polars as pl

CHECK_SUMMARY_COLUMNS = (
    "checks",
    "checks_passed_n",
    "presence_known",
    "present",
    "carrier_held_answer_missed",
    "answered_absent_from_carrier",
    "abstentions",
    "fabrications",
    "stock_signatures",
)


def checks_by_row(checks: pl.LazyFrame) -> pl.LazyFrame:
    """Per row_id: counts of checks, passes, carrier presence and answer outcomes."""
    passed = pl.col("passed").fill_null(value=False)
    present = pl.col("present_in_carrier")
    return checks.group_by("row_id").agg(
        pl.len().cast(pl.Int64).alias("checks"),
        passed.sum().cast(pl.Int64).alias("checks_passed_n"),
        present.is_not_null().sum().cast(pl.Int64).alias("presence_known"),
        present.fill_null(value=False).sum().cast(pl.Int64).alias("present"),
        (present.fill_null(value=False) & ~passed)
        .sum()
        .cast(pl.Int64)
        .alias("carrier_held_answer_missed"),
        # A null presence stays unknown: null & x is null, and sum() skips it.
        (passed & ~present).sum().cast(pl.Int64).alias("answered_absent_from_carrier"),
        (pl.col("outcome") == "abstention").sum().cast(pl.Int64).alias("abstentions"),
        (pl.col("outcome") == "fabrication").sum().cast(pl.Int64).alias("fabrications"),
        pl.col("stock_signature")
        .fill_null(value=False)
        .sum()
        .cast(pl.Int64)
        .alias("stock_signatures"),
    )


def valid_rows_with_checks(final: pl.LazyFrame, checks: pl.LazyFrame | None) -> pl.DataFrame:
    """Valid final rows with their check summary (summary columns null when checks are absent)."""
    valid = final.filter(pl.col("valid")).select(
        "row_id",
        "config_id",
        "arm",
        "recall",
        "abstains",
        "checks_passed",
        "checks_total",
    )
    if checks is None:
        return valid.with_columns(
            pl.lit(None, dtype=pl.Int64).alias(name) for name in CHECK_SUMMARY_COLUMNS
        ).collect()
    return valid.join(checks_by_row(checks), on="row_id", how="left").collect()
