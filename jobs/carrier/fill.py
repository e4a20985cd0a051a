"""Exploratory: the a-arm fill of each configuration against its paired effect.

For every contrast run, each configuration with at least one complete pair contributes
(fill_a, effect), where fill_a is the mean `fill` of the a arm's valid final rows (fill is
carried characters over declared capacity). Configurations whose a arm records no fill are
listed with a null fill and left out of the correlations; fill.json states how many entered.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import polars as pl

from jobs import stats
from jobs.carrier.paired import Contrast
from jobs.small_sample import small_spread

SCHEMA = pl.Schema(
    {
        "contrast": pl.String(),
        "config_id": pl.String(),
        "family": pl.String(),
        "pairs": pl.Int64(),
        "fill_a": pl.Float64(),
        "effect": pl.Float64(),
    }
)


@dataclass(frozen=True)
class FillCorrelation:
    configs: int
    pearson: float | None
    spearman: float | None

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "small_sample": small_spread(self.configs)}


def fill_against_effect(
    final: pl.LazyFrame, paired: pl.DataFrame, contrast: Contrast
) -> pl.DataFrame:
    fill_a = (
        final.filter(pl.col("valid") & (pl.col("arm") == contrast.a))
        .group_by("config_id")
        .agg(pl.col("fill").mean().alias("fill_a"))
        .collect()
    )
    return (
        paired.filter(pl.col("pairs") >= 1)
        .join(fill_a, on="config_id", how="left")
        .select(
            pl.lit(contrast.name).alias("contrast"),
            "config_id",
            "family",
            "pairs",
            "fill_a",
            pl.col("paired_mean").alias("effect"),
        )
        .cast(SCHEMA)
        .sort("config_id")
    )


def fill_correlation(fill: pl.DataFrame) -> FillCorrelation:
    usable = fill.drop_nulls(["fill_a", "effect"])
    x = [float(v) for v in usable.get_column("fill_a").to_list()]
    y = [float(v) for v in usable.get_column("effect").to_list()]
    return FillCorrelation(len(x), stats.pearson(x, y), stats.spearman(x, y))


def empty_fill_table() -> pl.DataFrame:
    return pl.DataFrame(schema=SCHEMA)
