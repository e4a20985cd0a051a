"""A complete rows-table record for tests, every column present."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pipeline.store.schemas import ROWS
from pipeline.sweep.plan import TrajectorySpec


def row_for(
    spec: TrajectorySpec,
    *,
    valid: bool,
    reason: str | None = None,
    retryable: bool = False,
    cost: float = 0.0,
) -> dict[str, Any]:
    row: dict[str, Any] = {name: None for name in ROWS.names}
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
        requests=4,
        simulated=True,
        recall=1.0 if valid else None,
        started_at=now,
        finished_at=now,
    )
    return row
