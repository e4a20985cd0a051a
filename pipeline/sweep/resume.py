"""Resume: what a killed or stopped sweep still owes, and whether it may be continued.

A planned key (config_id, arm, execution_group, repeat) is judged by its FINAL attempt:

- done: valid; or invalid and not retryable (arm behaviour is never retried, since retrying
  would select for the arm succeeding); or invalid, retryable and out of attempts
  (``attempt + 1 >= attempt_limit``);
- retry: invalid and retryable with attempts left: run attempt ``final + 1``, a new row;
- never run: no row at all: run attempt 0 (a budget stop or a kill got there first).

Keys the plan marks ``not_run`` are never dispatched. A run may only be resumed under the
config it was made with (its fingerprint) and the same fixture, unless the user passes
``allow_config_change=true``. A key added to the config after the run was made is no
change: its default must keep what the run measured.

Execution settings are not the experiment (issue 32 §20): how fast, how wide and how
patiently units are run does not change what a unit measures, so a resume may change them
without that flag. They are `EXECUTION_ROOTS` (retries, timeouts, `fail_on`), `EXECUTION_KEYS`
(the sim's latency, concurrency, stall, rpm limit and fault rate: its infrastructure, not its
models) and every configuration's `limits` (rates, tokens per minute, concurrency) under
`panel`. The manifest's history records each session's values (`execution_settings`,
pipeline/sweep/history.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa

from pipeline.store.manifest import Manifest, final_attempts, planned_keys
from pipeline.store.reader import RunDirError
from pipeline.study import UnitKey, UnitSpec

RUN_LOCAL_KEYS = frozenset(
    {"resume", "out_dir", "progress", "budget", "allow_config_change", "ray"}
)
"""Top-level config keys that say where and how long to run, not what is measured."""

EXECUTION_ROOTS = ("retry", "timeouts", "fail_on")
EXECUTION_KEYS = ("latency_s", "concurrency", "stall_s", "rpm_limit", "fault_rate")  # under sim
LIMITS = "limits"  # a configuration's rates and concurrency, anywhere under `panel`


class NextAttempt(NamedTuple):
    key: UnitKey
    attempt: int


@dataclass(frozen=True)
class ResumeState:
    """The resume diff; every runnable planned key is in exactly one of the three groups."""

    done: tuple[UnitKey, ...]
    retry: tuple[NextAttempt, ...]
    never_run: tuple[UnitKey, ...]
    excluded: tuple[UnitKey, ...]  # plan status not_run: never dispatched

    def attempts_to_run(self) -> dict[UnitKey, int]:
        """Key -> attempt number to dispatch next (0 for never-run keys)."""
        todo = {key: 0 for key in self.never_run}
        todo.update({item.key: item.attempt for item in self.retry})
        return todo


def resume_diff(plan: pa.Table, rows: pa.Table, attempt_limit: int) -> ResumeState:
    """Classify every planned key by its final attempt (see the module docstring)."""
    if attempt_limit < 1:
        raise ValueError(f"attempt_limit must be >= 1, got {attempt_limit}")
    finals = final_attempts(rows)  # raises RunDirError on a duplicated attempt
    planned = planned_keys(plan)
    strays = set(finals) - {key for key, _, _ in planned}
    if strays:
        raise RunDirError(f"rows/ holds {min(strays)} which is not in the plan; wrong run dir?")
    done, retry, never_run, excluded = [], [], [], []
    for key, status, _ in planned:
        final = finals.get(key)
        if status == "not_run":
            excluded.append(key)
        elif final is None:
            never_run.append(key)
        elif final.valid or not final.retryable or final.attempt + 1 >= attempt_limit:
            done.append(key)
        else:
            retry.append(NextAttempt(key, final.attempt + 1))
    return ResumeState(tuple(done), tuple(retry), tuple(never_run), tuple(excluded))


def specs_to_run(specs: Sequence[UnitSpec], state: ResumeState) -> list[UnitSpec]:
    """The specs still owed, each carrying the attempt number it must run as."""
    todo = state.attempts_to_run()
    return [dataclasses.replace(spec, attempt=todo[spec.key]) for spec in specs if spec.key in todo]


def config_fingerprint(resolved_config: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the config without its run-local keys."""
    measured = {k: v for k, v in resolved_config.items() if k not in RUN_LOCAL_KEYS}
    canonical = json.dumps(
        measured, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def execution_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """A session's execution settings (module doc): each root, `sim.<key>`, and the `limits`
    of each configuration of the panel that states them, by configuration id or position."""
    out: dict[str, Any] = {root: config.get(root) for root in EXECUTION_ROOTS}
    sim = config.get("sim")
    if isinstance(sim, Mapping):
        out.update({f"sim.{key}": sim.get(key) for key in EXECUTION_KEYS})
    panel = config.get("panel")
    configs = panel.get("configs") if isinstance(panel, Mapping) else None
    if isinstance(configs, list):
        limits = {
            str(c.get("id", i)): c[LIMITS]
            for i, c in enumerate(configs)
            if isinstance(c, Mapping) and LIMITS in c
        }
        if limits:
            out["panel.limits"] = limits
    return out


def _measured(config: Mapping[str, Any]) -> Any:
    """`config` without its execution settings: what a unit measures."""

    def strip(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {k: strip(v) for k, v in node.items() if k != LIMITS}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    out = {k: v for k, v in config.items() if k not in EXECUTION_ROOTS}
    sim = out.get("sim")
    if isinstance(sim, Mapping):
        out["sim"] = {k: v for k, v in sim.items() if k not in EXECUTION_KEYS}
    if "panel" in out:
        out["panel"] = strip(out["panel"])
    return out


def _without_added(new: Any, old: Any) -> Any:
    """`new` without the keys `old` lacks: keys a later version added to the config, at
    defaults that keep what a run made before them measured (a study that adds a key owes
    that), are no change of config."""
    if not isinstance(new, Mapping) or not isinstance(old, Mapping):
        return new
    return {k: _without_added(v, old[k]) for k, v in new.items() if k in old}


def check_resume_compatible(
    manifest: Manifest,
    new_fingerprint: str,
    fixture_sha: str | None,
    allow_change: bool,
    *,
    new_config: Mapping[str, Any] | None = None,
) -> list[str]:
    """Refuse to resume under another config or fixture unless ``allow_change``; a change of
    execution settings alone is no change of config (module doc).

    Returns the differences that were overridden (empty when none), for the manifest.
    """
    problems = []
    old = _measured(manifest.config)
    new = None if new_config is None else _without_added(_measured(new_config), old)
    execution_only = new is not None and config_fingerprint(old) == config_fingerprint(new)
    if manifest.config_fingerprint != new_fingerprint and not execution_only:
        changed = changed_paths(old, new) if new is not None else []
        what = f"changed keys {', '.join(changed[:8])}" if changed else "fingerprint differs"
        problems.append(f"run dir was made with another config: {what}")
    if manifest.fixture_sha256 is not None and fixture_sha != manifest.fixture_sha256:
        problems.append(
            f"run dir was made with another fixture: {manifest.fixture_sha256[:12]}... "
            f"now {(fixture_sha or 'none')[:12]}..."
        )
    if problems and not allow_change:
        raise RunDirError("; ".join(problems) + "; pass allow_config_change=true to override")
    return problems


def changed_paths(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted paths where two configs differ, ignoring run-local top-level keys."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        paths = []
        for key in sorted(set(old) | set(new), key=str):
            if not prefix and key in RUN_LOCAL_KEYS:
                continue
            paths += changed_paths(old.get(key), new.get(key), f"{prefix}{key}.")
        return paths
    same = json.dumps(old, sort_keys=True, default=str) == json.dumps(
        new, sort_keys=True, default=str
    )
    return [] if same else [prefix.rstrip(".") or "(root)"]
