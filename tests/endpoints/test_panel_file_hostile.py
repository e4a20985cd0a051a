"""A panel file that is not a small regular YAML file: one line, never a hang (issue 19)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.endpoints import panels
from pipeline.endpoints.panels import read_panel_file
from pipeline.usererror import UserError


def _refusal(path: Path) -> str:
    with pytest.raises(UserError) as refused:
        read_panel_file(path)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(f"endpoint.panel_file {str(path)!r}")
    return message


def test_a_fifo_panel_file_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "panel.yaml")
    assert "a FIFO, not a regular file" in _refusal(tmp_path / "panel.yaml")


def test_a_directory_or_device_panel_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "panel.yaml").mkdir()
    assert "a directory" in _refusal(tmp_path / "panel.yaml")
    assert "a device" in _refusal(Path("/dev/zero"))


def test_a_huge_panel_file_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(panels, "PANEL_FILE_MAX_BYTES", 100)
    (tmp_path / "panel.yaml").write_text("configs: []\n" + "#" * 200)
    assert "over the 100 bytes cap" in _refusal(tmp_path / "panel.yaml")


def test_a_deeply_nested_panel_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "panel.yaml").write_text("configs: " + "[" * 50_000)
    with pytest.raises(UserError, match=r"nested too deeply|not YAML"):
        read_panel_file(tmp_path / "panel.yaml")
