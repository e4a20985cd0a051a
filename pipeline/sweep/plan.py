"""The sweep plan: one UnitSpec per (configuration, arm, execution group, repeat).

Decisions the paper leaves open:
- Repeats are numbered ``0..repeats-1``. Repeat ``r`` of configuration ``i`` (0-based, in panel
  order) runs the arms in the order of schedule row ``(i * repeats + r) mod L``, L the cycle
  length (``schedules.rows_for``): the configurations' blocks of rows tile the cycle, so the
  panel balances positions and first-order carryover even when one configuration's repeats do
  not close (beyond the paper; docs/protocol.md). ``schedule_position`` is the arm's place in
  that order (0 first). Schedule item ``i`` is ``arms[i]`` in the order the study lists them.
- One sweep is one execution group (``execution_group`` from config); pairs never cross groups.
  A study that splits its work (``Study.execution_groups``: the tool-output study's corpus
  shards) plans ``groups`` consecutive groups from that one, each with the same schedule rows.
- ``row_id`` is ``f"{config_id}/{arm}/g{execution_group}/r{repeat}/a{attempt}"``: readable,
  deterministic and unique per attempt. It is an identifier, never parsed (a config_id may
  itself contain ``/``); join on the key columns instead.
- The plan is written once, before any dispatch; its ``status`` is ``pending`` or ``not_run``
  (with ``not_run_reason``, e.g. a probe exclusion). Outcomes live in rows/, and the manifest
  counts them; the session's close writes ``done`` back for final keys in one atomic replace
  (pipeline/sweep/session.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

import pyarrow as pa

from pipeline.store.schemas import PLAN
from pipeline.study import UnitSpec
from pipeline.sweep.schedules import rows_for


class PlannedConfig(NamedTuple):
    """A served configuration as the plan sees it."""

    config_id: str
    model: str
    family: str


def build_plan(  # noqa: PLR0917 - the brief's positional signature, shared with the coordinator
    run_id: str,
    configs: Sequence[tuple[str, str, str]],
    arms: Sequence[str],
    repeats: int,
    execution_group: int,
    schedule: str,
    *,
    groups: int = 1,
) -> list[UnitSpec]:
    """Every (config, group, repeat, arm) unit, arms ordered by the schedule row of the repeat.

    ``configs`` holds (config_id, model, family) triples. Output order is config, group,
    repeat, schedule position; use ``dispatch_order`` to interleave configs for dispatch.
    """
    _check_unique("config_id", [c[0] for c in configs])
    _check_unique("arm", arms)
    if not arms:
        raise ValueError("a plan needs at least one arm")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if groups < 1:
        raise ValueError(f"groups must be >= 1, got {groups}")
    specs = []
    for index, config in enumerate(map(PlannedConfig._make, configs)):
        rows = rows_for(schedule, len(arms), repeats, index)
        for group in range(execution_group, execution_group + groups):
            for repeat in range(repeats):
                for position, arm_index in enumerate(rows[repeat]):
                    specs.append(
                        UnitSpec(
                            run_id=run_id,
                            config_id=config.config_id,
                            model=config.model,
                            family=config.family,
                            arm=arms[arm_index],
                            execution_group=group,
                            repeat=repeat,
                            schedule_position=position,
                        )
                    )
    return specs


def dispatch_order(specs: Iterable[UnitSpec]) -> list[UnitSpec]:
    """Round-robin over configs (in first-seen order) so every endpoint gets work at once.

    Within a config, specs go by execution group, repeat, schedule position, attempt, so each
    endpoint runs its arms in schedule order.
    """
    by_config: dict[str, list[UnitSpec]] = {}
    for spec in specs:
        by_config.setdefault(spec.config_id, []).append(spec)
    queues = [
        sorted(
            group,
            key=lambda s: (s.execution_group, s.repeat, s.schedule_position, s.attempt),
        )
        for group in by_config.values()
    ]
    ordered = []
    for depth in range(max((len(q) for q in queues), default=0)):
        ordered += [queue[depth] for queue in queues if depth < len(queue)]
    return ordered


def plan_table(specs: Sequence[UnitSpec], not_run: Mapping[tuple[str, str], str]) -> pa.Table:
    """The plan as an Arrow table; ``not_run`` maps (config_id, arm) to an exclusion reason."""
    records = []
    for spec in specs:
        reason = not_run.get((spec.config_id, spec.arm))
        records.append(
            {
                "run_id": spec.run_id,
                "config_id": spec.config_id,
                "model": spec.model,
                "family": spec.family,
                "arm": spec.arm,
                "execution_group": spec.execution_group,
                "repeat": spec.repeat,
                "schedule_position": spec.schedule_position,
                "status": "pending" if reason is None else "not_run",
                "not_run_reason": reason,
            }
        )
    return pa.Table.from_pylist(records, schema=PLAN)


def specs_from_plan(plan: pa.Table) -> list[UnitSpec]:
    """The attempt-0 specs of every runnable (not ``not_run``) plan row, e.g. on resume."""
    specs = []
    for record in plan.to_pylist():
        if record["status"] == "not_run":
            continue
        specs.append(
            UnitSpec(
                run_id=record["run_id"],
                config_id=record["config_id"],
                model=record["model"],
                family=record["family"],
                arm=record["arm"],
                execution_group=record["execution_group"],
                repeat=record["repeat"],
                schedule_position=record["schedule_position"],
            )
        )
    return specs


def _check_unique(what: str, values: Sequence[str]) -> None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            raise ValueError(f"{what} {value!r} appears twice in the plan input")
        seen.add(value)
