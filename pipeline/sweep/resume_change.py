"""What may change when a run is resumed under another config (`allow_config_change=true`).

The rule (issue 13; docs/reliability.md, "Resuming under a changed config"): a resumed run
keeps every unit it planned exactly as planned, so a change is one of three kinds.

- extends: it plans new units and leaves the planned ones alone: more `repeats`, added arms
  (a new entry of the study node named after an added arm, or a list of arm names that only
  grows by added arms), added configurations (`sim.configs` up, `panel.configs` entries added)
  while every planned configuration stays as it was (limits aside);
- session: it changes how this session runs or analyses, not what a unit is: `retry.*`,
  `timeouts.*`, `fail_on.*`, `probe.*`, `analysis.*`, the sim's infrastructure (latency, fault
  rate, stall, concurrency, rpm limit) and any limits. Of these, the execution settings
  (retries, timeouts, `fail_on`, the sim's infrastructure, limits; pipeline/sweep/resume.py)
  need no `allow_config_change=true` (issue 32 §20);
- anything else would alter units already planned (fewer repeats, a removed or changed arm or
  configuration, the seed, temperature, schedule, scenario, the sim's model behaviour ...) and
  is refused in one line naming the key, before anything starts.

A key the run's recorded config lacks was added to the config after the run was made: it is
a session change, and the study that added it owes a default that keeps what such a run
measured.

Planned units keep their plan rows (status and schedule position); new units take the rows
the extended config's full plan gives them, so an extension's schedule is balanced only over
what was planned together (decision: moving planned units would alter them).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

import pyarrow as pa

from pipeline.config import EndpointConfig, Limits
from pipeline.config.load import config_from_manifest
from pipeline.endpoints.panels import materialize
from pipeline.store.manifest import Manifest, planned_keys, redact
from pipeline.store.reader import RunDirError
from pipeline.study import UnitSpec
from pipeline.sweep.plan import plan_table
from pipeline.sweep.resume import changed_paths, config_fingerprint

ChangeKind = Literal["extends", "session"]
SESSION_ROOTS = frozenset({"retry", "timeouts", "probe", "analysis", "cache", "fail_on"})
SESSION_KEYS = frozenset(
    {
        "sim.latency_s",
        "sim.fault_rate",
        "sim.stall_s",
        "sim.concurrency",
        "sim.rpm_limit",
        "endpoint.record",  # where replies are recorded, not what they are
    }
)
PANEL_ROOTS = ("panel", "sim", "endpoint")
SIM_BEHAVIOUR = frozenset({"sim.seed", "sim.model_faults"})  # what the simulated models answer


@dataclass(frozen=True)
class ConfigChange:
    """One changed config key of a resumed session, as the manifest's history records it."""

    key: str
    before: Any
    after: Any
    kind: ChangeKind

    def as_record(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class PlannedPanel:
    """What a config plans: its arms and its configurations (config_id -> endpoint)."""

    arms: tuple[str, ...]
    endpoints: Mapping[str, EndpointConfig]


def planned_now(
    arms: Sequence[str], configs: Iterable[EndpointConfig], included: Iterable[Any]
) -> PlannedPanel:
    """What the resumed session's config plans: its arms and its admitted configurations
    (`included`: the panel resolution's IncludedConfigs), as materialized."""
    ids = {inc.config_id for inc in included}
    return PlannedPanel(tuple(arms), {c.config_id: c for c in configs if c.config_id in ids})


def changes_on_resume(
    manifest: Manifest, plan: pa.Table, new_config: Mapping[str, Any], new: PlannedPanel
) -> tuple[ConfigChange, ...]:
    """The changes a resumed session makes to the run's recorded config, classified.

    The run's planned arms and configurations come from its plan; the planned endpoints as
    the recorded config materializes them, so both sides are compared before any catalog
    or server fills them in.
    """
    if manifest.config_fingerprint == config_fingerprint(new_config):
        return ()
    planned = [key for key, _, _ in planned_keys(plan)]
    ids = {key.config_id for key in planned}
    recorded = config_from_manifest(manifest.config)  # as recorded: no second composition
    endpoints = {c.config_id: c for c in materialize(recorded).configs if c.config_id in ids}
    arms = tuple(dict.fromkeys(key.arm for key in planned))
    return classify_changes(manifest.config, redact(new_config), PlannedPanel(arms, endpoints), new)


def classify_changes(
    old_config: Mapping[str, Any],
    new_config: Mapping[str, Any],
    old: PlannedPanel,
    new: PlannedPanel,
) -> tuple[ConfigChange, ...]:
    """Every changed key with its kind; a RunDirError naming the first that alters units."""
    removed = [arm for arm in old.arms if arm not in new.arms]
    if removed:
        _refuse("arms", f"arm {removed[0]} is planned but no longer selected")
    added_arms = frozenset(new.arms) - frozenset(old.arms)
    changes = []
    for key in changed_paths(old_config, new_config):
        before, after = _at(old_config, key), _at(new_config, key)
        try:
            kind = _kind(key, before, after, added_arms=added_arms, old=old, new=new)
        except RunDirError:
            if _has(old_config, key):
                raise
            kind = "session"  # a key added after the run was made: its default keeps the run
        changes.append(ConfigChange(key, before, after, kind))
    return tuple(changes)


def _kind(
    key: str,
    before: Any,
    after: Any,
    *,
    added_arms: frozenset[str],
    old: PlannedPanel,
    new: PlannedPanel,
) -> ChangeKind:
    # a whole node is one key when a side lacks it (a run made before the node existed)
    if key.split(".", 1)[0] in SESSION_ROOTS or key in SESSION_KEYS:
        return "session"
    if key == "replay" and before is None:  # a run from before the node: not a replay run
        return "session"
    if key == "repeats":
        if isinstance(before, int) and isinstance(after, int) and after > before:
            return "extends"
        _refuse(key, f"{_show(before)} -> {_show(after)} would drop planned units")
    if key.startswith("study."):
        if _adds_arms(key, before, after, added_arms):
            return "extends"
        _refuse(key, f"{_show(before)} -> {_show(after)} changes what planned units run")
    if key.split(".", 1)[0] in PANEL_ROOTS and key not in SIM_BEHAVIOUR:
        return _panel_kind(key, old, new)
    _refuse(key, f"{_show(before)} -> {_show(after)} changes what planned units run")


def _adds_arms(key: str, before: Any, after: Any, added: frozenset[str]) -> bool:
    """A new entry named after an added arm, or a list of names grown only by added arms."""
    if before is None and key.rsplit(".", 1)[-1] in added:
        return True
    if isinstance(before, list) and isinstance(after, list):
        return after[: len(before)] == before and set(after[len(before) :]) <= added
    return False


def _panel_kind(key: str, old: PlannedPanel, new: PlannedPanel) -> ChangeKind:
    for config_id, endpoint in old.endpoints.items():
        now = new.endpoints.get(config_id)
        if now is None:
            _refuse(key, f"configuration {config_id} is planned but no longer in the panel")
        if _unit_facts(now) != _unit_facts(endpoint):
            fields = [
                f.name
                for f in dataclasses.fields(endpoint)
                if getattr(_unit_facts(now), f.name) != getattr(_unit_facts(endpoint), f.name)
            ]
            _refuse(key, f"configuration {config_id} would change ({', '.join(fields)})")
    return "extends" if set(new.endpoints) - set(old.endpoints) else "session"


def _unit_facts(endpoint: EndpointConfig) -> EndpointConfig:
    """The endpoint without its limits: pacing does not change what a unit is."""
    return dataclasses.replace(endpoint, limits=Limits())


def _refuse(key: str, why: str) -> NoReturn:
    raise RunDirError(
        f"resume cannot change {key}: {why}; a resume may only add repeats, arms or "
        "configurations (or change retries, timeouts, limits, probes, analysis); start a new run"
    )


def _has(config: Mapping[str, Any], key: str) -> bool:
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def _at(config: Mapping[str, Any], key: str) -> Any:
    node: Any = config
    for part in key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def extends(changes: Iterable[ConfigChange]) -> bool:
    return any(change.kind == "extends" for change in changes)


def new_specs(plan: pa.Table, specs: Sequence[UnitSpec]) -> list[UnitSpec]:
    """The specs of the extended config's plan whose unit the run has not planned yet."""
    planned = {key for key, _, _ in planned_keys(plan)}
    return [spec for spec in specs if spec.key not in planned]


def inherited_not_run(plan: pa.Table) -> dict[tuple[str, str], str]:
    """(config_id, arm) -> the not-run reason its planned units carry (a probe's verdict):
    a new repeat of a pair the probes excluded is excluded for the same reason."""
    return {
        (key.config_id, key.arm): reason or "unspecified"
        for key, status, reason in planned_keys(plan)
        if status == "not_run"
    }


def extended_plan(
    plan: pa.Table, added: Sequence[UnitSpec], not_run: Mapping[tuple[str, str], str]
) -> pa.Table:
    """The run's plan, unchanged, followed by the rows of the added units."""
    return pa.concat_tables([plan, plan_table(added, not_run).cast(plan.schema)])
