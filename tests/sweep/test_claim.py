"""A session claims its run dir before reading it (issue 19 item 1; pipeline/sweep/claim.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.commands.start import resolve_start
from pipeline.store.run_lock import LOCK_FILE, RunDirInUse, run_lock
from pipeline.sweep import claim

SWEEP = ["+panel=sim", "sim.configs=1", "arms=[j,q]", "repeats=2", "scenario=small"]


def test_a_resume_is_refused_before_prepare_reads_the_run_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[object] = []
    monkeypatch.setattr(claim, "prepare", read.append)
    with run_lock(tmp_path), pytest.raises(RunDirInUse), claim.claimed_session(
        [f"resume={tmp_path}"], resolve_start
    ):
        pass
    assert read == []  # nothing read, nothing cleaned


def test_a_new_run_dir_is_locked_for_the_session_and_released_after(tmp_path: Path) -> None:
    with claim.claimed_session([*SWEEP, f"out_dir={tmp_path}"], resolve_start) as p:
        assert (p.run_dir / LOCK_FILE).read_text() != ""
        with pytest.raises(RunDirInUse), run_lock(p.run_dir):
            pass
    assert (p.run_dir / LOCK_FILE).read_text() == ""
