"""A disk that fills while a figure is saved: one line naming the file (issue 19 item 6)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from pipeline.cli import main
from tests.jobs.jobs_testdata import row, write_run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    rows = [row("A", arm, rep, checks) for rep in (0, 1) for arm, checks in (("j", 0), ("q", 14))]
    checks = [{"row_id": r["row_id"], "label": "x", "passed": False} for r in rows]
    manifest = {"config": {"analysis": {"bootstrap": {"seed": 3, "resamples": 20}}}}
    return write_run(tmp_path / "run", rows, checks=checks, manifest=manifest)


def test_a_full_disk_while_a_figure_is_saved_is_one_line_and_analyze_finishes_later(
    run_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rows_before = sorted(p.read_bytes() for p in (run_dir / "rows").glob("*.parquet"))

    def full(self: Figure, fname: str, *args: object, **kwargs: object) -> None:
        Path(fname).write_bytes(b"\x89PNG half")  # a partial write, then the disk is full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", full)
    assert main(["analyze", str(run_dir)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    line = err[0]
    assert line.startswith("error: could not write '") and ".png' (No space left on device)" in line
    assert f"the rows are safe in {str(run_dir)!r}" in line
    assert f"python -m pipeline analyze {run_dir}` finishes the job" in line
    assert list((run_dir / "analysis").rglob(".*.tmp-*")) == []  # no half-written temporary
    assert sorted(p.read_bytes() for p in (run_dir / "rows").glob("*.parquet")) == rows_before

    monkeypatch.undo()  # space freed: analyze finishes the job
    assert main(["analyze", str(run_dir)]) == 0
    assert list((run_dir / "analysis").glob("*.png"))
