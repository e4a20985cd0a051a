"""Issue 13: a binary `endpoint.panel_file` is a one-line error naming the file, not a
UnicodeDecodeError traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli import main as cli_main


def test_binary_panel_file_is_a_one_line_error_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "panel.yaml"
    file.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe\x00\x01")
    code = cli_main(["panel", "arms=[j]", "+panel=endpoint", f"endpoint.panel_file={file}"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert str(file) in err and "UTF-8" in err
    assert "Traceback" not in err
