"""Live recital verdicts per (configuration, shape): could the model recite what it was shown?

The seed's comparison, per endpoint and request shape: the secrets that reached the rendered
prompt against the secrets the reply recited. The rendered prompt is the live server's render
where the server renders (`in_rendered_live`), else the offline render of the endpoint's
template text (`in_rendered_offline`); `in_prompt` counts that reading.

Decisions:
- A shape whose request was rejected has no recital to grade (`recited` null); its secrets
  count in `rejected`, not as failures to recite.
- `verdict`: `rejected` (no graded secret), `recited_all`, `recited_some`, `recited_none` over
  the graded secrets. Tiny local models recite almost nothing: `recited_none` beside a full
  `in_prompt` is a true reading of the model, and the `in_prompt` column is the reading of the
  template.
- `recited_not_in_prompt` counts recitals of a secret the prompt did not hold: a token the model
  never saw cannot be guessed, so a non-zero count points at the grader or the render.
"""

from __future__ import annotations

import polars as pl

from jobs.small_sample import MIN_CELL_N
from pipeline.traces.visibility.shapes import STRUCTURES

SHAPE_KEYS = (
    "config_id",
    "shape",
    "structure",
    "dialect",
    "content_form",
    "args_form",
    "question_in",
)
VERDICTS = ("recited_all", "recited_some", "recited_none", "rejected")
_ORDER = {name: rank for rank, name in enumerate(STRUCTURES)}


def recital_verdicts(recitals: pl.DataFrame) -> pl.DataFrame:
    """One row per (config_id, shape) of `recitals` (joined to their unit's config_id)."""
    in_prompt = pl.coalesce("in_rendered_live", "in_rendered_offline")
    graded = pl.col("recited").is_not_null()
    return (
        recitals.lazy()
        .group_by(SHAPE_KEYS)
        .agg(
            pl.len().cast(pl.Int64).alias("secrets"),
            pl.col("in_rendered_offline").sum().cast(pl.Int64).alias("in_rendered_offline"),
            pl.col("in_rendered_live").sum().cast(pl.Int64).alias("in_rendered_live"),
            pl.col("in_rendered_live").is_not_null().any().alias("live_rendered"),
            in_prompt.sum().cast(pl.Int64).alias("in_prompt"),
            graded.sum().cast(pl.Int64).alias("graded"),
            pl.col("recited").sum().cast(pl.Int64).alias("recited"),
            (pl.col("recited") & in_prompt.not_())
            .sum()
            .cast(pl.Int64)
            .alias("recited_not_in_prompt"),
            (in_prompt & pl.col("recited").not_())
            .sum()
            .cast(pl.Int64)
            .alias("in_prompt_not_recited"),
            pl.col("error").is_not_null().sum().cast(pl.Int64).alias("rejected"),
            pl.col("error").drop_nulls().first().alias("error"),
        )
        .with_columns(
            pl.when(pl.col("graded") > 0)
            .then(pl.col("recited") / pl.col("graded"))
            .alias("recited_share"),
            pl.when(pl.col("graded") == 0)
            .then(pl.lit("rejected"))
            .when(pl.col("recited") == pl.col("graded"))
            .then(pl.lit("recited_all"))
            .when(pl.col("recited") == 0)
            .then(pl.lit("recited_none"))
            .otherwise(pl.lit("recited_some"))
            .alias("verdict"),
            (pl.col("graded") < MIN_CELL_N).alias("small_sample"),
        )
        .sort(
            "config_id",
            pl.col("structure").replace_strict(_ORDER, default=len(_ORDER), return_dtype=pl.Int64),
            "shape",
        )
        .collect()
    )
