"""A bad out_dir is one line and exit 2, before anything starts (issue 19 item 5)."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from pipeline.cli import main

SWEEP = ["sweep", "+panel=sim", "sim.configs=1", "arms=[j,q]", "repeats=2", "scenario=small"]


def _refused(capsys: pytest.CaptureFixture[str], out_dir: Path | str) -> str:
    assert main([*SWEEP, f"out_dir={out_dir}"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    assert err[0].startswith(f"error: out_dir {str(out_dir)!r}: cannot create a run directory")
    return err[0]


def test_an_out_dir_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    assert "is a file" in _refused(capsys, tmp_path / "file")


def test_an_out_dir_under_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    assert "is a file" in _refused(capsys, tmp_path / "file" / "runs")


@pytest.mark.parametrize("root", ["/proc", "/sys"])
def test_an_out_dir_under_proc_or_sys(root: str, capsys: pytest.CaptureFixture[str]) -> None:
    _refused(capsys, f"{root}/foldsweep-runs")


def test_an_out_dir_on_a_read_only_filesystem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def read_only(self: Path, *args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "mkdir", read_only)
    assert "Read-only file system" in _refused(capsys, tmp_path / "ro")
