"""The live table: predicted hits beside reported ones, over the requests actually sent."""

from __future__ import annotations

import polars as pl
import pytest

from jobs.toolout.live import live_table


def frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = pl.DataFrame({"row_id": ["r1"], "config_id": ["local"], "arm": ["control"]})
    turns = pl.DataFrame(
        {
            "row_id": ["r1"] * 4,
            "live_sent": [True, True, True, False],
            "input_tokens": [100, 200, 400, 800],
            "cached_tokens": [0, 100, 200, 400],
            "reported_prompt_tokens": [125, 250, 500, None],
            "reported_cached_tokens": [0, 125, 500, None],
        }
    )
    return turns, rows


def test_only_sent_requests_count_and_each_share_is_over_its_own_tokens() -> None:
    table = live_table(*frames())
    row = table.row(0, named=True)
    assert row["requests"] == 3
    assert row["predicted_cached_tokens"] == 300 and row["reported_cached_tokens"] == 625
    assert row["predicted_hit_share"] == pytest.approx(300 / 700)
    assert row["reported_hit_share"] == pytest.approx(625 / 875)
    # per request: |0-0|, |0.5-0.5|, |0.5-1.0| -> mean 1/6
    assert row["mean_share_gap"] == pytest.approx(1 / 6)
    assert row["median_estimator_error"] == pytest.approx(100 / 125 - 1)
    assert row["small_sample"] is False


def test_an_offline_run_has_an_empty_live_table() -> None:
    turns, rows = frames()
    offline = turns.with_columns(pl.lit(False).alias("live_sent"))
    assert live_table(offline, rows).height == 0
