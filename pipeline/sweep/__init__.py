"""Sweep orchestration: the plan, its schedules and the resume diff (actors and the
coordinator live beside these)."""

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
