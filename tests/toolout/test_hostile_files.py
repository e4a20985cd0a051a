"""Transcript files a careless or hostile user leaves (issue 19 items 2, 3 and 10).

Each gets one line naming the file (its repr, once) and why; the other transcripts still run.
The size caps are set low here to stand in for a 1 GB line or a 300 MB tool output.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline.config.strict import ConfigError
from pipeline.studies.toolout import read_corpus
from pipeline.toolout.config import toolout_config
from pipeline.toolout.importers import import_file, within_output_cap
from pipeline.toolout.importers import jsonl as jsonl_importer

GOOD = (
    b'{"role": "user", "content": "Fix it."}\n'
    b'{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", '
    b'"function": {"name": "read_file", "arguments": "{}"}}]}\n'
    b'{"role": "tool", "tool_call_id": "c1", "content": "def f(): pass"}\n'
    b'{"role": "assistant", "content": "Done."}\n'
)
DEEP = b"[" * 200_000

# one source per importer, as detect() names them
SOURCES = {
    "swe-agent": "swe-agent/x.traj",
    "mini-swe-agent": "mini-swe-agent/x.traj.json",
    "openhands": "openhands/x.json",
    "openhands-jsonl": "openhands/x.jsonl",
    "tau-bench": "tau-bench/x.json",
    "jsonl": "x.jsonl",
}


@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
def test_a_deeply_nested_json_is_one_problem_in_every_importer(source: str) -> None:
    outcome = import_file(DEEP, source)
    assert outcome.transcripts == ()
    [error] = outcome.errors
    assert "nested too deeply" in str(error) and "\n" not in str(error)


@pytest.mark.parametrize("source", SOURCES.values(), ids=SOURCES.keys())
@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity"])
def test_nan_or_infinity_is_one_problem_in_every_importer(source: str, word: str) -> None:
    """Python's decoder takes them; sent on in a replayed tool call, no server parses them."""
    outcome = import_file(b'{"role": "user", "content": "x", "n": %s}\n' % word.encode(), source)
    assert outcome.transcripts == ()
    [error] = outcome.errors
    assert f"not JSON: {word} is not a JSON number" in str(error) and "\n" not in str(error)


def _config(root: Path, **caps: float) -> object:
    return toolout_config({"name": "toolout", "transcripts_dir": str(root), **caps})


def _reasons(root: Path, **caps: float) -> dict[str, str]:
    transcripts, skipped, _ = read_corpus(_config(root, **caps))  # type: ignore[arg-type]
    assert [t.source for t in transcripts] == ["good.jsonl"]
    return {Path(s.source).name: s.reason for s in skipped}


def test_non_regular_files_are_skipped_in_one_line_and_the_good_one_runs(tmp_path: Path) -> None:
    (tmp_path / "good.jsonl").write_bytes(GOOD)
    os.mkfifo(tmp_path / "fifo.jsonl")  # reading it would block forever
    (tmp_path / "folder.jsonl").mkdir()
    (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
    (tmp_path / "deep.jsonl").write_bytes(DEEP)
    reasons = _reasons(tmp_path)
    assert reasons["fifo.jsonl"] == "a FIFO, not a regular file"
    assert reasons["folder.jsonl"] == "a directory, not a regular file"
    assert reasons["zero.jsonl"].startswith(f"a symlink that leaves {str(tmp_path)!r}")
    assert "'/dev/zero'" in reasons["zero.jsonl"]
    assert "nested too deeply" in reasons["deep.jsonl"]


def test_a_symlink_to_a_file_outside_names_its_target(tmp_path: Path) -> None:
    inside, elsewhere = tmp_path / "in", tmp_path / "secret.jsonl"
    inside.mkdir()
    elsewhere.write_bytes(GOOD)
    (inside / "good.jsonl").write_bytes(GOOD)
    (inside / "link.jsonl").symlink_to(elsewhere)
    (inside / "ok-link.jsonl").symlink_to(inside / "good.jsonl")  # stays inside: read
    transcripts, skipped, _ = read_corpus(_config(inside))  # type: ignore[arg-type]
    assert len(transcripts) == 2
    [skip] = skipped
    assert str(elsewhere) in skip.reason and "copy the file in" in skip.reason


def test_a_file_over_the_cap_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "good.jsonl").write_bytes(GOOD)
    (tmp_path / "huge.jsonl").write_bytes(b'{"role": "user", "content": "' + b"x" * 20_000 + b'"}')
    read: list[str] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read.append(str(n)) or real_read(fd, n))
    _, skipped, _ = read_corpus(_config(tmp_path, max_file_mb=0.01))  # type: ignore[arg-type]
    assert len(read) == 2  # good.jsonl only (a chunk, then end of file): huge was never read
    [skip] = skipped
    assert skip.reason.startswith("20031 bytes, over the 10485 bytes cap (study.max_file_mb)")


def test_a_tool_output_over_the_cap_skips_its_transcript(tmp_path: Path) -> None:
    (tmp_path / "good.jsonl").write_bytes(GOOD)
    big = GOOD.replace(b"def f(): pass", b"y" * 30_000)
    (tmp_path / "big-output.jsonl").write_bytes(big)
    reasons = _reasons(tmp_path, max_output_mb=0.02)
    assert (
        "message 2 (tool) holds 30000 bytes, over the 20971 bytes cap"
        in reasons["big-output.jsonl"]
    )
    assert "study.max_output_mb" in reasons["big-output.jsonl"]


def test_within_output_cap_keeps_the_small_and_names_the_large() -> None:
    [small] = jsonl_importer.parse(GOOD, "a.jsonl")
    [large] = jsonl_importer.parse(GOOD.replace(b"def f(): pass", b"z" * 100), "b.jsonl")
    kept, refused = within_output_cap([small, large], 50)
    assert kept == [small] and [e.source for e in refused] == ["b.jsonl"]


def test_a_skip_warning_names_the_path_once_as_its_repr(tmp_path: Path) -> None:
    from pipeline.toolout.study import Skipped

    (tmp_path / "good.jsonl").write_bytes(GOOD)
    (tmp_path / "bad\nname.jsonl").write_bytes(b"{not json}\n")
    _, skipped, _ = read_corpus(_config(tmp_path))  # type: ignore[arg-type]
    [skip] = skipped
    assert isinstance(skip, Skipped)
    warning = f"skipped {skip.source!r}: {skip.reason}"
    assert "\n" not in warning
    assert warning.count("name.jsonl") == 1
    assert skip.reason.startswith("line 1: not JSON")


def test_an_empty_transcripts_dir_says_it_holds_no_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no \*\.jsonl file in '"):
        read_corpus(_config(tmp_path))  # type: ignore[arg-type]
    (tmp_path / "bad.jsonl").write_bytes(b"{}\n")
    with pytest.raises(ConfigError, match="see the 1 skipped above"):
        read_corpus(_config(tmp_path))  # type: ignore[arg-type]


def test_issue_32_a_symlink_loop_is_skipped_in_one_line_and_the_good_one_runs(
    tmp_path: Path,
) -> None:
    """Issue 32 item 10: `RuntimeError: Symlink loop` aborted the sweep before any transcript."""
    (tmp_path / "good.jsonl").write_bytes(GOOD)
    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "b.jsonl").symlink_to(tmp_path / "a.jsonl")
    reasons = _reasons(tmp_path)
    assert reasons == {n: "a symlink loop" for n in ("loop.jsonl", "a.jsonl", "b.jsonl")}


def test_issue_32_a_symlink_loop_read_without_a_root_is_one_line(tmp_path: Path) -> None:
    from pipeline.user_files import UnreadableFile, read_bounded

    (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
    with pytest.raises(UnreadableFile) as caught:
        read_bounded(tmp_path / "loop.jsonl", max_bytes=10, cap_name="cap")
    assert caught.value.reason == "a symlink loop"
