"""A session claims its run dir before reading it (issue 19 item 1; pipeline/sweep/claim.py).

The entry point (pipeline.commands.start.claimed_start) locks a resumed run dir before it reads
its manifest and hands the held lock down; the engine locks a new run's directory itself."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest

from pipeline.commands.start import claimed_start, resolve_start
from pipeline.store import manifest as manifest_module
from pipeline.store.manifest import Manifest
from pipeline.store.reader import RunDirError
from pipeline.store.run_lock import LOCK_FILE, RunDirInUse, run_lock
from pipeline.sweep import claim

SWEEP = ["+panel=sim", "sim.configs=1", "arms=[j,q]", "repeats=2", "scenario=small"]


def test_a_resume_is_refused_before_prepare_reads_the_run_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read: list[object] = []
    monkeypatch.setattr(claim, "prepare", read.append)
    monkeypatch.setattr(manifest_module, "load_manifest", read.append)
    with run_lock(tmp_path), pytest.raises(RunDirInUse), claimed_start([f"resume={tmp_path}"]):
        pass
    assert read == []  # nothing read, nothing cleaned


def test_a_resumed_manifest_is_read_under_this_session_s_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    holders: list[int] = []
    real = manifest_module.load_manifest

    def reading(run_dir: Path) -> Manifest:
        holders.append(json.loads((run_dir / LOCK_FILE).read_text())["pid"])
        return real(run_dir)

    monkeypatch.setattr(manifest_module, "load_manifest", reading)
    with pytest.raises(RunDirError), claimed_start([f"resume={tmp_path}"]):
        pass  # no manifest.json: refused, once read under the lock
    assert holders == [os.getpid()]
    assert (tmp_path / LOCK_FILE).read_text() == ""  # released with the refusal


def test_the_engine_refuses_a_resume_that_does_not_hold_its_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prepared: list[object] = []
    monkeypatch.setattr(claim, "prepare", prepared.append)
    start = dataclasses.replace(resolve_start([*SWEEP, f"out_dir={tmp_path}"]), resume_dir=tmp_path)
    with pytest.raises(ValueError, match="without its lock"), claim.claimed_session(start):
        pass
    assert prepared == []


def test_a_new_run_dir_is_locked_for_the_session_and_released_after(tmp_path: Path) -> None:
    with claim.claimed_session(resolve_start([*SWEEP, f"out_dir={tmp_path}"])) as p:
        assert (p.run_dir / LOCK_FILE).read_text() != ""
        with pytest.raises(RunDirInUse), run_lock(p.run_dir):
            pass
    assert (p.run_dir / LOCK_FILE).read_text() == ""
