"""Sweep orchestration: the plan, its schedules and the resume diff (actors and the
coordinator live beside these).

The names below are imported on first use (PEP 562): every EndpointWorker actor process
imports this package to reach its own module, and importing the plan and the resume diff
eagerly would load Polars, the store and the plan into each of them, about 29 MB of RSS per
actor that never plans or resumes anything (docs/benchmarks.md, memory).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.study import UnitSpec
    from pipeline.sweep.plan import (
        PlannedConfig,
        build_plan,
        dispatch_order,
        plan_table,
        specs_from_plan,
    )
    from pipeline.sweep.resume import (
        NextAttempt,
        ResumeState,
        check_resume_compatible,
        config_fingerprint,
        resume_diff,
        specs_to_run,
    )
    from pipeline.sweep.schedules import closes, latin, schedule_rows, williams

_HOME = {
    "UnitSpec": "pipeline.study",
    "PlannedConfig": "pipeline.sweep.plan",
    "build_plan": "pipeline.sweep.plan",
    "dispatch_order": "pipeline.sweep.plan",
    "plan_table": "pipeline.sweep.plan",
    "specs_from_plan": "pipeline.sweep.plan",
    "NextAttempt": "pipeline.sweep.resume",
    "ResumeState": "pipeline.sweep.resume",
    "check_resume_compatible": "pipeline.sweep.resume",
    "config_fingerprint": "pipeline.sweep.resume",
    "resume_diff": "pipeline.sweep.resume",
    "specs_to_run": "pipeline.sweep.resume",
    "closes": "pipeline.sweep.schedules",
    "latin": "pipeline.sweep.schedules",
    "schedule_rows": "pipeline.sweep.schedules",
    "williams": "pipeline.sweep.schedules",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "NextAttempt",
    "PlannedConfig",
    "ResumeState",
    "UnitSpec",
    "build_plan",
    "check_resume_compatible",
    "closes",
    "config_fingerprint",
    "dispatch_order",
    "latin",
    "plan_table",
    "resume_diff",
    "schedule_rows",
    "specs_from_plan",
    "specs_to_run",
    "williams",
]
