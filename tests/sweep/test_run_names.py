"""Issue 13: two sweeps started in the same second get different run directories, still
sorted by start time (pipeline/sweep/run_names.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from pipeline.commands.start import prepare
from pipeline.sweep import run_names
from pipeline.sweep.run import prepare_run_dir

SWEEP = ["+panel=sim", "sim.configs=1", "arms=[j,q]", "repeats=2", "scenario=small"]


def _freeze(monkeypatch: pytest.MonkeyPatch, at: datetime) -> None:
    monkeypatch.setattr(run_names, "utc_now", lambda: at)


def test_two_sweeps_in_the_same_second_get_different_run_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _freeze(monkeypatch, datetime(2026, 12, 1, 20, 17, 50, tzinfo=UTC))
    first = prepare([*SWEEP, f"out_dir={tmp_path}"])
    second = prepare([*SWEEP, f"out_dir={tmp_path}"])
    assert first.run_dir == second.run_dir  # same second, same panel and inputs: same name
    claimed = [prepare_run_dir(first).run_dir, prepare_run_dir(second).run_dir]
    assert claimed[0] != claimed[1]
    assert all(d.is_dir() and (d / "fixture.json").is_file() for d in claimed)
    assert claimed[0] == first.run_dir
    assert claimed[1].name == f"{first.run_dir.name}-2"


def test_run_dir_names_sort_by_start_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    claimed = []
    for second in (50, 50, 50, 51):
        _freeze(monkeypatch, datetime(2026, 12, 1, 20, 17, second, tzinfo=UTC))
        claimed.append(prepare_run_dir(prepare([*SWEEP, f"out_dir={tmp_path}"])).run_dir)
    assert len(set(claimed)) == 4
    assert sorted(claimed, key=lambda d: d.name) == claimed


def test_claim_run_dir_never_reuses_an_existing_directory(tmp_path: Path) -> None:
    taken = tmp_path / "20261201T201750-sim-small-abc"
    taken.mkdir()
    (taken / "manifest.json").write_text("{}", encoding="utf-8")
    got = run_names.claim_run_dir(taken)
    assert got == tmp_path / "20261201T201750-sim-small-abc-2"
    assert (taken / "manifest.json").read_text(encoding="utf-8") == "{}"
