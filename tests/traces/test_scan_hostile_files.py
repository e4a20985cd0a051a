"""`traces scan` and `traces classify` on files a careless or hostile user leaves (issue 32,
items 11 and 12).

Under a folder, a file that cannot be scanned is skipped in one `warning: skipped` line naming
it (its repr) and why, and the rest is scanned; a file named on the command line that cannot be
scanned is one `error:` line, exit 2. The size cap is set low here to stand in for the 192 MB
one-line trace that reached 3.36 GB before a MemoryError.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pipeline.cli import main

GOOD = '{"id": "run1/t1", "text": "Actually the port is 30001."}\n'


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    (folder / "good.jsonl").write_text(GOOD, encoding="utf-8")
    return folder


def _skips(err: str) -> dict[str, str]:
    """`warning: skipped 'PATH': REASON` lines as {file name: reason}; every line is one."""
    found = {}
    for line in err.splitlines():
        assert line.startswith("warning: skipped '"), line
        path, reason = line.removeprefix("warning: skipped ").split(": ", 1)
        found[Path(path.strip("'")).name] = reason
    return found


def _scan_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:  # type: ignore[type-arg]
    assert main(["traces", "scan", *argv, "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_issue_32_a_trace_file_over_the_cap_is_skipped_unread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _folder(tmp_path)
    (folder / "huge.jsonl").write_text(
        '{"id": "h", "text": "' + "x" * 20_000 + '"}\n', encoding="utf-8"
    )
    read: list[int] = []
    real_read = os.read

    def counted_read(fd: int, n: int) -> bytes:
        read.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", counted_read)
    out, err = _scan_json([str(folder), "--max-file-mb", "0.01"], capsys)
    assert (out["traces"], out["files"]) == (1, 1)
    assert len(read) == 2  # good.jsonl only (a chunk, then end of file): huge was never read
    reason = (
        "20024 bytes, over the 10485 bytes cap (traces scan --max-file-mb); raise it to read it"
    )
    assert _skips(err) == {"huge.jsonl": reason}
    assert out["files_skipped"] == [{"path": str(folder / "huge.jsonl"), "reason": reason}]


def test_issue_32_the_scan_cap_defaults_to_the_toolout_cap() -> None:
    from pipeline.commands.traces import _scan_parser
    from pipeline.toolout.config import ToolOutConfig

    assert _scan_parser().parse_args(["x"]).max_file_mb == ToolOutConfig.max_file_mb == 64.0


def test_issue_32_a_named_file_over_the_cap_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "huge.jsonl"
    path.write_text('{"id": "h", "text": "' + "x" * 20_000 + '"}\n', encoding="utf-8")
    assert main(["traces", "scan", str(path), "--max-file-mb", "0.01"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "over the 10485 bytes cap (traces scan --max-file-mb)" in err


def test_issue_32_a_fifo_a_device_and_loops_are_each_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _folder(tmp_path)
    os.mkfifo(folder / "fifo.jsonl")  # reading it would block forever
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    (folder / "loop.jsonl").symlink_to(folder / "loop.jsonl")
    (folder / "a.json").symlink_to(folder / "b.json")
    (folder / "b.json").symlink_to(folder / "a.json")
    out, err = _scan_json([str(folder)], capsys)
    assert (out["traces"], out["files"]) == (1, 1)
    assert _skips(err) == {
        "a.json": "a symlink loop",
        "b.json": "a symlink loop",
        "fifo.jsonl": "a FIFO, not a regular file",
        "loop.jsonl": "a symlink loop",
        "zero.jsonl": "a device, not a regular file",
    }


@pytest.mark.parametrize(
    ("name", "reason"),
    [("fifo.jsonl", "a FIFO, not a regular file"), ("loop.jsonl", "a symlink loop")],
)
def test_issue_32_a_named_fifo_or_loop_is_one_line_saying_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, reason: str
) -> None:
    path = tmp_path / name
    if name == "fifo.jsonl":
        os.mkfifo(path)
    else:
        path.symlink_to(path)
    assert main(["traces", "scan", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and reason in err


def test_issue_32_an_unrecognised_json_is_skipped_and_the_rest_is_scanned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _folder(tmp_path)
    (folder / "results.json").write_text('{"accuracy": 0.5}', encoding="utf-8")
    (folder / "broken.jsonl").write_bytes(b'{"id": "a", "text": "\xff"}\n')
    out, err = _scan_json([str(folder)], capsys)
    assert (out["traces"], out["files"]) == (1, 1)
    skips = _skips(err)
    assert set(skips) == {"results.json", "broken.jsonl"}
    assert skips["results.json"].startswith("not a known trace file")
    assert skips["broken.jsonl"].startswith("line 1: not UTF-8 text")


def test_issue_32_a_folder_with_nothing_readable_is_one_error_after_its_skips(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "results.json").write_text('{"accuracy": 0.5}', encoding="utf-8")
    assert main(["traces", "scan", str(folder)]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and lines[0].startswith("warning: skipped ")
    assert lines[1] == "error: traces scan: no readable trace file; see the 1 skipped above"


def test_issue_32_classify_of_a_file_that_is_not_a_chat_template_is_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    readme = Path(__file__).resolve().parents[2] / "README.md"
    assert main(["traces", "classify", str(readme)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert "README.md" in captured.err and "not a chat template" in captured.err
