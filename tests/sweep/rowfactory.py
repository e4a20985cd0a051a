"""Complete carrier rows-table records for tests, every column present."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pipeline.study import UnitOutcome, UnitSpec
from pipeline.sweep.bill import Bill
from pipeline.sweep.rows import UnitRecords
from tests.store.layouts import empty_row


def row_for(
    spec: UnitSpec,
    *,
    valid: bool,
    reason: str | None = None,
    retryable: bool = False,
    cost: float = 0.0,
) -> dict[str, Any]:
    row = empty_row()
    now = datetime.now(UTC)
    row.update(
        run_id=spec.run_id,
        row_id=spec.row_id,
        config_id=spec.config_id,
        model=spec.model,
        family=spec.family,
        arm=spec.arm,
        execution_group=spec.execution_group,
        repeat=spec.repeat,
        attempt=spec.attempt,
        schedule_position=spec.schedule_position,
        valid=valid,
        invalid_reason=reason,
        retryable=retryable,
        cost_usd=cost,
        spent_usd=cost,
        cache_hits=0,
        requests=4,
        simulated=True,
        recall=1.0 if valid else None,
        started_at=now,
        finished_at=now,
    )
    return row


def outcome_of(row: dict[str, Any]) -> UnitOutcome:
    """The UnitOutcome a row's shared outcome columns state."""
    return UnitOutcome(
        valid=row["valid"],
        invalid_reason=row["invalid_reason"],
        retryable=row["retryable"],
        error_detail=row["error_detail"],
    )


def bill_of(row: dict[str, Any]) -> Bill:
    """The Bill a row's shared bill columns state (every request paid)."""
    return Bill(
        requests=row["requests"],
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        cached_tokens=row["cached_tokens"] or 0,
        cost_usd=row["cost_usd"],
        spent_usd=row["cost_usd"],
        paid_requests=row["requests"],
        simulated=row["simulated"],
    )


def records_for(spec: UnitSpec, *, valid: bool, **kw: Any) -> UnitRecords:
    """One attempt's records as a worker returns them: the row (see row_for), no study tables."""
    row = row_for(spec, valid=valid, **kw)
    return UnitRecords(outcome_of(row), row, {}, bill_of(row))


def records_of(row: dict[str, Any]) -> UnitRecords:
    """Records for a row already built (its outcome read back from its columns)."""
    return UnitRecords(outcome_of(row), row, {}, bill_of(row))
