"""Issue 32 §21: `analyze` on a run still being written says so, in one line and in the
report's first lines.

Before, it exited 0 with a partial analysis and no word of it. Decision: it does not wait for
the lock (a sweep can hold it for hours); it analyses what is there and says the analysis is
partial and whose session is still writing. A sweep's own end-of-run analysis, which runs
under its own lock, is not flagged.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.store.run_lock import run_lock
from tests.jobs.jobs_testdata import row, write_run

MANIFEST = {"config": {"analysis": {"contrasts": ["q_vs_j"], "bootstrap": {"resamples": 20}}}}
HOLD = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from pipeline.store.run_lock import run_lock\n"
    "with run_lock(Path(sys.argv[1])):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(60)\n"
)


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    rows = [row("A", arm, rep, checks) for rep in (0, 1) for arm, checks in (("j", 0), ("q", 14))]
    checks = [{"row_id": r["row_id"], "label": "x", "passed": False} for r in rows]
    return write_run(tmp_path / "run", rows, checks=checks, manifest=MANIFEST, parts=2)


@pytest.fixture
def live_session(run_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the run dir's lock, as a live sweep does."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(run_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=10)


def test_analyze_of_a_run_still_being_written_says_so_in_one_line_and_in_the_report(
    run_dir: Path, live_session: subprocess.Popen[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(f"analyze: {run_dir} is still being written by PID {live_session.pid}")
    assert "partial" in err
    head = (run_dir / "analysis" / "report.md").read_text(encoding="utf-8").splitlines()[:4]
    assert any(line.startswith("**Partial: this run was still being written") for line in head), (
        head
    )


def test_analyze_of_a_finished_run_says_nothing_of_it(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(run_dir)]) == 0
    assert capsys.readouterr().err == ""
    assert "Partial" not in (run_dir / "analysis" / "report.md").read_text(encoding="utf-8")


def test_the_sweeps_own_analysis_under_its_own_lock_is_not_flagged(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with run_lock(run_dir):
        assert main(["analyze", str(run_dir)]) == 0
    assert capsys.readouterr().err == ""
    assert "Partial" not in (run_dir / "analysis" / "report.md").read_text(encoding="utf-8")
