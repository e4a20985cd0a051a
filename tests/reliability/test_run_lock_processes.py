"""Two real sweep processes on one run directory (issue 19 item 1): one is refused in a line.

Before the lock, a resume started while its sweep still ran stopped the live sweep's Ray
processes as "orphans", and both sessions dispatched the owed units: 16 rows for 12 units, a
`completed` manifest, and every later resume refused with "two rows share UnitKey". Two
resumes started at once after a kill did the same.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from tests.reliability.harness import SweepHarness
from tests.reliability.tables import key_of, read_every_part, view
from tests.reliability.test_kill_resume import find_run_dir, rows_parts, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.ray]

SWEEP = (
    "+panel=sim",
    "sim.configs=2",
    "arms=[j,q]",
    "repeats=3",
    "sim.latency_s=0.5",
    "sim.concurrency=1",
)
UNITS = 2 * 2 * 3
TIMEOUT_S = 240.0


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    _, err = proc.communicate(timeout=TIMEOUT_S)
    return proc.returncode, err.decode(errors="replace")


def _assert_intact(run_dir: Path) -> None:
    """Every planned unit has one final row, no (key, attempt) twice, manifest completed."""
    run = view(run_dir)
    assert run.manifest.status == "completed"
    assert [k for k, n in run.attempts().items() if n > 1] == []
    assert set(run.finals()) == {key_of(p) for p in run.plan}
    assert len(run.plan) == UNITS
    row_ids = [r["row_id"] for r in read_every_part(run_dir)["rows"]]
    assert len(row_ids) == len(set(row_ids))


def _assert_refused(code: int, stderr: str, holder_pid: int | None = None) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2, stderr[-3000:]
    assert len(lines) == 1, stderr[-3000:]
    assert "in use by PID" in lines[0] and "wait for it or stop it" in lines[0]
    if holder_pid is not None:
        assert f"PID {holder_pid} " in lines[0]


def test_a_resume_while_the_sweep_runs_is_refused_and_the_sweep_completes(
    harness: SweepHarness, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    sweep = harness.start([*SWEEP, f"out_dir={out}"])
    assert wait_until(
        sweep,
        lambda: out.exists() and (d := find_run_dir(out)) is not None and rows_parts(d) > 0,
        TIMEOUT_S,
    ), "the sweep never committed a row"
    run_dir = find_run_dir(out)
    assert run_dir is not None
    # started, not run: `harness.run` reaps every marked process, the live sweep too
    code, stderr = _finish(harness.start([f"resume={run_dir}"]))
    assert sweep.poll() is None, "the sweep ended before the resume could collide with it"
    _assert_refused(code, stderr, holder_pid=sweep.pid)
    code, stderr = _finish(sweep)
    assert code == 0, stderr[-3000:]
    _assert_intact(run_dir)
    later = harness.run([f"resume={run_dir}"], timeout_s=TIMEOUT_S)
    assert later.returncode == 0, later.stderr[-3000:]
    _assert_intact(run_dir)


def test_two_resumes_at_once_after_a_kill_one_is_refused(
    harness: SweepHarness, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    sweep = harness.start([*SWEEP, f"out_dir={out}"])
    assert wait_until(
        sweep,
        lambda: out.exists() and (d := find_run_dir(out)) is not None and rows_parts(d) > 0,
        TIMEOUT_S,
    )
    run_dir = find_run_dir(out)
    assert run_dir is not None
    harness.kill(sweep)
    harness.reap(grace_s=15.0)
    first = harness.start([f"resume={run_dir}"])
    time.sleep(0.2)
    second = harness.start([f"resume={run_dir}"])
    ended = [_finish(first), _finish(second)]
    harness.reap(grace_s=10.0)
    codes = sorted(code for code, _ in ended)
    assert codes == [0, 2], [err[-2000:] for _, err in ended]
    refused = next(err for code, err in ended if code == 2)
    _assert_refused(2, refused)
    winner = next(err for code, err in ended if code == 0)
    assert "took over the stale lock" in winner
    _assert_intact(run_dir)
    takeovers = view(run_dir).manifest.extra["lock_takeovers"]
    assert [t["stale"]["pid"] for t in takeovers] == [sweep.pid]
