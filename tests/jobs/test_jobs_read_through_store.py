"""Issue 10: the jobs read a run directory only through pipeline.store.

A killed writer leaves `.tmp-*.parquet` beside the committed parts; `jobs/io.py` used to glob
`*.parquet` and read them (a torn part crashed `analyze`, a whole one was counted). Now every
table scan goes through the store, which never reads a temporary and refuses a torn committed
part with a one-line RunDirError that names the file and the fix. The sweep's analysis and
report run once each.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from jobs import io
from jobs.carrier import report, run_all
from pipeline.cli import main
from pipeline.store import RunDirError
from pipeline.store.parts import TMP_PREFIX
from tests.jobs.jobs_testdata import analyze_and_report, row, settings, write_run

CONFIG = {"analysis": {"contrasts": ["q_vs_j"], "bootstrap": {"seed": 1, "resamples": 10}}}


def committed_rows() -> list[dict[str, object]]:
    return [row("A", arm, rep, checks) for rep in (0, 1) for arm, checks in (("j", 3), ("q", 9))]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    rows = committed_rows()
    checks = [{"row_id": r["row_id"], "label": "x", "passed": True} for r in rows]
    return write_run(tmp_path / "run", rows, checks=checks, manifest={"config": CONFIG})


def leave_temporary(run_dir: Path, table: str, torn: bool) -> Path:
    """A killed writer's temporary in `table`/: torn bytes, or a whole part of extra rows."""
    temporary = run_dir / table / f"{TMP_PREFIX}part-0001.parquet"
    if torn:
        temporary.write_bytes((run_dir / table / "part-0000.parquet").read_bytes()[:50])
    else:
        extra = [row("B", arm, 0, 14, row_id=f"extra-{arm}") for arm in ("j", "q")]
        scratch = write_run(run_dir.parent / "scratch", extra, checks=[])
        shutil.copy(scratch / table / "part-0000.parquet", temporary)
    return temporary


@pytest.mark.parametrize("torn", [True, False], ids=["torn", "whole-extra-rows"])
def test_tmp_part_in_rows_is_never_read_by_analyze(run_dir: Path, torn: bool) -> None:
    leave_temporary(run_dir, "rows", torn)
    leave_temporary(run_dir, "checks", torn)
    assert main(["analyze", str(run_dir)]) == 0
    summary = json.loads((run_dir / "analysis" / "summary.json").read_text())
    assert (summary["attempts"], summary["final_rows"], summary["valid_rows"]) == (4, 4, 4)
    recall = io.read_parquet(run_dir / "analysis" / "recall_by_config_arm.parquet")
    assert recall is not None
    assert recall.get_column("config_id").to_list() == ["A", "A"]


@pytest.mark.parametrize("torn", [True, False], ids=["torn", "whole-extra-rows"])
def test_tmp_part_in_rows_is_never_read_by_query(
    run_dir: Path, torn: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    leave_temporary(run_dir, "rows", torn)
    assert main(["query", str(run_dir), "select count(*) as n from rows", "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["n", "4"]


def test_truncated_committed_part_is_a_run_dir_error_naming_the_file(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    part = run_dir / "rows" / "part-0000.parquet"
    part.write_bytes(part.read_bytes()[:-20])
    with pytest.raises(RunDirError, match=r"part-0000\.parquet is corrupt"):
        run_all.analyze(run_dir)
    assert main(["analyze", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"error: {part} is corrupt: unreadable Parquet footer" in err
    assert "delete part-0000.parquet from checks/, rows/ and resume" in err


def test_a_sweeps_analysis_and_report_run_once_each(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    analyze, render = run_all.analyze, report.render_report

    def counted_analyze(*args: Any, **kwargs: Any) -> run_all.AnalysisSummary:
        calls.append("analyze")
        return analyze(*args, **kwargs)

    def counted_render(path: Path, descriptions: Mapping[str, str] | None = None) -> Path:
        calls.append("render")
        return render(path, descriptions)

    monkeypatch.setattr(run_all, "analyze", counted_analyze)
    monkeypatch.setattr(report, "render_report", counted_render)
    # What pipeline/sweep/execute.py calls at the end of a sweep: the study's analyze, once.
    path = analyze_and_report(run_dir, settings(["q_vs_j"]))
    assert calls == ["analyze", "render"]
    assert path == run_dir / "analysis" / "report.md"


def test_report_after_analyze_draws_without_analyzing_again(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["analyze", str(run_dir)]) == 0

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("report re-ran the analysis")

    monkeypatch.setattr(run_all, "analyze", refuse)
    assert main(["report", str(run_dir)]) == 0
    assert "seed 1, 10 resamples" in (run_dir / "analysis" / "report.md").read_text()
