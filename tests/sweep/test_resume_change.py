"""What a resume may change (issue 13): extend the plan, change the session, or be refused.

Configs are composed exactly as `sweep` composes them; the sweep-level tests (sim panel,
Ray) are in test_resume_extend_ray.py.
"""

from __future__ import annotations

import pytest

from pipeline import studies
from pipeline.config import compose_dict, load
from pipeline.endpoints.panels import materialize
from pipeline.store.manifest import Manifest
from pipeline.store.reader import RunDirError
from pipeline.sweep.history import session_entry, with_added_units, with_session
from pipeline.sweep.plan import build_plan, plan_table
from pipeline.sweep.resume import config_fingerprint
from pipeline.sweep.resume_change import (
    ConfigChange,
    PlannedPanel,
    classify_changes,
    extended_plan,
    inherited_not_run,
    new_specs,
)

BASE = ["+panel=sim", "sim.configs=1", "arms=[j,q]", "repeats=1"]


def panel_of(overrides: list[str]) -> PlannedPanel:
    cfg = load(overrides)
    study = studies.definition(cfg.study_name).configure(cfg.study)
    return PlannedPanel(tuple(study.arms()), {c.config_id: c for c in materialize(cfg).configs})


def classify(*extra: str) -> dict[str, str]:
    """key -> kind of each change `extra` makes to BASE on resume."""
    new = [*BASE, *extra]
    changes = classify_changes(compose_dict(BASE), compose_dict(new), panel_of(BASE), panel_of(new))
    return {c.key: c.kind for c in changes}


def test_more_repeats_extend_the_plan() -> None:
    assert classify("repeats=3") == {"repeats": "extends"}


def test_an_added_arm_extends_the_plan() -> None:
    assert classify("arms=[j,q,m]") == {"study.arms.m": "extends"}


def test_an_added_configuration_extends_the_plan() -> None:
    assert classify("sim.configs=3") == {"sim.configs": "extends"}


def test_retries_timeouts_probes_and_sim_infrastructure_change_only_the_session() -> None:
    changes = classify(
        "retry.request_attempts=2", "timeouts.request_s=9", "probe.samples=5", "sim.fault_rate=0.2"
    )
    assert set(changes.values()) == {"session"} and len(changes) == 4


def test_a_session_node_missing_from_an_older_run_is_a_session_change() -> None:
    old_config = {k: v for k, v in compose_dict(BASE).items() if k != "probe"}
    changes = classify_changes(old_config, compose_dict(BASE), panel_of(BASE), panel_of(BASE))
    assert [(c.key, c.before, c.kind) for c in changes] == [("probe", None, "session")]


@pytest.mark.parametrize(
    ("override", "key", "why"),
    [
        ("arms=[j]", "arms", "arm q is planned but no longer selected"),
        ("study.arms.j.output_tokens=900", "study.arms.j.output_tokens", "changes what"),
        ("seed=1", "seed", "changes what planned units run"),
        ("temperature=0.5", "temperature", "changes what planned units run"),
        ("sim.seed=8", "sim.seed", "changes what planned units run"),
        ("scenario=single_chunk", "study.scenario", "changes what planned units run"),
        ("sim.price_input_per_mtok=2", "sim.price_input_per_mtok", "configuration sim-00"),
    ],
)
def test_a_change_that_would_alter_planned_units_is_refused_naming_the_key(
    override: str, key: str, why: str
) -> None:
    with pytest.raises(RunDirError) as err:
        classify(override)
    message = str(err.value)
    assert f"resume cannot change {key}" in message and why in message
    assert "\n" not in message


def test_fewer_repeats_are_refused() -> None:
    new = [*BASE, "repeats=1"]
    old = [*BASE[:-1], "repeats=3"]
    with pytest.raises(RunDirError, match=r"cannot change repeats: 3 -> 1 would drop planned"):
        classify_changes(compose_dict(old), compose_dict(new), panel_of(old), panel_of(new))


def test_a_list_of_arm_names_may_only_grow_by_added_arms() -> None:
    old = PlannedPanel(("a", "b"), {})
    new = PlannedPanel(("a", "b", "c"), {})
    grown = classify_changes(
        {"study": {"policies": ["a", "b"]}}, {"study": {"policies": ["a", "b", "c"]}}, old, new
    )
    assert grown == (ConfigChange("study.policies", ["a", "b"], ["a", "b", "c"], "extends"),)
    with pytest.raises(RunDirError, match=r"study\.policies"):
        classify_changes(
            {"study": {"policies": ["a", "b"]}}, {"study": {"policies": ["b", "a", "c"]}}, old, new
        )


def test_the_extended_plan_keeps_every_planned_row_and_adds_the_new_units() -> None:
    configs = [("c", "m", "f")]
    old = plan_table(build_plan("run", configs, ["j", "q"], 1, 0, "williams"), {("c", "q"): "x"})
    wider = build_plan("run", [*configs, ("d", "m2", "f")], ["j", "q"], 2, 0, "williams")
    added = new_specs(old, wider)
    assert len(added) == len(wider) - old.num_rows == 6
    not_run = {("d", "j"): "probe:unreachable", **inherited_not_run(old)}
    plan = extended_plan(old, added, not_run)
    assert plan.slice(0, old.num_rows).equals(old)  # planned rows unchanged
    statuses = {
        (r["config_id"], r["arm"], r["repeat"]): r["not_run_reason"] for r in plan.to_pylist()
    }
    assert statuses[("c", "q", 1)] == "x"  # a new repeat of an excluded pair: same reason
    assert statuses[("d", "j", 0)] == "probe:unreachable"
    assert statuses[("c", "j", 1)] is None and statuses[("d", "q", 1)] is None


def manifest_of(config: dict[str, object], history: list[dict[str, object]]) -> Manifest:
    return Manifest(
        run_id="run",
        config=dict(config),
        config_fingerprint=config_fingerprint(config),
        started_at="2026-12-01T00:00:00Z",
        study="carrier",
        extra={"overrides": ["repeats=1"]},
        history=history,
    )


def test_each_session_and_its_changes_are_recorded_in_the_history() -> None:
    first = {"repeats": 1}
    start = manifest_of(first, [session_entry(0, ["repeats=1"], first)])
    change = ConfigChange("repeats", 1, 3, "extends")
    resumed = with_added_units(
        with_session(start, ["repeats=1", "repeats=3"], {"repeats": 3}, [change]), 4
    )
    assert resumed.config == {"repeats": 3}
    assert resumed.config_fingerprint == config_fingerprint({"repeats": 3})
    assert resumed.extra["overrides"] == ["repeats=1", "repeats=3"]
    assert [h["session"] for h in resumed.history] == [0, 1]
    assert resumed.history[0]["config"] == first
    assert resumed.history[1]["changes"] == [
        {"key": "repeats", "before": 1, "after": 3, "kind": "extends"}
    ]
    assert resumed.history[1]["added_units"] == 4


def test_a_manifest_from_before_history_reads_and_gets_its_first_session_rebuilt() -> None:
    old = manifest_of({"repeats": 1}, []).to_json()
    del old["history"]  # as written before the field existed
    manifest = Manifest.from_json(old)
    assert manifest.history == []
    resumed = with_session(manifest, ["repeats=1"], {"repeats": 1}, [])
    assert resumed.history[0]["reconstructed"] is True
    assert resumed.history[0]["started_at"] == "2026-12-01T00:00:00Z"
    assert resumed.history[1]["changes"] == []


def test_a_resume_adds_its_sim_counters_to_the_runs_instead_of_zeroing_them() -> None:
    from pipeline.sweep.history import with_session_counters

    first = {"sim-00": {"requests": 10, "faults": {"http_500": 2}, "served_ok": 8}}
    start = with_session_counters(manifest_of({}, [session_entry(0, [], {})]), first)
    resumed = with_session(start, [], {}, [])
    idle = {"sim-00": {"requests": 0, "faults": {}, "served_ok": 0}}
    later = {"sim-00": {"requests": 4, "faults": {"http_500": 1, "timeout": 1}, "served_ok": 2}}
    after_idle = with_session_counters(resumed, idle)
    assert after_idle.sim_counters == first
    total = with_session_counters(with_session(after_idle, [], {}, []), later).sim_counters
    assert total == {
        "sim-00": {"requests": 14, "faults": {"http_500": 3, "timeout": 1}, "served_ok": 10}
    }
    assert after_idle.history[-1]["sim_counters"] == idle


def test_a_study_key_added_after_the_run_was_made_is_no_change_of_its_units() -> None:
    old_config = compose_dict(BASE)
    old_config["study"] = {k: v for k, v in old_config["study"].items() if k != "scenario"}
    changes = classify_changes(old_config, compose_dict(BASE), panel_of(BASE), panel_of(BASE))
    assert [(c.key, c.kind) for c in changes] == [("study.scenario", "session")]
