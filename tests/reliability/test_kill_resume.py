"""Kill/resume soak: SIGKILL the sweep's whole process group again and again, resume each time.

With `ray.address=local` the Ray instance (GCS, raylet, workers) belongs to the killed sweep,
so a kill takes Ray down with it, as a crash or an OOM kill would. Between rounds the harness
waits for every process of the round to exit and kills (and counts) any that outlive it.

Kill moments come from a seeded RNG. A round is killed either early (a random time after the
start, often before Ray is up or before the plan exists) or mid-work (a random delay after the
round committed its first new rows part). Round 0 always lives until its plan is written:
a sweep killed before planning has nothing to resume (it says so; see docs/reliability.md).
"""

from __future__ import annotations

import random
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.reliability.conftest import KILL_RESUME_SWEEP, SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness
from tests.reliability.tables import key_of, orphan_parts, read_every_part, temporaries, view

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ROUNDS = 10
SEED = 20260728
ROUND_TIMEOUT_S = 120.0
MID_WORK_ROUNDS = 5  # round 0 and four others; early kills cost seconds, mid-work ones wait
# for Ray to come up (15-25 s on the loaded 2-core machine)


@dataclass(frozen=True)
class Round:
    index: int
    mode: str  # early | mid_work
    killed_after_s: float
    exited_by_itself: bool
    rows_parts_before: int
    rows_parts_after: int
    leftovers: tuple[int, ...]  # pids alive 15 s after the kill (orphans of a Ray start-up)
    temporaries: int  # .tmp-* files the kill left behind (the next resume removes them)


def rows_parts(run_dir: Path | None) -> int:
    return len(list((run_dir / "rows").glob("[0-9]*.parquet"))) if run_dir else 0


def find_run_dir(out: Path) -> Path | None:
    found = sorted(p for p in out.iterdir() if p.is_dir())
    return found[0] if found else None


def wait_until(proc: subprocess.Popen[bytes], ready: Callable[[], bool], timeout_s: float) -> bool:
    """Poll `ready()` until true; False if the process exited first (or time ran out)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ready():
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    return False


def survivors(h: SweepHarness, grace_s: float) -> list[int]:
    """Marked processes still alive `grace_s` after a kill (not killed here)."""
    deadline = time.monotonic() + grace_s
    while h.marked_pids() and time.monotonic() < deadline:
        time.sleep(0.25)
    return h.marked_pids()


def round_modes(rng: random.Random) -> list[str]:
    """Round 0 works until its plan exists; the others are early or mid-work kills, shuffled."""
    rest = ["mid_work"] * (MID_WORK_ROUNDS - 1) + ["early"] * (ROUNDS - MID_WORK_ROUNDS)
    rng.shuffle(rest)
    return ["mid_work", *rest]


def one_round(
    h: SweepHarness,
    index: int,
    *,
    mode: str,
    out: Path,
    run_dir: Path | None,
    rng: random.Random,
) -> tuple[Round, Path | None]:
    overrides = [*KILL_RESUME_SWEEP, f"out_dir={out}"]
    if run_dir is not None:
        overrides = [f"resume={run_dir}"]
    before = rows_parts(run_dir)
    started = time.monotonic()
    proc = h.start(overrides, log=out.parent / f"round-{index}.log")
    if index == 0:  # live until the plan exists, whatever the mode
        wait_until(
            proc,
            lambda: (d := find_run_dir(out)) is not None and (d / "plan.parquet").exists(),
            ROUND_TIMEOUT_S,
        )
        run_dir = find_run_dir(out)
    if mode == "early":
        time.sleep(rng.uniform(0.2, 6.0))
    else:
        wait_until(proc, lambda: rows_parts(run_dir) > before, ROUND_TIMEOUT_S)
        time.sleep(rng.uniform(0.0, 2.5))
    exited = proc.poll() is not None
    h.kill(proc)
    leftovers = survivors(h, grace_s=15.0)  # left alive: the next resume must stop them
    record = Round(
        index,
        mode,
        round(time.monotonic() - started, 2),
        exited,
        before,
        rows_parts(run_dir),
        tuple(leftovers),
        len(temporaries(run_dir)) if run_dir else 0,
    )
    return record, run_dir


def test_repeated_sigkill_and_resume_ends_with_the_unbroken_runs_keys(
    harness: SweepHarness, unbroken_run: Path, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    run_dir: Path | None = None
    rounds = []
    out = tmp_path / "out"
    out.mkdir()
    for index, mode in enumerate(round_modes(rng)):
        record, run_dir = one_round(harness, index, mode=mode, out=out, run_dir=run_dir, rng=rng)
        rounds.append(record)
        print(record)
        assert run_dir is not None, "round 0 never wrote its plan"
    killed_before = len(harness.leftovers_killed)
    final = harness.run([f"resume={run_dir}"], timeout_s=SWEEP_TIMEOUT_S)
    assert final.returncode == 0, final.stderr[-3000:]
    assert run_dir is not None
    print(
        f"final resume: {final.wall_s:.1f}s; rounds that committed rows: "
        f"{sum(r.rows_parts_after > r.rows_parts_before for r in rounds)}/{ROUNDS}"
    )

    # Ray ties its processes to the driver, but a kill during Ray's start-up can orphan a few.
    # Every resume stops the orphans of the run's earlier sessions, so none may still be alive
    # once the final resume has run, and the final (unkilled) sweep itself leaves none.
    orphans = {pid for r in rounds for pid in r.leftovers}
    reaped_after_final = set(harness.leftovers_killed[killed_before:])
    assert not orphans & reaped_after_final, "a resume left an earlier session's orphans alive"
    assert not reaped_after_final, "the final sweep left processes behind"
    assert sum(r.rows_parts_after > r.rows_parts_before for r in rounds) >= 3

    resumed, reference = view(run_dir), view(unbroken_run)
    assert resumed.manifest.status == "completed"
    duplicates = [k for k, n in resumed.attempts().items() if n > 1]
    assert duplicates == []
    assert set(resumed.finals()) == set(reference.finals()) == {key_of(p) for p in resumed.plan}
    assert all(r["valid"] for r in resumed.finals().values())
    # Without faults the sim is deterministic: a key that ran once (attempt 0) in both runs sent
    # the same requests, so its outcome matches too. (A re-attempt has another seed.)
    outcome = ("valid", "recall", "checks_passed")
    same = [
        k
        for k, r in resumed.finals().items()
        if r["attempt"] == 0 and reference.finals()[k]["attempt"] == 0
    ]
    assert len(same) >= len(resumed.plan) // 2
    for key in same:
        got, want = resumed.finals()[key], reference.finals()[key]
        assert tuple(got[c] for c in outcome) == tuple(want[c] for c in outcome), key

    parts = read_every_part(run_dir)  # every part read in full: a torn one raises
    assert temporaries(run_dir) == []
    assert orphan_parts(run_dir) == []
    row_ids = [r["row_id"] for r in parts["rows"]]
    assert len(row_ids) == len(set(row_ids))
    assert {c["row_id"] for c in parts["checks"]} <= set(row_ids)
    assert {f["row_id"] for f in parts["folds"]} <= set(row_ids)
    check_keys = [(c["row_id"], c["label"]) for c in parts["checks"]]
    assert len(check_keys) == len(set(check_keys))
    fold_keys = [(f["row_id"], f["fold_index"]) for f in parts["folds"]]
    assert len(fold_keys) == len(set(fold_keys))
    event_seqs = [e["seq"] for e in parts["events"]]
    assert len(event_seqs) == len(set(event_seqs))
