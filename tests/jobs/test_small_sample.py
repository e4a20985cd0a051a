"""A statistic resting on a small sample is flagged in its table and marked in the report
(issue 13: a cell with n = 1, a slope over 3 rows)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from jobs.small_sample import MIN_CELL_N, MIN_SPREAD_N, SMALL_SAMPLE_MARK, small_cell, small_spread
from tests.jobs.jobs_testdata import analyze_and_report, row, write_run


def test_thresholds_are_the_documented_ones() -> None:
    assert (MIN_CELL_N, MIN_SPREAD_N) == (3, 5)
    assert small_cell(1) and small_cell(2) and not small_cell(3) and small_cell(None)
    assert small_spread(4) and not small_spread(5)


def rows_with_a_one_row_cell() -> list[dict[str, Any]]:
    big = [row("A", arm, rep, 7, headings_carried=rep) for rep in range(3) for arm in ("j", "q")]
    return [*big, row("B", "j", 0, 14)]  # the cell (B, j) has one valid row


def test_a_cell_with_one_row_is_flagged_in_the_table_and_marked_in_the_report(
    tmp_path: Path,
) -> None:
    report = analyze_and_report(write_run(tmp_path, rows_with_a_one_row_cell()))
    recall = pl.read_parquet(tmp_path / "analysis" / "recall_by_config_arm.parquet")
    flags = {(c, a): f for c, a, f in recall.select("config_id", "arm", "small_sample").iter_rows()}
    assert flags == {("A", "j"): False, ("A", "q"): False, ("B", "j"): True}
    text = report.read_text(encoding="utf-8")
    assert f"| B | j | 1 | 1{SMALL_SAMPLE_MARK} |" in text
    assert "| A | j | 3 | 3 |" in text
    assert "small sample: fewer than 3 observations behind a cell mean" in text


def test_a_heading_slope_over_three_rows_is_flagged(tmp_path: Path) -> None:
    analyze_and_report(write_run(tmp_path, rows_with_a_one_row_cell()))
    headings = json.loads((tmp_path / "analysis" / "headings.json").read_text())
    assert headings["rows"] == 6 and headings["small_sample"] is False
    assert headings["by_arm"]["j"]["rows"] == 3 and headings["by_arm"]["j"]["small_sample"]
    text = (tmp_path / "analysis" / "report.md").read_text(encoding="utf-8")
    assert f"| j | 1 | 3{SMALL_SAMPLE_MARK} |" in text
    assert "fewer than 5 observations behind a slope" in text


def test_a_configuration_with_one_pair_has_no_interval_and_is_flagged(tmp_path: Path) -> None:
    analyze_and_report(write_run(tmp_path, rows_with_a_one_row_cell()))
    paired = pl.read_parquet(tmp_path / "analysis" / "paired_q_vs_j.parquet")
    a = paired.filter(pl.col("config_id") == "A").row(0, named=True)
    assert a["pairs"] == 3 and not a["small_sample"]
    assert a["effect_ci_lo"] == a["effect_ci_hi"] == 0.0  # every pair agrees: a point
    b = paired.filter(pl.col("config_id") == "B").row(0, named=True)
    assert b["pairs"] == 0 and b["small_sample"] and b["effect_ci_lo"] is None
