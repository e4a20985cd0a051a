"""Every report's Requests section: one summary of the engine's requests table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jobs.requests_summary import ENGINE_TABLES, request_lines, request_summary
from pipeline.store.parts import write_part


def record(position: int, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "run_id": "run", "row_id": "c1/j/g0/r0/a0", "session": 0, "position": position,
        "kind": "chat", "purpose": "fold", "config_id": "c1", "status": 200, "error": None,
        "latency_s": 1.0, "prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 0,
        "cost_usd": 0.5, "spent_usd": 0.5, "cache_hit": False, "key_hash": "ab" * 16,
    }  # fmt: skip
    return {**base, **kw}


def test_requests_hits_failures_spend_and_latency_per_configuration(tmp_path: Path) -> None:
    records = [
        record(0, latency_s=1.0),
        record(1, latency_s=3.0),
        record(2, session=1, cache_hit=True, spent_usd=0.0, latency_s=0.0),
        record(3, error="timeout", status=None, cost_usd=0.0, spent_usd=0.0, latency_s=9.0),
    ]
    write_part(tmp_path, "requests", records, part_name="00000000-a", layout=ENGINE_TABLES)
    summary = request_summary(tmp_path)
    assert summary is not None
    row = summary.row(0, named=True)
    assert (row["requests"], row["sent"], row["cache_hits"], row["failed"]) == (4, 3, 1, 1)
    assert (row["spent_usd"], row["cost_usd"]) == (1.0, 1.5)
    assert row["latency_p50_s"] in (1.0, 3.0) and row["latency_p95_s"] == 3.0  # answered only
    lines = request_lines(tmp_path)
    assert lines[0] == "## Requests" and "| c1 | 4 | 3 | 1 | 1 | 1.0000 | 1.5000 |" in lines[-2]


def test_a_run_that_sent_nothing_has_no_section(tmp_path: Path) -> None:
    assert request_lines(tmp_path) == []
