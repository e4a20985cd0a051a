"""Paired intervals between arms on identical traces: each arm against the seed's `naive`.

A pair is one trace (`item_id`) under one configuration, summarised by the arm and by `naive`
(every compression unit of a configuration sees the same items, so arms pair by design).
Two paired differences, arm minus naive:
- `retention` (total, pooled over kinds): positive = the arm kept more of the trace's facts;
  a pair counts only where the trace has facts (both retentions defined);
- log compression ratio, ln(arm's `compression_chars`) − ln(naive's): positive = the arm's
  summary is shorter; `ratio_of_ratios` = exp(mean) is the geometric-mean factor. A pair counts
  only where both summaries are non-empty (both ratios defined).
Per (config_id, arm, band) and per (config_id, arm) over all bands: pairs, the mean and median
difference, and the 95% percentile bootstrap interval of the mean (`jobs.stats`, resampling
pairs; `analysis.bootstrap` seed and resamples). With most bands holding 1-3 items by default
nearly every band row is `small_sample` (fewer than 5 pairs, jobs/small_sample.py): the
intervals are reported, and read with the `all` rows.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl

from jobs.small_sample import small_spread
from jobs.stats import bootstrap_mean_interval
from jobs.traces.compression import ALL_BANDS, band_ranks

BASELINE = "naive"
PAIR_SCHEMA = {
    "config_id": pl.String,
    "arm": pl.String,
    "item_id": pl.String,
    "band": pl.String,
    "trace_chars": pl.Int64,
    "retention": pl.Float64,
    "baseline_retention": pl.Float64,
    "compression_chars": pl.Float64,
    "baseline_compression_chars": pl.Float64,
    "retention_diff": pl.Float64,
    "log_ratio_diff": pl.Float64,
}
PAIRED_SCHEMA = {
    "config_id": pl.String,
    "arm": pl.String,
    "baseline": pl.String,
    "band": pl.String,
    "retention_pairs": pl.Int64,
    "retention_diff_mean": pl.Float64,
    "retention_diff_median": pl.Float64,
    "retention_ci_lo": pl.Float64,
    "retention_ci_hi": pl.Float64,
    "log_ratio_pairs": pl.Int64,
    "log_ratio_diff_mean": pl.Float64,
    "log_ratio_diff_median": pl.Float64,
    "log_ratio_ci_lo": pl.Float64,
    "log_ratio_ci_hi": pl.Float64,
    "ratio_of_ratios": pl.Float64,
    "small_sample": pl.Boolean,
}


def pairs(compressions: pl.DataFrame, baseline: str = BASELINE) -> pl.DataFrame:
    """One row per (config_id, arm other than baseline, item) the baseline also summarised."""
    columns = ["config_id", "item_id", "retention", "compression_chars"]
    base = compressions.filter(pl.col("arm") == baseline).select(columns)
    return (
        compressions.filter(pl.col("arm") != baseline)
        .select(
            "config_id", "arm", "item_id", "band", "trace_chars", "retention", "compression_chars"
        )
        .join(base, on=["config_id", "item_id"], suffix="_base")
        .select(
            "config_id",
            "arm",
            "item_id",
            "band",
            "trace_chars",
            "retention",
            pl.col("retention_base").alias("baseline_retention"),
            "compression_chars",
            pl.col("compression_chars_base").alias("baseline_compression_chars"),
            (pl.col("retention") - pl.col("retention_base")).alias("retention_diff"),
            (pl.col("compression_chars").log() - pl.col("compression_chars_base").log()).alias(
                "log_ratio_diff"
            ),
        )
        .cast(PAIR_SCHEMA)  # type: ignore[arg-type]
        .sort("config_id", "arm", "item_id")
    )


def _summary(values: list[float], seed: int, resamples: int) -> dict[str, Any]:
    interval = bootstrap_mean_interval(values, seed=seed, resamples=resamples)
    return {
        "n": len(values),
        "mean": float(np.mean(values)) if values else None,
        "median": float(np.median(values)) if values else None,
        "lo": interval.lo if interval else None,
        "hi": interval.hi if interval else None,
    }


def _row(key: dict[str, Any], group: pl.DataFrame, seed: int, resamples: int) -> dict[str, Any]:
    kept = _summary(group["retention_diff"].drop_nulls().to_list(), seed, resamples)
    ratio = _summary(group["log_ratio_diff"].drop_nulls().to_list(), seed, resamples)
    return {
        **key,
        "baseline": BASELINE,
        "retention_pairs": kept["n"],
        "retention_diff_mean": kept["mean"],
        "retention_diff_median": kept["median"],
        "retention_ci_lo": kept["lo"],
        "retention_ci_hi": kept["hi"],
        "log_ratio_pairs": ratio["n"],
        "log_ratio_diff_mean": ratio["mean"],
        "log_ratio_diff_median": ratio["median"],
        "log_ratio_ci_lo": ratio["lo"],
        "log_ratio_ci_hi": ratio["hi"],
        "ratio_of_ratios": None if ratio["mean"] is None else math.exp(ratio["mean"]),
        "small_sample": small_spread(min(kept["n"], ratio["n"])),
    }


def paired_table(pair_rows: pl.DataFrame, *, seed: int, resamples: int) -> pl.DataFrame:
    """Per (config_id, arm, band) and per (config_id, arm) with band `all` (module docstring)."""
    ranks = band_ranks(pair_rows)
    records: list[dict[str, Any]] = []
    for (config_id, arm), unit in sorted(
        pair_rows.group_by(["config_id", "arm"]), key=lambda g: (str(g[0][0]), str(g[0][1]))
    ):
        bands = unit.group_by(["band"])
        for (band,), group in sorted(bands, key=lambda g: ranks.get(str(g[0][0]), len(ranks))):
            records.append(
                _row({"config_id": config_id, "arm": arm, "band": band}, group, seed, resamples)
            )
        records.append(
            _row({"config_id": config_id, "arm": arm, "band": ALL_BANDS}, unit, seed, resamples)
        )
    return pl.DataFrame(records, schema=PAIRED_SCHEMA)
