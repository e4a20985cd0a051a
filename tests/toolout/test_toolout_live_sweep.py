"""`sweep study=toolout +panel=local`: the live cached-token replay against real llama-servers."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline import studies
from pipeline.store.reader import read_table
from tests.reliability.harness import SweepHarness

pytestmark = [pytest.mark.local_model, pytest.mark.ray, pytest.mark.slow]


def test_live_replay_reports_the_local_prefix_cache_beside_the_prediction(
    harness: SweepHarness, tmp_path: Path
) -> None:
    result = harness.run(
        [
            "study=toolout",
            "+panel=local",
            # the live default: study.live.policies, one transcript of up to 6 requests
            f"out_dir={tmp_path}",
        ],
        timeout_s=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = result.run_dir
    assert run_dir is not None
    layout = studies.layout(studies.definition("toolout"))
    rows = pl.from_arrow(read_table(run_dir, "rows", layout))
    assert isinstance(rows, pl.DataFrame)
    assert rows.height == 2 * 2 and rows["valid"].all() and rows["live"].all()
    assert set(rows["arm"]) == {"control", "deterministic_first_pass"}  # no oracle arm
    assert not rows["simulated"].any()
    turns = pl.from_arrow(read_table(run_dir, "turns", layout))
    assert isinstance(turns, pl.DataFrame)
    assert turns["live_sent"].all() and turns["reported_prompt_tokens"].min() > 0
    # llama-server's prefix cache: every request after a transcript's first reuses its prefix
    later = turns.filter(pl.col("request_index") > 0)
    assert later.height > 0 and (later["reported_cached_tokens"] > 0).all()
    # one unit a slot: each request reads its whole previous prompt, as predicted, less the
    # few tokens of the chat template's generation prompt (the counts are the real
    # tokenizer's, so each is compared with the previous report, not the estimate)
    by_unit = turns.sort("row_id", "request_index").with_columns(
        previous=pl.col("reported_prompt_tokens").shift(1).over("row_id")
    )
    later = by_unit.filter(pl.col("request_index") > 0)
    assert (later["reported_cached_tokens"] >= later["previous"] - 8).all()
    report = (run_dir / "analysis" / "report.md").read_text()
    assert "## Live replay: predicted against reported cache hits" in report
    assert (run_dir / "analysis" / "live_hits.png").is_file()
    live = pl.read_parquet(run_dir / "analysis" / "live.parquet")
    assert live.height == 4 and live["reported_hit_share"].min() > 0
