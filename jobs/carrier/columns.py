"""The columns each analysis reads, with analysis dtypes (integers widened to Int64).

The store's schemas (pipeline.store, the carrier's layout) say what a run's tables hold; these
only name the columns the jobs use and widen them after the scan (jobs.io.widen). Only `rows`
is required; an absent `checks` table or plan is handled by each job.
"""

from __future__ import annotations

import polars as pl

BLOCK = ("config_id", "execution_group", "repeat")
"""A paired block: a trajectory (pipeline.store.final.KEY) without its arm."""

ROW_COLUMNS: dict[str, pl.DataType] = {
    "row_id": pl.String(),
    "config_id": pl.String(),
    "model": pl.String(),
    "family": pl.String(),
    "arm": pl.String(),
    "execution_group": pl.Int64(),
    "repeat": pl.Int64(),
    "attempt": pl.Int64(),
    "simulated": pl.Boolean(),
    "valid": pl.Boolean(),
    "invalid_reason": pl.String(),
    "recall": pl.Float64(),
    "checks_passed": pl.Int64(),
    "checks_total": pl.Int64(),
    "fill": pl.Float64(),
    "headings_carried": pl.Int64(),
    "parse_failures": pl.Int64(),
    "abstains": pl.Boolean(),
}

CHECK_COLUMNS: dict[str, pl.DataType] = {
    "row_id": pl.String(),
    "passed": pl.Boolean(),
    "present_in_carrier": pl.Boolean(),
    "outcome": pl.String(),
    "stock_signature": pl.Boolean(),
}

PLAN_COLUMNS: dict[str, pl.DataType] = {
    "config_id": pl.String(),
    "arm": pl.String(),
    "execution_group": pl.Int64(),
    "repeat": pl.Int64(),
}

FULL_RECALL = 1.0 - 1e-9
"""Recall at or above this is full recall (recall is a float quotient of check counts)."""

HALF_RECALL = 0.5
