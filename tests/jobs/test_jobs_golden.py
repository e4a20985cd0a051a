"""Golden tests: a hand-made run whose every expected value was computed by hand.

Configurations (checks passed out of 14; recall = checks / 14):
  A (family fa), group 0
    rep0  j 0      q 14                      pair, effect +1
    rep1  j 7      q 7                       pair, effect 0   (j: 2 parse failures)
    rep2  j att1 invalid transport, att2 14; q 0   pair, effect −1 (final attempt rule)
    rep3  j 14     q invalid catch_up        j unpaired
  B (family fb)
    g0 rep0  j 0   q 7                       pair, +0.5
    g1 rep0  j 7   q 14                      pair, +0.5
    g1 rep1  j att1 valid 14, att2 invalid schema_nonconforming; q 14   no pair
  C (family fa), rep0  j 14  q 7             pair, −0.5
Effects A 0, B +0.5, C −0.5.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from jobs.carrier.run_all import analyze
from tests.jobs.jobs_testdata import row, settings, write_run

T_0975_DF2 = 4.302652729749462


def golden_rows() -> list[dict[str, Any]]:
    a = {"family": "fa", "model": "model-a"}
    b = {"family": "fb", "model": "model-b"}
    c = {"family": "fa", "model": "model-c"}
    return [
        row("A", "j", 0, 0, fill=0.5, headings_carried=0, **a),
        row("A", "q", 0, 14, headings_carried=5, **a),
        row("A", "j", 1, 7, fill=0.7, headings_carried=5, parse_failures=2, **a),
        row("A", "q", 1, 7, headings_carried=5, **a),
        row(
            "A",
            "j",
            2,
            None,
            attempt=1,
            valid=False,
            invalid_reason="transport",
            retryable=True,
            fill=0.99,
            **a,
        ),
        row("A", "j", 2, 14, attempt=2, fill=0.9, headings_carried=5, **a),
        row("A", "q", 2, 0, headings_carried=5, **a),
        row("A", "j", 3, 14, fill=0.3, headings_carried=0, **a),
        row("A", "q", 3, None, valid=False, invalid_reason="catch_up", **a),
        row("B", "j", 0, 0, **b),
        row("B", "q", 0, 7, **b),
        row("B", "j", 0, 7, execution_group=1, **b),
        row("B", "q", 0, 14, execution_group=1, **b),
        row("B", "j", 1, 14, execution_group=1, attempt=1, **b),
        row(
            "B",
            "j",
            1,
            None,
            execution_group=1,
            attempt=2,
            valid=False,
            invalid_reason="schema_nonconforming",
            **b,
        ),
        row("B", "q", 1, 14, execution_group=1, **b),
        row("C", "j", 0, 14, **c),
        row("C", "q", 0, 7, **c),
    ]


def golden_plan() -> list[dict[str, Any]]:
    both = ("j", "q")
    entries = [("A", 0, r, arm) for r in range(5) for arm in both]  # rep4 never ran
    entries += [("B", 0, 0, arm) for arm in both]
    entries += [("B", 1, r, arm) for r in (0, 1) for arm in both]
    entries += [("C", 0, 0, arm) for arm in both] + [("C", 0, 1, "j")]  # C rep1: j only
    entries += [("D", 0, 0, arm) for arm in both]  # D never ran at all
    return [
        {"config_id": cfg, "execution_group": g, "repeat": r, "arm": arm, "model": cfg}
        for cfg, g, r, arm in entries
    ]


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = write_run(
        tmp_path_factory.mktemp("golden"), golden_rows(), plan=golden_plan(), parts=2
    )
    analyze(run_dir, settings(["q_vs_j"], resamples=500))
    return run_dir / "analysis"


def load_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_recall_table_counts_final_attempts_and_invalid_reasons(golden: Path) -> None:
    expected = pl.DataFrame(
        {
            "config_id": ["A", "A", "B", "B", "C", "C"],
            "model": ["model-a", "model-a", "model-b", "model-b", "model-c", "model-c"],
            "family": ["fa", "fa", "fb", "fb", "fa", "fa"],
            "arm": ["j", "q"] * 3,
            "final_rows": [4, 4, 3, 3, 1, 1],
            "valid_rows": [4, 3, 2, 3, 1, 1],
            "invalid_rows": [0, 1, 1, 0, 0, 0],
            "mean_recall": [0.625, 0.5, 0.25, 2.5 / 3, 1.0, 0.5],
            "rows_half": [3, 2, 1, 3, 1, 1],
            "rows_full": [2, 1, 0, 2, 1, 0],
            "parse_failure_rows": [1, 0, 0, 0, 0, 0],
            "parse_failures": [2, 0, 0, 0, 0, 0],
            "mean_fill": [0.6, None, None, None, None, None],
            "mean_headings": [2.5, 5.0, None, None, None, None],
            "small_sample": [False, False, True, False, True, True],  # valid_rows < 3
            "invalid_catch_up": [0, 1, 0, 0, 0, 0],
            "invalid_schema_nonconforming": [0, 0, 1, 0, 0, 0],
        },
        schema_overrides={
            c: pl.Int64
            for c in (
                "final_rows",
                "valid_rows",
                "invalid_rows",
                "rows_half",
                "rows_full",
                "parse_failure_rows",
                "parse_failures",
                "invalid_catch_up",
                "invalid_schema_nonconforming",
            )
        },
    )
    got = pl.read_parquet(golden / "recall_by_config_arm.parquet")
    assert_frame_equal(got, expected, check_exact=False, abs_tol=1e-12)


def test_paired_table_pairs_only_blocks_with_both_arms_valid(golden: Path) -> None:
    expected = pl.DataFrame(
        {
            "config_id": ["A", "B", "C"],
            "model": ["model-a", "model-b", "model-c"],
            "family": ["fa", "fb", "fa"],
            "pairs": [3, 2, 1],
            "valid_rows_a": [4, 2, 1],
            "valid_rows_b": [3, 3, 1],
            "mean_a": [0.625, 0.25, 1.0],
            "mean_b": [0.5, 2.5 / 3, 0.5],
            "paired_mean": [0.0, 0.5, -0.5],
            # A: effects +1, 0, -1 (sd 1, t(0.975, 2)); B: 0.5 twice (a point); C: one pair
            "effect_ci_lo": [-T_0975_DF2 / math.sqrt(3), 0.5, None],
            "effect_ci_hi": [T_0975_DF2 / math.sqrt(3), 0.5, None],
            "small_sample": [False, True, True],  # pairs < 3
        },
        schema_overrides={"pairs": pl.Int64, "valid_rows_a": pl.Int64, "valid_rows_b": pl.Int64},
    )
    got = pl.read_parquet(golden / "paired_q_vs_j.parquet")
    assert_frame_equal(got, expected, check_exact=False, abs_tol=1e-12)


def test_panel_summary_of_three_configs(golden: Path) -> None:
    panel = load_json(golden / "panel_q_vs_j.json")
    half = T_0975_DF2 * 0.5 / math.sqrt(3)
    assert list(panel) == [
        "configs",
        "mean",
        "median",
        "iqr",
        "range",
        "positive",
        "negative",
        "zero",
        "loo_range",
        "t_interval",
        "family_mean",
        "lofo_range",
        "planned_bounds",
        "bootstrap_interval",
        "sensitivity",
        "small_sample",
    ]
    assert panel["configs"] == 3
    assert panel["small_sample"] is True  # 3 configurations < 5
    assert panel["mean"] == pytest.approx(0.0, abs=1e-12)
    assert panel["median"] == pytest.approx(0.0, abs=1e-12)
    assert panel["iqr"] == pytest.approx([-0.25, 0.25])
    assert panel["range"] == pytest.approx([-0.5, 0.5])
    assert (panel["positive"], panel["negative"], panel["zero"]) == (1, 1, 1)
    assert panel["loo_range"] == pytest.approx([-0.25, 0.25])
    assert panel["t_interval"] == pytest.approx([-half, half])
    # families: fa = mean(A 0, C -0.5) = -0.25; fb = 0.5 -> 0.125; leave one out: 0.5, -0.25
    assert panel["family_mean"] == pytest.approx(0.125)
    assert panel["lofo_range"] == pytest.approx([-0.25, 0.5])
    lo, hi = panel["bootstrap_interval"]
    assert -0.5 <= lo <= hi <= 0.5


def test_planned_bounds_impute_missing_outcomes_including_never_run_configs(golden: Path) -> None:
    # A: blocks +1, 0, -1, (j=1, q missing), (both missing) -> lo -0.4, hi 0.2
    # B: +0.5, +0.5, (j missing, q=1) -> lo 1/3, hi 2/3;  C: -0.5;  D: lo -1, hi +1
    panel = load_json(golden / "panel_q_vs_j.json")
    lo = (-0.4 + 1 / 3 - 0.5 - 1.0) / 4
    hi = (0.2 + 2 / 3 - 0.5 + 1.0) / 4
    assert panel["planned_bounds"] == pytest.approx([lo, hi], abs=1e-12)


def test_sensitivity_populations_of_the_golden_panel(golden: Path) -> None:
    panel = load_json(golden / "panel_q_vs_j.json")
    assert panel["sensitivity"] == [
        {"population": "all", "configs": 3, "mean": pytest.approx(0.0), "median": 0.0},
        {"population": "min4", "configs": 0, "mean": None, "median": None},
        {"population": "equal_counts", "configs": 1, "mean": -0.5, "median": -0.5},
        {"population": "exclude_single_pair", "configs": 2, "mean": 0.25, "median": 0.25},
    ]


def test_threshold_counts_and_mcnemar_per_config(golden: Path) -> None:
    expected = pl.DataFrame(
        {
            "config_id": ["A", "A", "B", "B", "C", "C"],
            "threshold": ["full", "half"] * 3,
            "both": [0, 1, 0, 1, 0, 1],
            "only_a": [1, 1, 0, 0, 1, 0],
            "only_b": [1, 1, 1, 1, 0, 0],
            "neither": [1, 0, 1, 0, 0, 0],
            "p_value": [1.0] * 6,
            "small_sample": [True] * 6,  # at most 3 pairs < 5
        },
        schema_overrides={c: pl.Int64 for c in ("both", "only_a", "only_b", "neither")},
    )
    assert_frame_equal(pl.read_parquet(golden / "threshold_q_vs_j.parquet"), expected)


def test_fill_uses_the_a_arm_valid_final_rows(golden: Path) -> None:
    fill = pl.read_parquet(golden / "fill.parquet")
    assert fill.select("config_id", "fill_a", "effect").rows() == [
        ("A", pytest.approx(0.6), 0.0),
        ("B", None, 0.5),
        ("C", None, -0.5),
    ]
    assert load_json(golden / "fill.json") == {
        "q_vs_j": {"configs": 1, "pearson": None, "spearman": None, "small_sample": True}
    }


def test_headings_association_removes_cell_means(golden: Path) -> None:
    headings = load_json(golden / "headings.json")
    # Only cell (A, j, 0) varies: x̃ = ∓2.5, ỹ = (-.625, -.125, .375, .375)
    assert (headings["cells"], headings["rows"]) == (1, 4)
    assert headings["slope"] == pytest.approx(1.25 / 25)
    assert headings["residual_r"] == pytest.approx(1.25 / math.sqrt(25 * 0.6875))
    # pooled over the 7 rows with headings: Sxy 5/7, Sxx 250/7, Syy 17/14
    assert headings["pooled_rows"] == 7
    assert headings["pooled_r"] == pytest.approx((5 / 7) / math.sqrt(250 / 7 * 17 / 14))
    assert headings["by_arm"] == {
        "j": {
            "cells": 1,
            "rows": 4,
            "slope": pytest.approx(0.05),
            "residual_r": pytest.approx(headings["residual_r"]),
            "small_sample": True,
        }
    }
    assert headings["small_sample"] is True  # a slope over 4 rows


def test_dependence_without_checks_falls_back_to_row_counts(golden: Path) -> None:
    dependence = load_json(golden / "dependence.json")
    assert dependence["source"] == "rows"
    assert (dependence["rows"], dependence["checks"]) == (14, 14 * 14)
