"""Issue 32 §4: one damaged record hides only itself; list says so; prune keeps every intact one."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.sweep.response_cache import ResponseCache, scan_segment

KEYS = [f"{i:02d}" + "a" * 30 for i in range(4)]


def filled(root: Path) -> Path:
    """A segment of four whole records; returns its path."""
    cache = ResponseCache(root)
    for number, key in enumerate(KEYS):
        cache.put(key, "chat", {"text": f"reply {number}"})
    cache.close()
    (segment,) = root.glob("seg-*.log")
    return segment


def set_length(segment: Path, record: int, length: int) -> None:
    """Rewrite the length field of the `record`-th header (what the red team did)."""
    lines = segment.read_bytes().split(b"\n")
    header = lines[2 * record].split(b" ")
    header[3] = b"%d" % length
    lines[2 * record] = b" ".join(header)
    segment.write_bytes(b"\n".join(lines))


def record_lengths(segment: Path) -> list[int]:
    return [int(line.split(b" ")[3]) for line in segment.read_bytes().split(b"\n")[0::2] if line]


def test_issue32_a_damaged_length_field_hides_only_that_record(tmp_path: Path) -> None:
    segment = filled(tmp_path)
    set_length(segment, 1, record_lengths(segment)[1] + 3)
    scan = scan_segment(segment)
    assert [key for key, _ in scan.records] == [KEYS[0], KEYS[2], KEYS[3]]
    assert scan.damaged == 1
    cache = ResponseCache(tmp_path)
    assert [cache.get(k) is not None for k in KEYS] == [True, False, True, True]


def test_issue32_a_length_that_lands_on_a_later_record_swallows_nothing(tmp_path: Path) -> None:
    """A length that points exactly at the end of the next record still passes the framing
    checks; the CRC is what tells the two apart, so the next record is kept."""
    segment = filled(tmp_path)
    lengths = record_lengths(segment)
    header_2 = len(segment.read_bytes().split(b"\n")[2]) + 1
    set_length(segment, 1, lengths[1] + 1 + header_2 + lengths[2])
    scan = scan_segment(segment)
    assert [key for key, _ in scan.records] == [KEYS[0], KEYS[2], KEYS[3]]
    assert scan.damaged == 1


def damaged_run(tmp_path: Path, *, record: int, length: int) -> Path:
    """A run dir whose cache holds the four KEYS, one record's length field set to `length`."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    set_length(filled(run / "cache"), record, length)
    return run


def test_issue32_list_reports_unreadable_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = damaged_run(tmp_path, record=0, length=7)
    assert main(["cache", "list", str(run)]) == 0
    out = capsys.readouterr().out
    assert "3 entries" in out and "1 unreadable record" in out


def test_issue32_prune_keeps_every_intact_record_and_counts_the_damaged_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = damaged_run(tmp_path, record=2, length=5)
    assert main(["cache", "prune", str(run)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("dropped 1 entry (0 expired, 1 unreadable, 0 superseded)")
    cache = ResponseCache(run / "cache")
    assert [cache.get(k) is not None for k in KEYS] == [True, True, False, True]
    assert cache.stats().damaged == 0


def test_issue32_a_torn_tail_is_one_unreadable_record(tmp_path: Path) -> None:
    segment = filled(tmp_path)
    segment.write_bytes(segment.read_bytes()[:-9])
    scan = scan_segment(segment)
    assert [key for key, _ in scan.records] == KEYS[:3] and scan.damaged == 1


def test_issue32_prune_keeps_each_entrys_age(tmp_path: Path) -> None:
    """A prune rewrites entries; their TTL must not restart (found replaying §4)."""
    cache = ResponseCache(tmp_path, clock=lambda: 1000.0)
    cache.put(KEYS[0], "chat", {"text": "x"})
    cache.close()
    later = ResponseCache(tmp_path, ttl_s=1e9, clock=lambda: 5000.0)
    later.prune()
    assert ResponseCache(tmp_path).stats().oldest == 1000.0
