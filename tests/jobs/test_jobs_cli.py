"""`python -m pipeline analyze|report|query` through the CLI dispatcher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main
from tests.jobs.jobs_testdata import row, write_manifest, write_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    rows = [row("A", arm, rep, checks) for rep in (0, 1) for arm, checks in (("j", 0), ("q", 14))]
    checks = [{"row_id": r["row_id"], "label": "x", "passed": False} for r in rows]
    manifest = {
        "config": {"analysis": {"contrasts": ["q_vs_j"], "bootstrap": {"seed": 3, "resamples": 20}}}
    }
    return write_run(tmp_path / "run", rows, checks=checks, manifest=manifest)


def test_analyze_writes_the_analysis_and_prints_the_report_path(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert f"report: {run_dir / 'analysis' / 'report.md'}" in out
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert (summary["bootstrap_seed"], summary["bootstrap_resamples"]) == (3, 20)


def test_analyze_flags_override_the_manifest(run_dir: Path) -> None:
    assert main(["analyze", str(run_dir), "--contrasts", "j_vs_q", "--bootstrap-seed", "9"]) == 0
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert summary["contrasts"] == ["j_vs_q"]
    assert summary["bootstrap_seed"] == 9


def test_analyze_of_a_missing_run_dir_prints_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: run directory not found")


def test_analyze_of_a_dir_that_is_not_a_run_dir_prints_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "manifest.json is missing" in err


def test_analyze_of_a_run_without_rows_writes_the_nothing_ran_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_manifest(tmp_path, status="nothing_ran")
    assert main(["analyze", str(tmp_path)]) == 0
    report = tmp_path / "analysis" / "report.md"
    assert f"report: {report}" in capsys.readouterr().out
    assert report.read_text(encoding="utf-8").startswith("Nothing ran:")


def test_analyze_of_a_manifest_config_this_foldsweep_does_not_know_prints_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_manifest(run_dir, config={"analysis": {"bootstrap": {"sed": 3}}})
    assert main(["analyze", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("error: manifest config does not match this foldsweep: unknown config")


def test_report_of_an_unanalyzed_run_analyzes_with_the_manifest_settings_and_prints_the_path(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(run_dir)]) == 0
    assert capsys.readouterr().out.strip() == str(run_dir / "analysis" / "report.md")
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert (summary["contrasts"], summary["bootstrap_seed"], summary["bootstrap_resamples"]) == (
        ["q_vs_j"],
        3,
        20,
    )


def test_query_runs_sql_over_rows_and_checks(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sql = (
        "SELECT r.arm, COUNT(*) AS n, AVG(r.recall) AS mean_recall FROM rows r "
        "JOIN checks c ON r.row_id = c.row_id GROUP BY r.arm ORDER BY r.arm"
    )
    assert main(["query", str(run_dir), sql, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["arm,n,mean_recall", "j,2,0.0", "q,2,1.0"]


def test_query_with_bad_sql_prints_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", str(run_dir), "SELEC nonsense FROM rows"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: query failed")
    assert err.count("\n") == 1


def test_query_of_a_table_without_parts_is_empty_with_its_columns(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", str(run_dir), "SELECT * FROM folds", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("run_id,row_id,fold_index,")


def test_query_of_a_table_the_study_does_not_have_prints_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", str(run_dir), "SELECT * FROM answers"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: query failed")
    assert err.count("\n") == 1


def test_query_of_a_missing_run_dir_prints_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", str(tmp_path / "missing"), "SELECT 1"]) == 2
    assert capsys.readouterr().err.startswith("error: run directory not found")
