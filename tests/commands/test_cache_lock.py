"""Issue 32 §3: `cache prune` and `cache clear` never run under a live sweep.

A run's own cache is covered by the run dir's session lock; a shared cache directory has its
own lock, held shared by every sweep that uses it. The refusal is one line naming the holder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.commands.start import resolve_start
from pipeline.store.run_lock import run_lock
from pipeline.sweep import claim
from pipeline.sweep.cache_lock import cache_shared
from pipeline.sweep.response_cache import ResponseCache

KEY = "ab" + "1" * 30
SWEEP = ["+panel=sim", "sim.configs=1", "arms=[j,q]", "repeats=2", "scenario=small"]


def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    cache = ResponseCache(run / "cache")
    cache.put(KEY, "chat", {"text": "x"})
    cache.close()
    return run


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.startswith("error: ")
    return err


@pytest.mark.parametrize("action", ["prune", "clear"])
def test_issue32_prune_or_clear_of_a_run_in_use_is_refused_naming_the_holder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    run = run_dir(tmp_path)
    with run_lock(run):  # a live sweep session on the run
        assert main(["cache", action, str(run)]) == 2
    line = one_error_line(capsys)
    assert f"run dir {run} in use by PID {os.getpid()}" in line
    assert ResponseCache(run / "cache").get(KEY) is not None  # nothing pruned or cleared


@pytest.mark.parametrize("action", ["prune", "clear"])
def test_issue32_prune_or_clear_of_a_shared_cache_in_use_is_refused_naming_the_holder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    shared = tmp_path / "shared"
    ResponseCache(shared).put(KEY, "chat", {"text": "x"})
    with cache_shared(shared):  # a sweep with cache.scope=shared on it
        assert main(["cache", action, "--dir", str(shared)]) == 2
    line = one_error_line(capsys)
    assert f"cache dir {shared} in use by PID {os.getpid()}" in line
    assert ResponseCache(shared).get(KEY) is not None
    assert main(["cache", action, "--dir", str(shared)]) == 0  # free again after the sweep


def test_issue32_a_killed_sweeps_registration_does_not_block_a_prune(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    ResponseCache(shared).put(KEY, "chat", {"text": "x"})
    (shared / "holders").mkdir()
    (shared / "holders" / "gone-1-deadbeef.json").write_text('{"pid": 1, "host": "gone"}')
    assert main(["cache", "prune", "--dir", str(shared)]) == 0
    assert not list((shared / "holders").iterdir())


def test_issue32_a_shared_cache_sweep_holds_its_cache_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = tmp_path / "shared"
    overrides = [*SWEEP, f"out_dir={tmp_path}", "cache.scope=shared", f"cache.dir={shared}"]
    with claim.claimed_session(resolve_start(overrides)):
        assert main(["cache", "clear", "--dir", str(shared)]) == 2
    assert "in use by PID" in one_error_line(capsys)
    assert main(["cache", "clear", "--dir", str(shared)]) == 0
