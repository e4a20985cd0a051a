"""The gate table reads its mode and median off counts, so a (configuration, policy) over many
shards never holds all its questions at once (issue 20, P8b): the values must not change."""

from __future__ import annotations

import random

import polars as pl
from polars.testing import assert_frame_equal

from jobs.toolout.gate import gate_table, median_of_counts

REASONS = ("below_breakeven", "no_savings", "approved", "too_few_requests")


def _decisions(seed: int, units: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = random.Random(seed)
    rows, decisions = [], []
    for u in range(units):
        row_id = f"r{u:03d}"
        rows.append({"row_id": row_id, "config_id": f"c{u % 2}", "arm": f"p{u % 3 % 2}"})
        for _ in range(rng.randint(0, 40)):
            reason = rng.choice((*REASONS, None))
            decisions.append(
                {
                    "row_id": row_id,
                    "gate_reason": reason,
                    "gate_approved": reason == "approved",
                    "gate_assumed_requests": 6.0,
                    "later_requests": rng.choice((None, *range(12))),
                    "gate_would_flip": rng.random() < 0.3,
                    "gate_regret_usd": rng.random() / 1000,
                }
            )
    return pl.DataFrame(decisions), pl.DataFrame(rows)


def _direct(decisions: pl.DataFrame, rows: pl.DataFrame) -> pl.DataFrame:
    """The table as the direct aggregation over every question at once (before the change)."""
    keys = rows.select("row_id", "config_id", pl.col("arm").alias("policy"))
    asked = decisions.filter(pl.col("gate_reason").is_not_null()).join(keys, on="row_id")
    return (
        asked.group_by("config_id", "policy")
        .agg(
            pl.len().alias("asked"),
            pl.col("gate_approved").sum().alias("approved"),
            pl.col("gate_assumed_requests").first().alias("assumed_requests"),
            pl.col("later_requests").median().alias("median_later_requests"),
            pl.col("gate_would_flip").sum().alias("would_flip"),
            pl.col("gate_regret_usd").sum().alias("regret_usd"),
        )
        .sort("config_id", "policy")
    )


def test_the_counted_gate_table_equals_the_direct_aggregation_over_many_shards() -> None:
    for seed in range(6):
        decisions, rows = _decisions(seed, units=12)  # each (config, policy) spans 3 shards
        got = gate_table(decisions.lazy(), rows)
        want = _direct(decisions, rows)
        assert_frame_equal(
            got.drop("usual_reason", "small_sample"), want, check_exact=False, rel_tol=1e-12
        )


def test_the_usual_reason_is_the_most_frequent_and_a_tie_goes_alphabetically_first() -> None:
    rows = pl.DataFrame({"row_id": ["a", "b"], "config_id": ["c", "c"], "arm": ["p", "p"]})
    reasons = ["no_savings", "no_savings", "approved", "approved", "below_breakeven"]  # a a a b b
    decisions = pl.DataFrame(
        {
            "row_id": ["a", "a", "a", "b", "b"],
            "gate_reason": reasons,
            "gate_approved": [r == "approved" for r in reasons],
            "gate_assumed_requests": [6.0] * 5,
            "later_requests": [1, 2, 3, 4, 5],
            "gate_would_flip": [False] * 5,
            "gate_regret_usd": [0.0] * 5,
        }
    )
    # approved 2, no_savings 2 (across two shards): the tie goes to "approved"
    assert gate_table(decisions, rows)["usual_reason"].to_list() == ["approved"]
    one_more = decisions.vstack(decisions.filter(pl.col("gate_reason") == "no_savings").head(1))
    assert gate_table(one_more, rows)["usual_reason"].to_list() == ["no_savings"]


def test_the_median_of_counts_is_polars_median_of_the_expanded_values() -> None:
    rng = random.Random(3)
    for _ in range(200):
        values = [rng.choice((None, *range(-3, 9))) for _ in range(rng.randint(1, 30))]
        distinct = sorted({v for v in values if v is not None})
        counts = [values.count(v) for v in distinct]
        want = pl.Series(values, dtype=pl.Int64).median()
        assert median_of_counts(list(distinct), counts) == want
