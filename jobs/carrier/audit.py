"""Carrier audit per arm: did the answer miss values the carrier held, or the converse?

Decisions:
- Audited rows: valid final rows whose every check records `present_in_carrier` (the carrier
  was inspected); every count in the table is over audited rows of that arm.
- A row "carrier held, answer missed" has at least one check present in the carrier and not
  passed; a row "answered, absent from carrier" has at least one check passed while absent.
"""

from __future__ import annotations

import polars as pl

SCHEMA = pl.Schema(
    {
        "arm": pl.String(),
        "valid_rows": pl.Int64(),
        "audited_rows": pl.Int64(),
        "rows_counts_agree": pl.Int64(),
        "rows_carrier_held_answer_missed": pl.Int64(),
        "rows_answered_absent_from_carrier": pl.Int64(),
        "checks_carrier_held_answer_missed": pl.Int64(),
        "checks_answered_absent_from_carrier": pl.Int64(),
    }
)


def carrier_audit(valid_with_checks: pl.DataFrame) -> pl.DataFrame:
    """`valid_with_checks` from jobs.carrier.row_checks.valid_rows_with_checks."""
    audited = (
        pl.col("checks").is_not_null()
        & (pl.col("checks") > 0)
        & (pl.col("presence_known") == pl.col("checks"))
    ).fill_null(value=False)

    def over_audited(expr: pl.Expr) -> pl.Expr:
        return expr.filter(audited)

    return (
        valid_with_checks.group_by("arm")
        .agg(
            pl.len().alias("valid_rows"),
            audited.sum().alias("audited_rows"),
            over_audited(pl.col("present") == pl.col("checks_passed_n"))
            .sum()
            .alias("rows_counts_agree"),
            over_audited(pl.col("carrier_held_answer_missed") > 0)
            .sum()
            .alias("rows_carrier_held_answer_missed"),
            over_audited(pl.col("answered_absent_from_carrier") > 0)
            .sum()
            .alias("rows_answered_absent_from_carrier"),
            over_audited(pl.col("carrier_held_answer_missed"))
            .sum()
            .alias("checks_carrier_held_answer_missed"),
            over_audited(pl.col("answered_absent_from_carrier"))
            .sum()
            .alias("checks_answered_absent_from_carrier"),
        )
        .cast(SCHEMA)
        .select(list(SCHEMA))
        .sort("arm")
    )
