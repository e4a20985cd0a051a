"""The economic gate's decisions and their regret (the N it assumed against the transcript's).

A model policy asks the gate about every visible output on every request: about 37 questions
per request, 17 million for one (configuration, policy) over the 2,000-transcript corpus.
A mode and a median over all of them at once held 2.2 GiB in the driver (issue 20, P8b), so
each unit's questions are first counted per (reason, later requests), a few thousand groups,
and the mode and the median are read off those counts: the same values, exactly.
"""

from __future__ import annotations

import polars as pl

from jobs.small_sample import small_cell_expr
from jobs.toolout.tables import by_unit

KEYS = ("config_id", "policy")


def _counted(unit: pl.LazyFrame, keys: pl.LazyFrame) -> pl.LazyFrame:
    """One row per (configuration, policy, reason, later requests): streams, holds no question."""
    asked = unit.filter(pl.col("gate_reason").is_not_null()).join(keys, on="row_id")
    return asked.group_by(*KEYS, "gate_reason", "later_requests").agg(
        pl.len().alias("n"),
        pl.col("gate_approved").sum().alias("approved"),
        pl.col("gate_assumed_requests").first().alias("assumed_requests"),
        pl.col("gate_would_flip").sum().alias("would_flip"),
        pl.col("gate_regret_usd").sum().alias("regret_usd"),
    )


def usual_reason(counted: pl.DataFrame) -> pl.DataFrame:
    """The most frequent reason per (configuration, policy); a tie goes to the first in
    alphabetical order, so the table does not depend on the order the parts were read."""
    by_reason = counted.group_by(*KEYS, "gate_reason").agg(pl.col("n").sum())
    return (
        by_reason.sort([*KEYS, "n", "gate_reason"], descending=[False, False, True, False])
        .group_by(*KEYS, maintain_order=True)
        .agg(pl.col("gate_reason").first().alias("usual_reason"))
    )


def median_of_counts(values: list[int | None], counts: list[int]) -> float | None:
    """The median of a multiset given as (value, count): the mean of the two middle values
    when the total is even, as Polars' `median` does; nulls are ignored, as there."""
    pairs = sorted((v, c) for v, c in zip(values, counts, strict=True) if v is not None)
    total = sum(c for _, c in pairs)
    if total == 0:
        return None
    wanted = [(total - 1) // 2, total // 2]  # 0-based ranks of the middle value(s)
    found: list[int] = []
    seen = 0
    for value, count in pairs:
        while wanted and wanted[0] < seen + count:
            found.append(value)
            wanted.pop(0)
        seen += count
    return (found[0] + found[1]) / 2


def median_later(counted: pl.DataFrame) -> pl.DataFrame:
    by_later = counted.group_by(*KEYS, "later_requests").agg(pl.col("n").sum())
    records = [
        {
            "config_id": config_id,
            "policy": policy,
            "median_later_requests": median_of_counts(
                group["later_requests"].to_list(), group["n"].to_list()
            ),
        }
        for (config_id, policy), group in by_later.group_by(*KEYS, maintain_order=True)
    ]
    schema = {"config_id": pl.String, "policy": pl.String, "median_later_requests": pl.Float64}
    return pl.DataFrame(records, schema=schema)


def gate_table(decisions: pl.DataFrame | pl.LazyFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """One row per (configuration, policy) the gate was asked in; `decisions` may be a lazy
    scan, read one unit at a time (tables.by_unit) and counted before the mode and median."""
    keys = rows.lazy().select("row_id", "config_id", pl.col("arm").alias("policy"))
    counted = by_unit(decisions, rows, lambda unit: _counted(unit, keys))
    totals = counted.group_by(*KEYS).agg(
        pl.col("n").sum().alias("asked"),
        pl.col("approved").sum(),
        pl.col("assumed_requests").first(),
        pl.col("would_flip").sum(),
        pl.col("regret_usd").sum(),
    )
    return (
        totals.join(usual_reason(counted), on=list(KEYS))
        .join(median_later(counted), on=list(KEYS))
        .select(
            *KEYS,
            "asked",
            "approved",
            "usual_reason",
            "assumed_requests",
            "median_later_requests",
            "would_flip",
            "regret_usd",
        )
        .with_columns(small_cell_expr("asked"))
        .sort(*KEYS)
    )
