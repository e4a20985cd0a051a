"""How big a plan may be, known before a unit is built; and a plan a signal cut short.

Why (issue 32 §6): `repeats=1000000000` grew the driver to 23.4 GB while it built the plan, a
list of units, until the kernel killed it, and the run dir was left `running` with no plan.
The planned count is a product (configurations x arms x execution groups x repeats), so it is
computed arithmetically in `prepare`, before a run directory, a server or Ray exists, and a
plan over `limits.max_units` is refused in one line naming its size and its factors. Below the
bound the plan is built in chunks (pipeline/sweep/plan.py `plan_table`) that check for a stop
between them; a stop raises `PlanStopped`, and the session is closed `failed` with
`NO_PLAN_REASON`, since a run dir without a plan cannot be resumed.
"""

from __future__ import annotations

from pipeline.usererror import UserError


class PlanTooLarge(UserError):
    """The plan's size is over `limits.max_units`."""


class PlanStopped(Exception):
    """A stop was asked for (SIGINT/SIGTERM) before the plan was written."""


def planned_units(*, configs: int, arms: int, groups: int, repeats: int) -> int:
    """Units a plan holds: every (configuration, arm, execution group, repeat)."""
    return configs * arms * groups * repeats


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def check_plan_size(*, configs: int, arms: int, groups: int, repeats: int, max_units: int) -> int:
    """The planned count, or PlanTooLarge in one line naming it and what it is made of."""
    units = planned_units(configs=configs, arms=arms, groups=groups, repeats=repeats)
    if units <= max_units:
        return units
    factors = " x ".join(
        (
            _count(configs, "configuration"),
            _count(arms, "arm"),
            _count(groups, "execution group"),
            _count(repeats, "repeat"),
        )
    )
    raise PlanTooLarge(
        f"the plan has {units:,} units ({factors}), over limits.max_units={max_units:,}; "
        "lower repeats, arms or configurations, or raise limits.max_units"
    )


def no_plan_reason(signal_name: str) -> str:
    """The manifest's `error` for a session stopped before its plan was written."""
    return (
        f"stopped by {signal_name} before the plan was written; this run dir has no plan and "
        "cannot be resumed: start a new sweep"
    )
