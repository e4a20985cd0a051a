"""Contrasts, complete pairs and the per-configuration paired effect.

A contrast `b_vs_a` has effect recall_b − recall_a. A complete pair is a block (config_id,
execution_group, repeat) in which the final attempts of a and of b are both valid; a
configuration's effect is the mean over its complete pairs (pairs never cross execution
groups). `mean_a` and `mean_b` are over *all* valid final rows of each arm, as in the
paper's Table 3, so they can differ from the paired means when a cell is sparse.
Each configuration's effect carries its 95% t interval over its pairs (`effect_ci_lo/hi`, null
with fewer than two pairs: the forest plot draws it) and `small_sample` (fewer than
jobs.small_sample.MIN_CELL_N pairs).
"""

from __future__ import annotations

from typing import NamedTuple

import polars as pl

from jobs import stats
from jobs.carrier.columns import BLOCK
from jobs.carrier.recall import config_labels
from jobs.small_sample import small_cell_expr
from pipeline.usererror import UserError


class ContrastError(UserError):
    """A contrast name that is not of the form `<b>_vs_<a>`."""


class Contrast(NamedTuple):
    name: str
    b: str
    a: str


def parse_contrast(name: str) -> Contrast:
    b, separator, a = name.partition("_vs_")
    if not separator or not b or not a or b == a:
        raise ContrastError(f"contrast '{name}' is not of the form <b>_vs_<a> with b != a")
    return Contrast(name, b, a)


def _arm_outcomes(final: pl.LazyFrame, arm: str, suffix: str) -> pl.LazyFrame:
    return final.filter(pl.col("valid") & (pl.col("arm") == arm)).select(
        *BLOCK, pl.col("recall").alias(f"recall_{suffix}")
    )


def complete_pairs(final: pl.LazyFrame, contrast: Contrast) -> pl.LazyFrame:
    """One row per complete pair: the block, recall_a, recall_b and effect = b − a."""
    return (
        _arm_outcomes(final, contrast.a, "a")
        .join(_arm_outcomes(final, contrast.b, "b"), on=list(BLOCK), how="inner")
        .with_columns((pl.col("recall_b") - pl.col("recall_a")).alias("effect"))
    )


def paired_by_config(final: pl.LazyFrame, contrast: Contrast) -> pl.DataFrame:
    """Per config with any final row in a or b: pairs, valid rows and means of each arm."""
    in_contrast = final.filter(pl.col("arm").is_in([contrast.a, contrast.b]))
    per_arm = in_contrast.group_by("config_id").agg(
        *(
            (pl.col("valid") & (pl.col("arm") == arm)).sum().cast(pl.Int64).alias(f"valid_rows_{s}")
            for arm, s in ((contrast.a, "a"), (contrast.b, "b"))
        ),
        *(
            pl.col("recall")
            .filter(pl.col("valid") & (pl.col("arm") == arm))
            .mean()
            .alias(f"mean_{s}")
            for arm, s in ((contrast.a, "a"), (contrast.b, "b"))
        ),
    )
    pairs = (
        complete_pairs(final, contrast)
        .group_by("config_id")
        .agg(
            pl.len().cast(pl.Int64).alias("pairs"),
            pl.col("effect").mean().alias("paired_mean"),
            pl.col("effect").sort().alias("effects"),
        )
    )
    table = (
        per_arm.join(pairs, on="config_id", how="left")
        .join(config_labels(final), on="config_id", how="left")
        .select(
            "config_id",
            "model",
            "family",
            pl.col("pairs").fill_null(0),
            "valid_rows_a",
            "valid_rows_b",
            "mean_a",
            "mean_b",
            "paired_mean",
            "effects",
        )
        .sort("config_id")
        .collect()
    )
    intervals = [
        stats.t_interval([float(v) for v in effects or []])
        for effects in table.get_column("effects").to_list()
    ]
    return table.drop("effects").with_columns(
        pl.Series("effect_ci_lo", [None if i is None else i.lo for i in intervals], pl.Float64),
        pl.Series("effect_ci_hi", [None if i is None else i.hi for i in intervals], pl.Float64),
        small_cell_expr("pairs"),
    )
