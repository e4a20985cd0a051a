"""`python -m pipeline cache`: path, list, prune and clear, of a run's cache or the shared one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.sweep.response_cache import ResponseCache


def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    ResponseCache(run / "cache").put("ab" + "1" * 30, "chat", {"text": "x"})
    return run


def test_path_and_list_of_a_runs_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_dir(tmp_path)
    assert main(["cache", "path", str(run)]) == 0
    assert capsys.readouterr().out.strip() == str(run / "cache")
    assert main(["cache", "list", str(run)]) == 0
    assert "1 entry" in capsys.readouterr().out


def test_clear_removes_every_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_dir(tmp_path)
    assert main(["cache", "clear", str(run)]) == 0
    assert "removed 1 entry" in capsys.readouterr().out
    assert ResponseCache(run / "cache").stats().entries == 0


def test_prune_of_the_shared_cache_keeps_fresh_entries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FOLDSWEEP_CACHE", str(tmp_path))
    old = ResponseCache(tmp_path / "responses", clock=lambda: time.time() - 8 * 86400)
    old.put("cd" + "2" * 30, "chat", {"text": "x"})
    old.close()
    fresh = ResponseCache(tmp_path / "responses")
    fresh.put("ef" + "3" * 30, "chat", {"text": "y"})
    fresh.close()
    assert main(["cache", "prune"]) == 0
    assert "dropped 1" in capsys.readouterr().out
    left = ResponseCache(tmp_path / "responses")
    assert left.stats().entries == 1 and left.get("ef" + "3" * 30) is not None


def test_a_directory_that_is_not_a_run_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cache", "list", str(tmp_path)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == f"error: {tmp_path} is not a run directory (no manifest.json)"
    )


def test_a_bad_ttl_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "list", "--ttl", "soon"]) == 2
    assert "--ttl must be a positive duration" in capsys.readouterr().err
