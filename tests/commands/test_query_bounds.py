"""`query` is bounded in time and memory and says so in one line (issue 19 items 4 and 10)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.commands.query import print_table, run_query
from pipeline.usererror import UserError
from tests.jobs.jobs_testdata import row, write_run

HUGE = "select * from generate_series(1, 40000) a cross join generate_series(1, 40000) b"
# about 30 s of CPU on the 2-core machine in under 2.5 GB (string building over 144M pairs)
SLOW = (
    "select sum(length(concat(cast(a.generate_series as varchar), 'x', "
    "cast(b.generate_series as varchar)))) as n "
    "from generate_series(1, 12000) a cross join generate_series(1, 12000) b"
)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", [row("A", "j", 0, 7), row("A", "q", 0, 14)], manifest={})


def _one_line_error(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.strip()]
    assert len(lines) == 1, captured.err[-3000:]
    assert lines[0].startswith("error: ")
    for needle in needles:
        assert needle in lines[0]
    assert captured.out == ""  # no half table
    return lines[0]


def test_a_query_past_its_time_limit_is_stopped_in_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    argv = ["query", str(run_dir), SLOW, "--timeout-s", "2", "--max-memory-mb", "2500"]
    code = main(argv)
    assert code == 2
    assert time.monotonic() - started < 30
    _one_line_error(capsys, "ran past its 2 s limit", "--timeout-s")


def test_a_query_past_its_memory_limit_is_stopped_in_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["query", str(run_dir), HUGE, "--format", "csv", "--max-memory-mb", "1400"])
    assert code == 2
    _one_line_error(capsys, "more than its 1400 MB memory limit", "--max-memory-mb")


def test_a_bounded_query_still_answers_and_its_errors_stay_one_line(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["query", str(run_dir), "select count(*) as n from rows", "--format", "csv"]) == 0
    assert capsys.readouterr().out == "n\n2\n"
    assert main(["query", str(run_dir), "select * from nowhere"]) == 2
    _one_line_error(capsys, "nowhere")


@pytest.mark.parametrize("sql", ["", "   ", "-- only a comment", "/* nothing */"])
def test_an_empty_query_says_empty_query(run_dir: Path, sql: str) -> None:
    with pytest.raises(UserError, match=r"^empty query"):
        run_query(run_dir, sql)


def test_a_wide_table_is_wrapped_with_every_header_whole(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    result = run_query(run_dir, "select * from rows")
    assert len(result.columns) > 40
    print_table(result, sys.stdout)
    out = capsys.readouterr().out
    assert "do not fit 120 characters" in out and "--format csv" in out
    for name in result.columns:
        assert f" {name} " in out, name
    assert max(len(line) for line in out.splitlines()) <= 120
