"""Issue 13: a report is never rendered from analysis outputs older than the tables they came
from, and a damaged part is named with its fix by analyze, report and query
(pipeline/store/analysis_inputs.py; the generic command path, so it holds for every study)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.store.analysis_inputs import ANALYSIS_DIR, INPUTS_FILE
from tests.jobs.jobs_testdata import row, write_run

MANIFEST = {"config": {"analysis": {"contrasts": ["q_vs_j"], "bootstrap": {"resamples": 20}}}}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    rows = [row("A", arm, rep, checks) for rep in (0, 1) for arm, checks in (("j", 0), ("q", 14))]
    checks = [{"row_id": r["row_id"], "label": "x", "passed": False} for r in rows]
    return write_run(tmp_path / "run", rows, checks=checks, manifest=MANIFEST, parts=2)


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "Traceback" not in err
    return err


def _rows_parts(run_dir: Path) -> list[Path]:
    return sorted((run_dir / "rows").glob("*.parquet"))


def test_analyze_records_a_fingerprint_of_every_part_it_read(run_dir: Path) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    record = json.loads((run_dir / ANALYSIS_DIR / INPUTS_FILE).read_text(encoding="utf-8"))
    assert set(record["parts"]) == {
        "rows/part-0000.parquet",
        "rows/part-0001.parquet",
        "checks/part-0000.parquet",
    }
    first = record["parts"]["rows/part-0000.parquet"]
    assert first["size"] == (run_dir / "rows" / "part-0000.parquet").stat().st_size
    assert len(first["sha256"]) == 64


def test_report_after_analyze_renders(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    capsys.readouterr()
    assert main(["report", str(run_dir)]) == 0
    assert capsys.readouterr().out.strip() == str(run_dir / ANALYSIS_DIR / "report.md")


def test_report_refuses_when_a_part_was_added_since_analyze(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    report = run_dir / ANALYSIS_DIR / "report.md"
    before = report.read_bytes()
    shutil.copy(_rows_parts(run_dir)[0], run_dir / "rows" / "part-0002.parquet")
    capsys.readouterr()
    assert main(["report", str(run_dir)]) == 2
    err = _one_line_error(capsys)
    assert "older than the tables" in err and "rows/part-0002.parquet" in err
    assert f"python -m pipeline analyze {run_dir}" in err
    assert report.read_bytes() == before  # nothing re-rendered from the stale outputs


def test_report_refuses_when_a_part_changed_in_place(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    first, second = _rows_parts(run_dir)
    shutil.copy(second, first)  # another valid part's bytes under the same name
    capsys.readouterr()
    assert main(["report", str(run_dir)]) == 2
    assert "rows/part-0000.parquet" in _one_line_error(capsys)


def test_report_is_current_again_after_analyze(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    (run_dir / "rows" / "part-0001.parquet").unlink()
    assert main(["report", str(run_dir)]) == 2
    assert main(["analyze", str(run_dir)]) == 0
    assert main(["report", str(run_dir)]) == 0


def test_new_mtimes_with_the_same_bytes_are_still_current(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    for part in _rows_parts(run_dir):  # as a copy of the run dir without -p would leave them
        os.utime(part, ns=(1, 1))
    assert main(["report", str(run_dir)]) == 0


def test_report_of_a_run_analyzed_without_a_record_analyzes_it_first(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    (run_dir / ANALYSIS_DIR / INPUTS_FILE).unlink()
    assert main(["report", str(run_dir)]) == 0
    assert (run_dir / ANALYSIS_DIR / INPUTS_FILE).is_file()


@pytest.mark.parametrize("command", ["analyze", "report", "query"])
def test_a_truncated_part_is_named_with_its_fix(
    run_dir: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    part = _rows_parts(run_dir)[0]
    os.truncate(part, 100)  # as `truncate -s 100 RUN/rows/*.parquet`
    capsys.readouterr()
    argv = [command, str(run_dir)] + (["select count(*) from rows"] if command == "query" else [])
    assert main(argv) == 2
    err = _one_line_error(capsys)
    assert str(part) in err and "is corrupt" in err
    assert f"resume={run_dir}" in err


def _damage_a_data_page(part: Path) -> None:
    """Overwrite bytes inside the first column chunk, leaving the footer intact."""
    import pyarrow.parquet as pq

    column = pq.read_metadata(part).row_group(0).column(0)
    start = column.data_page_offset
    data = bytearray(part.read_bytes())
    data[start : start + column.total_compressed_size] = b"\xff" * column.total_compressed_size
    part.write_bytes(bytes(data))


@pytest.mark.parametrize("command", ["analyze", "query"])
def test_a_part_damaged_behind_its_footer_is_named(
    run_dir: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    part = _rows_parts(run_dir)[0]
    _damage_a_data_page(part)
    argv = [command, str(run_dir)] + (["select * from rows"] if command == "query" else [])
    assert main(argv) == 2
    err = _one_line_error(capsys)
    assert str(part) in err and "unreadable data" in err
