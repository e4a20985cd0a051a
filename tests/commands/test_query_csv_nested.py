"""Issue 13: `query --format csv` over a nested column is one line naming the column and the
way out, not a Polars traceback; scalar results still write CSV."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli import main
from tests.jobs.jobs_testdata import row, write_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", [row("A", "j", 0, 7), row("A", "q", 0, 14)], manifest={})


def test_csv_over_a_list_column_names_it_and_the_fix(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sql = "select arm, [1, 2] as pair from rows"
    code = main(["query", str(run_dir), sql, "--format", "csv"])
    captured = capsys.readouterr()
    assert code == 2
    assert captured.err.count("\n") == 1
    assert "pair (List(Int64))" in captured.err
    assert "--format json" in captured.err and "unnest(pair)" in captured.err
    assert captured.out == ""


def test_the_suggested_unnest_writes_csv(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["query", str(run_dir), "select unnest([1, 2]) as pair", "--format", "csv"])
    assert code == 0
    assert capsys.readouterr().out.split() == ["pair", "1", "2"]


def test_json_still_writes_the_nested_column(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["query", str(run_dir), "select [1, 2] as pair", "--format", "json"])
    assert code == 0
    assert '"pair":[1,2]' in capsys.readouterr().out
