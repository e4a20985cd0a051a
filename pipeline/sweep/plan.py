"""The sweep plan: one UnitSpec per (configuration, arm, execution group, repeat).

Decisions the paper leaves open:
- Repeats are numbered ``0..repeats-1``. Repeat ``r`` of configuration ``i`` (0-based, in panel
  order) runs the arms in the order of schedule row ``(i * repeats + r) mod L``, L the cycle
  length (``schedules.rows_for``): the configurations' blocks of rows tile the cycle, so the
  panel balances positions and first-order carryover even when one configuration's repeats do
  not close (beyond the paper; docs/engine.md). ``schedule_position`` is the arm's place in
  that order (0 first). Schedule item ``i`` is ``arms[i]`` in the order the study lists them.
- One sweep is one execution group (``execution_group`` from config); pairs never cross groups.
  A study that splits its work (``Study.execution_groups``: the tool-output study's corpus
  shards) plans ``groups`` consecutive groups from that one, each with the same schedule rows.
- ``row_id`` is ``f"{config_id}/{arm}/g{execution_group}/r{repeat}/a{attempt}"``: readable,
  deterministic and unique per attempt. It is an identifier, never parsed (a config_id may
  itself contain ``/``); join on the key columns instead.
- The plan is a generator (``iter_plan``) turned into its table in chunks (``plan_table``):
  no list of every unit is held while it is built, and a stop asked for between chunks ends
  it (``PlanStopped``). Its size is bounded before it is built (pipeline/sweep/plan_bounds.py).
- The plan is written once, before any dispatch; its ``status`` is ``pending`` or ``not_run``
  (with ``not_run_reason``, e.g. a probe exclusion). Outcomes live in rows/, and the manifest
  counts them; the session's close writes ``done`` back for final keys in one atomic replace
  (pipeline/sweep/session.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple

import pyarrow as pa

from pipeline.store.schemas import PLAN
from pipeline.study import UnitSpec
from pipeline.sweep.plan_bounds import PlanStopped
from pipeline.sweep.schedules import row_offset, schedule_rows

PLAN_CHUNK = 50_000  # units turned into Arrow at a time; a stop is checked between chunks


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
    return list(iter_plan(run_id, configs, arms, repeats, execution_group, schedule, groups=groups))


def iter_plan(  # noqa: PLR0917 - build_plan's signature
    run_id: str,
    configs: Sequence[tuple[str, str, str]],
    arms: Sequence[str],
    repeats: int,
    execution_group: int,
    schedule: str,
    *,
    groups: int = 1,
) -> Iterator[UnitSpec]:
    """`build_plan`'s units one at a time, in its order; nothing is built ahead (a repeat's
    schedule row is indexed, not listed: ``schedules.rows_for`` lists them all)."""
    _check_unique("config_id", [c[0] for c in configs])
    _check_unique("arm", arms)
    if not arms:
        raise ValueError("a plan needs at least one arm")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    if groups < 1:
        raise ValueError(f"groups must be >= 1, got {groups}")
    rows = schedule_rows(schedule, len(arms))
    for index, config in enumerate(map(PlannedConfig._make, configs)):
        start = row_offset(index, repeats, len(rows))  # as schedules.rows_for
        for group in range(execution_group, execution_group + groups):
            for repeat in range(repeats):
                for position, arm_index in enumerate(rows[(start + repeat) % len(rows)]):
                    yield UnitSpec(
                        run_id=run_id,
                        config_id=config.config_id,
                        model=config.model,
                        family=config.family,
                        arm=arms[arm_index],
                        execution_group=group,
                        repeat=repeat,
                        schedule_position=position,
                    )


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


def plan_table(
    specs: Iterable[UnitSpec],
    not_run: Mapping[tuple[str, str], str],
    *,
    chunk: int = PLAN_CHUNK,
    should_stop: Callable[[], bool] | None = None,
) -> pa.Table:
    """The plan as an Arrow table; ``not_run`` maps (config_id, arm) to an exclusion reason.

    ``specs`` is consumed ``chunk`` units at a time, each chunk turned into Arrow columns
    before the next is drawn, so only the table (not a list of units and one of row dicts)
    grows with the plan. ``should_stop`` is asked before each chunk; True raises
    ``PlanStopped``.
    """
    parts = []
    units = iter(specs)
    while True:
        if should_stop is not None and should_stop():
            raise PlanStopped("a stop was asked for while the plan was built")
        batch = list(itertools.islice(units, chunk))
        if not batch:
            break
        parts.append(_chunk_table(batch, not_run))
    if not parts:
        return PLAN.empty_table()
    return pa.concat_tables(parts).combine_chunks()


def _chunk_table(specs: Sequence[UnitSpec], not_run: Mapping[tuple[str, str], str]) -> pa.Table:
    reasons = [not_run.get((s.config_id, s.arm)) for s in specs]
    columns = {
        "run_id": [s.run_id for s in specs],
        "config_id": [s.config_id for s in specs],
        "model": [s.model for s in specs],
        "family": [s.family for s in specs],
        "arm": [s.arm for s in specs],
        "execution_group": [s.execution_group for s in specs],
        "repeat": [s.repeat for s in specs],
        "schedule_position": [s.schedule_position for s in specs],
        "status": ["pending" if r is None else "not_run" for r in reasons],
        "not_run_reason": reasons,
    }
    return pa.Table.from_pydict(columns, schema=PLAN)


def specs_from_plan(plan: pa.Table) -> list[UnitSpec]:
    """The attempt-0 specs of every runnable (not ``not_run``) plan row, e.g. on resume."""
    specs = []
    records = (r for batch in plan.to_batches(PLAN_CHUNK) for r in batch.to_pylist())
    for record in records:  # a chunk's dicts at a time, never the whole plan's
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
