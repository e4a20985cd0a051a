"""Issue 32 §20: execution settings are not the experiment.

A resume may change rates, concurrency, timeouts, retries and the sim's infrastructure
(`sim.latency_s`, `sim.concurrency` ...) without `allow_config_change=true`, and the manifest
records each session's values. Before, `resume=RUN sim.concurrency=2` was refused as a config
change. Configs are composed exactly as `sweep` composes them.
"""

from __future__ import annotations

from typing import Any

import pytest

from pipeline.config import compose_dict
from pipeline.store.manifest import Manifest
from pipeline.store.reader import RunDirError
from pipeline.sweep.history import session_entry, with_session
from pipeline.sweep.resume import check_resume_compatible, config_fingerprint, execution_settings

BASE = ["+panel=sim", "sim.configs=1", "arms=[j,q]", "repeats=1"]
EXECUTION = [
    "sim.concurrency=2",
    "sim.latency_s=0.4",
    "retry.request_attempts=2",
    "retry.trajectory_attempts=5",
    "timeouts.request_s=9",
    "fail_on.invalid_share=0.5",
]


def manifest_of(config: dict[str, Any]) -> Manifest:
    return Manifest(
        run_id="run",
        config=config,
        config_fingerprint=config_fingerprint(config),
        started_at="2026-12-01T00:00:00Z",
        study="carrier",
        fixture_sha256="a" * 64,
        history=[session_entry(0, BASE, config)],
    )


def resume(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return check_resume_compatible(
        manifest_of(old), config_fingerprint(new), "a" * 64, False, new_config=new
    )


def test_a_resume_may_change_execution_settings_without_allow_config_change() -> None:
    assert resume(compose_dict(BASE), compose_dict([*BASE, *EXECUTION])) == []


def test_a_resume_may_change_a_configurations_rate_and_concurrency_limits() -> None:
    old = {"repeats": 1, "panel": {"configs": [{"id": "a", "limits": {"rpm": 60}}]}}
    new = {
        "repeats": 1,
        "panel": {"configs": [{"id": "a", "limits": {"rpm": 6, "concurrency": 2}}]},
    }
    assert resume(old, new) == []


def test_an_execution_change_beside_a_measured_one_is_still_refused() -> None:
    with pytest.raises(RunDirError, match=r"changed keys seed\b.*allow_config_change"):
        resume(compose_dict(BASE), compose_dict([*BASE, "sim.concurrency=2", "seed=1"]))


def test_each_session_records_its_execution_settings_in_the_history() -> None:
    old, new = compose_dict(BASE), compose_dict([*BASE, *EXECUTION])
    first = manifest_of(old)
    assert first.history[0]["execution"]["sim.concurrency"] == 64
    resumed = with_session(first, [*BASE, *EXECUTION], new, [])
    second = resumed.history[1]["execution"]
    assert second["sim.concurrency"] == 2
    assert second["sim.latency_s"] == 0.4
    assert second["retry"]["request_attempts"] == 2
    assert second["timeouts"]["request_s"] == 9
    assert second["fail_on"] == {"invalid_share": 0.5}
    assert execution_settings(new) == second
