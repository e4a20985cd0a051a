"""The bloat scan (issue 21): counts, nearest-rank percentiles, shares at band edges, bytes per
session, quality per band; and `traces scan` over files and folders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.traces.compression.items import make_item
from pipeline.traces.scan import nearest_rank, scan


def test_nearest_rank_percentiles_are_real_lengths() -> None:
    values = list(range(1, 101))
    assert [nearest_rank(values, p) for p in (50, 90, 99, 100)] == [50, 90, 99, 100]
    assert nearest_rank([7], 99) == 7 and nearest_rank([], 50) is None


def test_scan_counts_lengths_edges_sessions_and_quality() -> None:
    items = [
        make_item("s1/a", "x" * 999, "jsonl", "f#1"),
        make_item("s1/b", "Wait, " + "y" * 1000, "jsonl", "f#2"),
        make_item("s2/c", "maybe é" + "z" * 20000, "jsonl", "f#3"),
        make_item("s2/d", "x" * 999, "jsonl", "f#4"),  # a repeat of s1/a: removed
    ]
    result = scan(items)
    s = result.summary()
    assert (s["traces"], s["duplicates_removed"], s["sessions"]) == (3, 1, 2)
    assert (s["median_chars"], s["max_chars"]) == (1006, 20007)
    assert s["share_at_least"] == {"1000": 2 / 3, "4000": 1 / 3, "16000": 1 / 3}
    assert result.sessions() == {"s1": 999 + 1006, "s2": 20008}  # é is two UTF-8 bytes
    assert s["quality"] == {"self_correction": 1 / 3, "hedging": 1 / 3, "repetition": 0.0}
    bands = {row.band: row for row in result.by_band()}
    assert bands["1k-4k"].self_correction == 1.0 and bands["4k-16k"].traces == 0
    assert bands["4k-16k"].hedging is None


def test_traces_scan_reads_a_folder_of_jsonl_and_prints_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mine.jsonl").write_text(
        '{"id": "run1/t1", "text": "Actually the port is 30001."}\n'
        '{"id": "run1/t2", "text": "Probably the cache."}\n',
        encoding="utf-8",
    )
    assert (
        main(["traces", "scan", str(tmp_path), "--json", "--figures", str(tmp_path / "fig")]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert (out["traces"], out["sessions"], out["files"]) == (2, 1, 1)
    assert out["quality"]["self_correction"] == 0.5 and out["quality"]["hedging"] == 0.5
    assert (tmp_path / "fig" / "trace_lengths.png").is_file()
    assert (tmp_path / "fig" / "trace_quality.png").is_file()


def test_traces_scan_of_the_shipped_corpus_reports_the_seed_reading(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = Path(__file__).resolve().parents[2] / "data"
    assert (
        main(["traces", "scan", str(root / "transcripts"), str(root / "reasoning-fixtures")]) == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("traces: 307 (58 repeated texts removed) in 31 sessions")
    assert "files with no trace (5)" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"id": "a", "text": "\xff"}\n', "line 1: not UTF-8 text"),
        (b"[" * 200_000 + b"]" * 200_000 + b"\n", "line 1: nested too deeply"),
    ],
)
def test_traces_scan_bad_files_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    assert main(["traces", "scan", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and str(path) in err


def test_traces_scan_of_an_unknown_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "x.txt"
    path.write_text("hello")
    assert main(["traces", "scan", str(path)]) == 2
    assert "not a trace file" in capsys.readouterr().err
