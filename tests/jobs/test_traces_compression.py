"""Part 2's jobs: per-band medians, the decoding checks, and paired intervals against naive."""

from __future__ import annotations

import math

import polars as pl
import pytest

from jobs.traces.compression import ALL_BANDS, by_band, decoding_table
from jobs.traces.paired import paired_table, pairs
from tests.jobs.traces_rundir import compressions, row


def frame(arms: tuple[str, ...] = ("naive", "extractive")) -> pl.DataFrame:
    records = []
    for arm in arms:
        unit = row("c", arm)
        records += [{**r, "config_id": "c", "arm": arm} for r in compressions(unit, arm)]
    return pl.DataFrame(records, infer_schema_length=None)


def _row(table: pl.DataFrame, arm: str, band: str) -> dict[str, object]:
    return table.filter((pl.col("arm") == arm) & (pl.col("band") == band)).row(0, named=True)


def test_bands_are_shortest_first_then_all_with_medians_per_band() -> None:
    table = by_band(frame())
    assert table.filter(pl.col("arm") == "naive")["band"].to_list() == ["<1k", "4k-16k", "all"]
    extractive = _row(table, "extractive", ALL_BANDS)
    naive = _row(table, "naive", ALL_BANDS)
    assert extractive["median_retention"] == 1.0 and naive["median_retention"] == 0.0
    assert extractive["n"] == 2 and extractive["synthetic"] == 1
    assert extractive["small_sample"] is True


def test_greedy_counts_only_rows_a_request_was_sent_for() -> None:
    table = by_band(frame())
    assert _row(table, "naive", ALL_BANDS)["greedy_ok_share"] == 1.0
    extractive = _row(table, "extractive", ALL_BANDS)
    assert extractive["greedy_checked"] == 0 and extractive["greedy_ok_share"] is None


def test_a_sent_temperature_above_zero_fails_the_greedy_count_and_is_quoted() -> None:
    hot = frame(("naive",)).with_columns(
        pl.lit(0.8).alias("sent_temperature"), pl.lit(False).alias("greedy")
    )
    assert _row(by_band(hot), "naive", ALL_BANDS)["greedy_ok"] == 0
    decoding = decoding_table(hot).row(0, named=True)
    assert decoding["sent_temperature"] == "0.8" and decoding["greedy_ok"] == 0


def test_paired_interval_excludes_zero_when_one_arm_keeps_every_fact_and_naive_none() -> None:
    table = paired_table(pairs(frame()), seed=166, resamples=500)
    overall = _row(table, "extractive", ALL_BANDS)
    assert overall["retention_pairs"] == 2 and overall["retention_diff_mean"] == 1.0
    assert overall["retention_ci_lo"] > 0.0  # type: ignore[operator]
    assert overall["small_sample"] is True
    assert set(table["band"]) == {"<1k", "4k-16k", ALL_BANDS}


def test_the_log_ratio_difference_is_arm_minus_naive() -> None:
    rows = pairs(frame())
    first = rows.row(0, named=True)
    expected = math.log(first["compression_chars"]) - math.log(first["baseline_compression_chars"])
    assert first["log_ratio_diff"] == pytest.approx(expected)
    overall = _row(paired_table(rows, seed=1, resamples=50), "extractive", ALL_BANDS)
    assert overall["ratio_of_ratios"] == pytest.approx(math.exp(rows["log_ratio_diff"].mean()))


def test_identical_arms_give_an_interval_around_zero() -> None:
    same = frame(("naive",))
    twin = same.with_columns(pl.lit("churn").alias("arm"))
    overall = _row(
        paired_table(pairs(pl.concat([same, twin])), seed=3, resamples=200), "churn", ALL_BANDS
    )
    assert overall["retention_ci_lo"] == overall["retention_ci_hi"] == 0.0


def test_an_empty_summary_has_no_ratio_and_leaves_the_ratio_pair_out() -> None:
    data = frame()
    empty = data.with_columns(
        pl.when(pl.col("arm") == "extractive")
        .then(None)
        .otherwise(pl.col("compression_chars"))
        .alias("compression_chars")
    )
    overall = _row(paired_table(pairs(empty), seed=1, resamples=20), "extractive", ALL_BANDS)
    assert overall["log_ratio_pairs"] == 0 and overall["ratio_of_ratios"] is None
    assert overall["retention_pairs"] == 2


def test_issue21_without_synthetic_traces_an_empty_band_is_not_said_to_hold_them() -> None:
    import polars as pl

    from jobs.traces.report_compression import _items

    frame = pl.DataFrame(
        {
            "id": ["a"],
            "band": ["<1k"],
            "source": ["jsonl"],
            "synthetic": [False],
            "provenance": ["f#1"],
            "chars": [10],
        }
    )
    counts = pl.DataFrame({"band": ["<1k", ">=16k"], "available": [1, 0], "taken": [1, 0]})
    text = "\n".join(_items((frame, counts)))
    assert "only synthetic traces stand there" not in text
    assert "No real trace falls in >=16k, and no synthetic trace was generated" in text
    assert "No item is synthetic" in text
