"""When a statistic rests on too few observations to be read on its own: one rule for every study.

Two thresholds (docs/tables.md `small_sample`, docs/engine.md):
- a cell's mean, proportion or paired effect (one configuration x arm, one configuration, one
  policy's median) over fewer than MIN_CELL_N observations (rows, pairs, decisions) is flagged:
  with n = 1 there is no spread at all, and with n = 2 a 95% t interval is ±12.7 sd/√2;
- a statistic about spread or association (an interval over configurations or pairs, a
  correlation, a slope, a test) over fewer than MIN_SPREAD_N points is flagged: a slope over 3
  rows or a correlation over 4 configurations moves by its whole range with one point.
Flagged values are still reported (nothing is dropped); tables carry a `small_sample` column or
key, and the rendered report marks them with SMALL_SAMPLE_MARK and one footnote.
"""

from __future__ import annotations

import polars as pl

MIN_CELL_N = 3
MIN_SPREAD_N = 5
SMALL_SAMPLE_MARK = "†"


def small_cell(n: int | None) -> bool:
    return n is None or n < MIN_CELL_N


def small_spread(n: int | None) -> bool:
    return n is None or n < MIN_SPREAD_N


def small_cell_expr(column: str) -> pl.Expr:
    """`small_sample` for a per-cell count column (null counts as zero)."""
    return (pl.col(column).fill_null(0) < MIN_CELL_N).alias("small_sample")


def small_spread_expr(column: str) -> pl.Expr:
    return (pl.col(column).fill_null(0) < MIN_SPREAD_N).alias("small_sample")


def marked(text: str, small: object) -> str:
    """`text` with the small-sample mark when `small` is true."""
    return f"{text}{SMALL_SAMPLE_MARK}" if small else text


def footnote(what: str, threshold: int) -> str:
    return (
        f"{SMALL_SAMPLE_MARK} small sample: fewer than {threshold} observations behind {what} "
        "(jobs/small_sample.py); read it with the others, not on its own."
    )
