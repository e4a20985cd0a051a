"""Failing answers (valid final rows with recall < 0.5) classified per arm.

Decisions (the paper's §4.11 table, made exact):
- abstaining: the row abstains anywhere (`rows.abstains`, or any check outcome `abstention`);
- fabricating: not abstaining, and at least one check outcome is `fabrication`;
- missing: neither (the answer leaves the labels out);
- unclassified: no check-level outcomes and no abstention flag (checks/ absent for the row).
- stock_signature_rows: failing rows with at least one check flagged `stock_signature`
  (a stock / placeholder value, e.g. port 8443 or an example.com origin).
"""

from __future__ import annotations

import polars as pl

from jobs.carrier.columns import HALF_RECALL

SCHEMA = pl.Schema(
    {
        "arm": pl.String(),
        "valid_rows": pl.Int64(),
        "failing_rows": pl.Int64(),
        "fabricating": pl.Int64(),
        "abstaining": pl.Int64(),
        "missing": pl.Int64(),
        "unclassified": pl.Int64(),
        "stock_signature_rows": pl.Int64(),
    }
)


def classify_failing(valid_with_checks: pl.DataFrame) -> pl.DataFrame:
    """One row per failing row: row_id, config_id, arm, recall, answer_class, stock_signature."""
    has_checks = pl.col("checks").is_not_null() & (pl.col("checks") > 0)
    abstaining = pl.col("abstains").fill_null(value=False) | (
        pl.col("abstentions").fill_null(0) > 0
    )
    answer_class = (
        pl.when(abstaining)
        .then(pl.lit("abstaining"))
        .when(~has_checks.fill_null(value=False))
        .then(pl.lit("unclassified"))
        .when(pl.col("fabrications") > 0)
        .then(pl.lit("fabricating"))
        .otherwise(pl.lit("missing"))
    )
    return valid_with_checks.filter(pl.col("recall") < HALF_RECALL).select(
        "row_id",
        "config_id",
        "arm",
        "recall",
        answer_class.alias("answer_class"),
        (pl.col("stock_signatures").fill_null(0) > 0).alias("stock_signature"),
    )


def answers_by_arm(valid_with_checks: pl.DataFrame) -> pl.DataFrame:
    failing = classify_failing(valid_with_checks)
    counts = failing.group_by("arm").agg(
        pl.len().alias("failing_rows"),
        *(
            (pl.col("answer_class") == name).sum().alias(name)
            for name in ("fabricating", "abstaining", "missing", "unclassified")
        ),
        pl.col("stock_signature").sum().alias("stock_signature_rows"),
    )
    valid = valid_with_checks.group_by("arm").agg(pl.len().alias("valid_rows"))
    return (
        valid.join(counts, on="arm", how="left")
        .with_columns(pl.exclude("arm", "valid_rows").fill_null(0))
        .cast(SCHEMA)
        .select(list(SCHEMA))
        .sort("arm")
    )
