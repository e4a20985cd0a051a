"""Every report's Requests section: one summary of the engine's requests table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs.requests_summary import ENGINE_TABLES, request_lines, request_summary
from pipeline.store.parts import write_part
from pipeline.store.schemas import ADDED_LATER, REQUESTS


def record(position: int, **kw: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "run_id": "run", "row_id": "c1/j/g0/r0/a0", "session": 0, "position": position,
        "attempt_in_request": 0, "kind": "chat", "purpose": "fold", "config_id": "c1",
        "status": 200, "error": None, "error_detail": None, "server_wait_s": None,
        "latency_s": 1.0, "prompt_tokens": 10, "completion_tokens": 5, "cached_tokens": 0,
        "cache_write_tokens": None, "reasoning_tokens": None, "usage_reported": True,
        "cache_overlap": False, "cost_usd": 0.5, "billed_usd": None, "spent_usd": 0.5,
        "cache_hit": False, "key_hash": "ab" * 16, "reply_text": None,
    }  # fmt: skip
    return {**base, **kw}


def failed_attempt(position: int, attempt: int, **kw: Any) -> dict[str, Any]:
    """An HTTP attempt that got no answer: no usage, nothing paid."""
    fault: dict[str, Any] = {
        "attempt_in_request": attempt, "error": "http_503", "status": 503,
        "prompt_tokens": None, "completion_tokens": None, "cached_tokens": None,
        "usage_reported": None, "cache_overlap": None, "cost_usd": 0.0, "spent_usd": 0.0,
    }  # fmt: skip
    return record(position, **{**fault, **kw})


def billed(position: int, config_id: str, cost: float, charge: float | None) -> dict[str, Any]:
    spent = charge if charge is not None else cost
    return record(position, config_id=config_id, cost_usd=cost, billed_usd=charge, spent_usd=spent)


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
    assert (row["spent_usd"], row["cost_usd"], row["estimated_usd"]) == (1.0, 1.5, 1.0)
    assert row["latency_p50_s"] in (1.0, 3.0) and row["latency_p95_s"] == 3.0  # answered only
    lines = request_lines(tmp_path)
    assert lines[0] == "## Requests"
    assert "| c1 | 4 | 3 | 0 | 1 | 1 | 1.0000 | 1.5000 | 1.0000 | — | 0 |" in lines[-2]


def test_retries_are_http_attempts_and_a_request_fails_once(tmp_path: Path) -> None:
    records = [
        failed_attempt(0, 0),
        failed_attempt(0, 1),
        record(0, attempt_in_request=2, latency_s=2.0),  # answered on the third attempt
        failed_attempt(1, 0, error="timeout", status=None),
        failed_attempt(1, 1, error="timeout", status=None),  # failed after its retry
        record(2, cache_hit=True, spent_usd=0.0, latency_s=0.0),
    ]
    write_part(tmp_path, "requests", records, part_name="00000000-a", layout=ENGINE_TABLES)
    summary = request_summary(tmp_path)
    assert summary is not None
    row = summary.row(0, named=True)
    got = [row[k] for k in ("requests", "sent", "retries", "cache_hits", "failed")]
    assert got == [3, 5, 3, 1, 1]
    assert row["latency_p50_s"] == 2.0  # the answered attempt only
    assert "| c1 | 3 | 5 | 3 | 1 | 1 |" in request_lines(tmp_path)[6]


@pytest.fixture
def money_run(tmp_path: Path) -> Path:
    records = [
        # fresh: billed within 5% of the estimate
        billed(0, "c-fresh", 0.010, 0.0102),
        billed(1, "c-fresh", 0.010, 0.0102),
        # stale: billed 25% above the estimate on the replies that carried a charge
        billed(0, "c-stale", 0.010, 0.0125),
        billed(1, "c-stale", 0.010, 0.0125),
        billed(2, "c-stale", 0.010, None),  # no charge stated: not compared
        # no usage: an upper estimate, never set beside a charge
        billed(0, "c-nousage", 0.010, 0.010),
        {**billed(1, "c-nousage", 0.050, 0.001), "usage_reported": False, "prompt_tokens": None},
        {**billed(2, "c-nousage", 0.040, None), "usage_reported": False, "prompt_tokens": None},
        # unbilled: a provider that states no charge (e.g. a local server)
        billed(0, "c-unbilled", 0.0, None),
    ]
    write_part(tmp_path, "requests", records, part_name="00000000-a", layout=ENGINE_TABLES)
    return tmp_path


def test_estimate_billed_and_no_usage_per_configuration(money_run: Path) -> None:
    summary = request_summary(money_run)
    assert summary is not None
    rows = {r["config_id"]: r for r in summary.iter_rows(named=True)}
    stale, nousage, unbilled = rows["c-stale"], rows["c-nousage"], rows["c-unbilled"]
    assert stale["estimated_usd"] == pytest.approx(0.030)
    assert stale["billed_usd"] == pytest.approx(0.025)
    assert (stale["billed_replies"], stale["paid_replies"], stale["compared_replies"]) == (2, 3, 2)
    assert stale["compared_estimated_usd"] == pytest.approx(0.020)
    assert stale["spent_usd"] == pytest.approx(0.035)  # billed where stated, else the estimate
    assert (nousage["no_usage"], nousage["billed_replies"], nousage["compared_replies"]) == (
        2, 2, 1,
    )  # fmt: skip
    assert nousage["compared_billed_usd"] == pytest.approx(0.010)
    assert (unbilled["billed_usd"], unbilled["billed_replies"], unbilled["no_usage"]) == (
        None, 0, 0,
    )  # fmt: skip


def test_only_the_stale_configuration_is_flagged(money_run: Path) -> None:
    lines = request_lines(money_run)
    flags = [line for line in lines if line.startswith("prices in the panel are stale")]
    assert flags == ["prices in the panel are stale for c-stale: billed $0.0250, estimated $0.0200"]
    table = {line.split(" | ")[0]: line for line in lines if line.startswith("| c-")}
    assert "| 0.0250 (2 of 3) |" in table["| c-stale"]
    assert "| 0.0110 (2 of 3) | 2 |" in table["| c-nousage"]  # 2 replies without usage
    assert "| — | 0 |" in table["| c-unbilled"]
    assert any(line.startswith("No usage: ") and "upper estimate" in line for line in lines)


def test_a_run_from_before_issue_31_reads_with_nulls_not_zeros(tmp_path: Path) -> None:
    added = ADDED_LATER["requests"]
    old_schema = pa.schema([f for f in REQUESTS if f.name not in added])
    old = [
        {k: v for k, v in record(i, cost_usd=0.25, spent_usd=0.25).items() if k not in added}
        for i in range(2)
    ]
    (tmp_path / "requests").mkdir()
    pq.write_table(
        pa.Table.from_pylist(old, schema=old_schema), tmp_path / "requests" / "00000000-a.parquet"
    )
    summary = request_summary(tmp_path)
    assert summary is not None
    row = summary.row(0, named=True)
    assert (row["requests"], row["sent"], row["failed"], row["estimated_usd"]) == (2, 2, 0, 0.5)
    assert (row["retries"], row["no_usage"], row["billed_usd"]) == (None, None, None)
    lines = request_lines(tmp_path)
    assert "| c1 | 2 | 2 | — | 0 | 0 | 0.5000 | 0.5000 | 0.5000 | — | — |" in lines[-2]
    assert not any("stale" in line or line.startswith("No usage") for line in lines)


def test_a_run_that_sent_nothing_has_no_section(tmp_path: Path) -> None:
    assert request_lines(tmp_path) == []
