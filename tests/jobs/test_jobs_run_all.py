"""analyze() on unusual run directories: subsets of arms, missing tables, foreign parts."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from jobs import analyze
from jobs.carrier import render_report
from pipeline import studies
from pipeline.store import RunDirError
from tests.jobs.jobs_testdata import analyze_and_report, row, settings, write_run


def jq_rows(j: int = 0, q: int = 14, **extra: object) -> list[dict[str, object]]:
    return [
        row(cfg, arm, rep, checks, **extra)
        for cfg in ("A", "B")
        for rep in (0, 1)
        for arm, checks in (("j", j), ("q", q))
    ]


def test_contrasts_whose_arms_are_absent_are_skipped_and_reported(tmp_path: Path) -> None:
    summary = analyze(write_run(tmp_path, jq_rows()), settings())
    assert summary.contrasts == ("q_vs_j",)
    skipped = {s.contrast: s.reason for s in summary.skipped}
    assert skipped["m_vs_q"] == "no rows for arm(s) m"
    assert skipped["t_vs_j"] == "no rows for arm(s) t"
    assert set(skipped) == {"m_vs_q", "t_vs_j", "u_vs_m", "o_vs_m", "x_vs_m"}
    assert not (tmp_path / "analysis" / "panel_m_vs_q.json").exists()
    report = render_report(tmp_path).read_text(encoding="utf-8")
    assert "- u_vs_m: skipped (no rows for arm(s) u, m)." in report


def test_settings_default_to_the_manifest_analysis_section(tmp_path: Path) -> None:
    config = {"analysis": {"contrasts": ["j_vs_q"], "bootstrap": {"seed": 5, "resamples": 30}}}
    summary = analyze(write_run(tmp_path, jq_rows(), manifest={"config": config}))
    assert summary.contrasts == ("j_vs_q",)
    assert (summary.bootstrap_seed, summary.bootstrap_resamples) == (5, 30)
    assert summary.skipped == ()
    panel = json.loads((tmp_path / "analysis" / "panel_j_vs_q.json").read_text())
    assert panel["mean"] == pytest.approx(-1.0)


def test_rows_only_run_writes_every_output_with_nulls_for_missing_inputs(tmp_path: Path) -> None:
    summary = analyze(write_run(tmp_path, jq_rows()), settings(["q_vs_j"]))
    names = set(summary.outputs)
    assert {
        "recall_by_config_arm.parquet",
        "paired_q_vs_j.parquet",
        "panel_q_vs_j.json",
        "threshold_q_vs_j.parquet",
        "dependence.json",
        "fill.parquet",
        "fill.json",
        "headings.json",
        "carrier_audit.parquet",
        "answers.parquet",
    } <= names
    assert set(summary.absent_tables) == {
        "checks",
        "folds",
        "events",
        "requests",
        "plan.parquet",
        "manifest.json",
    }
    panel = json.loads((tmp_path / "analysis" / "panel_q_vs_j.json").read_text())
    assert panel["planned_bounds"] is None
    assert not (tmp_path / "analysis" / "report.md").exists()  # the report is drawn apart


def test_report_first_line_says_simulated_when_any_row_is(tmp_path: Path) -> None:
    rows = jq_rows()
    rows[0]["simulated"] = True
    analyze_and_report(write_run(tmp_path, rows), settings(["q_vs_j"]))
    first = (tmp_path / "analysis" / "report.md").read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("SIMULATED")


def test_report_of_a_real_run_does_not_say_simulated(tmp_path: Path) -> None:
    analyze_and_report(write_run(tmp_path, jq_rows()), settings(["q_vs_j"]))
    assert "SIMULATED" not in (tmp_path / "analysis" / "report.md").read_text(encoding="utf-8")


def test_report_calls_near_zero_recall_what_it_is(tmp_path: Path) -> None:
    analyze_and_report(write_run(tmp_path, jq_rows(j=0, q=1)), settings(["q_vs_j"]))
    report = (tmp_path / "analysis" / "report.md").read_text(encoding="utf-8")
    assert "Recall is near zero everywhere" in report


def test_report_embeds_the_three_figures_as_png(tmp_path: Path) -> None:
    rows = jq_rows(fill=0.4)
    analyze_and_report(write_run(tmp_path, rows), settings(["q_vs_j"]))
    out = tmp_path / "analysis"
    for name in ("recall_heatmap.png", "forest_q_vs_j.png", "fill_q_vs_j.png"):
        assert (out / name).read_bytes()[:4] == b"\x89PNG"
        assert f"]({name})" in (out / "report.md").read_text(encoding="utf-8")


def test_report_analyzes_a_never_analyzed_run_with_the_manifest_settings(
    tmp_path: Path,
) -> None:
    config = {"analysis": {"contrasts": ["q_vs_j"], "bootstrap": {"seed": 4, "resamples": 25}}}
    run_dir = write_run(tmp_path, jq_rows(), manifest={"config": config})
    report = studies.report(studies.definition("carrier"), run_dir)  # as `pipeline report RUN`
    assert report == tmp_path / "analysis" / "report.md"
    summary = json.loads((tmp_path / "analysis" / "summary.json").read_text())
    assert (summary["contrasts"], summary["bootstrap_seed"], summary["bootstrap_resamples"]) == (
        ["q_vs_j"],
        4,
        25,
    )
    assert "seed 4, 25 resamples" in report.read_text(encoding="utf-8")


def test_report_of_an_analyzed_run_does_not_analyze_again(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, jq_rows())
    analyze_and_report(run_dir, settings(["q_vs_j"], seed=9))  # as `pipeline analyze RUN`
    before = (run_dir / "analysis" / "panel_q_vs_j.json").stat().st_mtime_ns
    studies.report(studies.definition("carrier"), run_dir)
    assert (run_dir / "analysis" / "panel_q_vs_j.json").stat().st_mtime_ns == before
    assert "seed 9, 10 resamples" in (run_dir / "analysis" / "report.md").read_text()


def test_run_dir_without_rows_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="no rows/ parts"):
        analyze(tmp_path)


def test_missing_run_dir_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(RunDirError, match="run directory not found"):
        analyze(tmp_path / "nope")


def test_a_part_that_does_not_match_the_store_schema_is_refused_naming_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "rows").mkdir()
    pl.DataFrame(
        {
            "config_id": ["A", "A"],
            "arm": ["j", "q"],
            "execution_group": [0, 0],  # Int64, not the contract's Int32; most columns missing
            "repeat": [0, 0],
            "valid": [True, True],
            "recall": [0.5, 1.0],
        }
    ).write_parquet(tmp_path / "rows" / "old.parquet")
    with pytest.raises(RunDirError, match=r"old\.parquet is corrupt: its columns do not match"):
        analyze(tmp_path, settings(["q_vs_j"]))


def test_malformed_contrast_name_is_a_user_error(tmp_path: Path) -> None:
    from jobs.carrier.paired import ContrastError

    with pytest.raises(ContrastError, match="not of the form"):
        analyze(write_run(tmp_path, jq_rows()), settings(["q-j"]))


def test_contrast_between_two_floors_is_labelled_as_such(tmp_path: Path) -> None:
    analyze_and_report(write_run(tmp_path, jq_rows(j=0, q=1)), settings(["q_vs_j"]))
    report = (tmp_path / "analysis" / "report.md").read_text(encoding="utf-8")
    assert "Both j and q recall near zero in every configuration" in report


def test_duplicate_final_attempts_are_a_run_dir_error_naming_the_fix(tmp_path: Path) -> None:
    rows = [
        row("A", "j", 0, 0, row_id="a-first"),
        row("A", "j", 0, 14, row_id="b-second"),
        row("A", "q", 0, 14, row_id="c"),
    ]
    with pytest.raises(RunDirError, match=r"two rows share .* attempt 1; .* duplicated part"):
        analyze(write_run(tmp_path, rows), settings(["q_vs_j"]))


def test_rerun_with_fewer_contrasts_removes_their_stale_outputs(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path, jq_rows())
    analyze_and_report(run_dir, settings(["q_vs_j", "j_vs_q"]))
    assert (run_dir / "analysis" / "forest_j_vs_q.png").is_file()
    analyze_and_report(run_dir, settings(["q_vs_j"]))
    assert not (run_dir / "analysis" / "panel_j_vs_q.json").exists()
    assert not (run_dir / "analysis" / "forest_j_vs_q.png").exists()
    assert (run_dir / "analysis" / "panel_q_vs_j.json").is_file()
