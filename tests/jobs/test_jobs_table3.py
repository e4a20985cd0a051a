"""The paper's Table 3 rebuilt at row level reproduces the published panel summary (§4.7)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from jobs.carrier.run_all import analyze
from tests.jobs.jobs_testdata import settings, write_run
from tests.jobs.table3_data import ROUNDING_EXCEPTIONS, TABLE3, table3_rows


@pytest.fixture(scope="module")
def table3_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = write_run(tmp_path_factory.mktemp("table3"), table3_rows(), parts=3)
    analyze(run_dir, settings(["q_vs_j"], resamples=2000))
    return run_dir


@pytest.fixture(scope="module")
def panel(table3_run: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads(
        (table3_run / "analysis" / "panel_q_vs_j.json").read_text(encoding="utf-8")
    )
    return loaded


def r3(value: object) -> float:
    assert isinstance(value, float)
    return round(value, 3)


def test_per_config_rows_pairs_and_paired_means_match_table3(table3_run: Path) -> None:
    paired = pl.read_parquet(table3_run / "analysis" / "paired_q_vs_j.parquet")
    by_config = {r["config_id"]: r for r in paired.iter_rows(named=True)}
    assert len(by_config) == 20
    for config in TABLE3:
        got = by_config[config.model]
        assert got["pairs"] == len(config.j)
        assert got["valid_rows_a"] == len(config.j) + len(config.j_unpaired)
        assert got["valid_rows_b"] == len(config.q) + len(config.q_unpaired)
        assert round(got["paired_mean"], 3) == pytest.approx(config.paired, abs=1e-12)
        for arm, published in (("j", config.j_mean), ("q", config.q_mean)):
            mean = got["mean_a" if arm == "j" else "mean_b"]
            if (config.model, arm) not in ROUNDING_EXCEPTIONS:
                assert round(mean, 3) == pytest.approx(published, abs=1e-12)


def test_published_0947_means_are_rows_stored_at_three_decimals(table3_run: Path) -> None:
    """53/56 rounds to 0.946; the paper's 0.947 comes from rounding each row recall first."""
    for model, arm in ROUNDING_EXCEPTIONS:
        config = next(c for c in TABLE3 if c.model == model)
        checks = config.q if arm == "q" else config.j
        assert round(sum(checks) / (14 * len(checks)), 3) == 0.946
        assert round(sum(round(c / 14, 3) for c in checks) / len(checks), 3) == 0.947


def test_panel_mean_median_iqr_and_signs_match_published(panel: dict[str, object]) -> None:
    assert panel["configs"] == 20
    assert r3(panel["mean"]) == 0.135
    assert r3(panel["median"]) == 0.027
    assert [round(v, 3) for v in panel["iqr"]] == [-0.054, 0.205]  # type: ignore[attr-defined]
    assert [round(v, 3) for v in panel["range"]] == [-0.411, 0.929]  # type: ignore[attr-defined]
    assert (panel["positive"], panel["negative"], panel["zero"]) == (10, 7, 3)


def test_leave_one_out_and_t_interval_match_published(panel: dict[str, object]) -> None:
    assert [round(v, 3) for v in panel["loo_range"]] == [0.094, 0.164]  # type: ignore[attr-defined]
    assert [round(v, 3) for v in panel["t_interval"]] == [-0.036, 0.307]  # type: ignore[attr-defined]


def test_family_mean_and_leave_one_family_out_match_published(panel: dict[str, object]) -> None:
    assert r3(panel["family_mean"]) == 0.091
    assert [round(v, 3) for v in panel["lofo_range"]] == [0.060, 0.117]  # type: ignore[attr-defined]


def test_sensitivity_populations_match_published(panel: dict[str, object]) -> None:
    populations = {p["population"]: p for p in panel["sensitivity"]}  # type: ignore[attr-defined]
    expected = {
        "all": (20, 0.135, 0.027),
        "min4": (17, 0.070, 0.000),
        "equal_counts": (16, 0.069, 0.000),
        "exclude_single_pair": (19, 0.094, 0.000),
    }
    for name, (configs, mean, median) in expected.items():
        got = populations[name]
        assert (got["configs"], round(got["mean"], 3), round(got["median"], 3)) == (
            configs,
            mean,
            median,
        ), name


def test_fill_correlations_from_printed_whole_percent_fills_are_near_published(
    table3_run: Path,
) -> None:
    """Table 3 prints fill in whole percent (with ties), so r = +0.542 and rho = +0.589 are
    reachable only to about 0.005 (we get +0.545 and +0.585; see docs/carrier.md, "Reproducing
    the paper's Table 3")."""
    fill = json.loads((table3_run / "analysis" / "fill.json").read_text(encoding="utf-8"))
    q_vs_j = fill["q_vs_j"]
    assert q_vs_j["configs"] == 20
    assert q_vs_j["pearson"] == pytest.approx(0.542, abs=0.005)
    assert q_vs_j["spearman"] == pytest.approx(0.589, abs=0.005)


def test_retried_partner_attempts_count_once_by_reason(table3_run: Path) -> None:
    recall = pl.read_parquet(table3_run / "analysis" / "recall_by_config_arm.parquet")
    hy3_j = recall.filter((pl.col("config_id") == "tencent/hy3") & (pl.col("arm") == "j")).row(
        0, named=True
    )
    assert (hy3_j["valid_rows"], hy3_j["invalid_rows"], hy3_j["invalid_catch_up"]) == (3, 1, 1)
    assert "invalid_transport" not in recall.columns  # superseded attempts are not outcomes
