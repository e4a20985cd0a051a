"""`grade --answer` given a FIFO or a device: one line, never a hang (issue 19 item 3)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.commands.fixture import main as fixture_main


def _refused(capsys: pytest.CaptureFixture[str], fixture: Path, answer: Path) -> str:
    assert main(["grade", "--fixture", str(fixture), "--answer", str(answer)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    return err[0]


@pytest.fixture
def fixture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "fx.json"
    assert fixture_main(["--scenario", "small", "--seed", "1", "--out", str(path)]) == 0
    capsys.readouterr()
    return path


def test_a_fifo_answer_is_refused_not_waited_on(
    tmp_path: Path, fixture: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(tmp_path / "answer.txt")
    assert "a FIFO, not a regular file" in _refused(capsys, fixture, tmp_path / "answer.txt")


def test_a_device_answer_is_refused(fixture: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "a device, not a regular file" in _refused(capsys, fixture, Path("/dev/zero"))
