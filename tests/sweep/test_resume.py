"""The resume diff, duplicate detection, config fingerprint and the compatibility check."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from pipeline.store.manifest import Manifest
from pipeline.store.reader import RunDirError
from pipeline.study import UnitKey
from pipeline.sweep.plan import build_plan, plan_table
from pipeline.sweep.resume import (
    NextAttempt,
    check_resume_compatible,
    config_fingerprint,
    resume_diff,
    specs_to_run,
)
from tests.store.layouts import ROWS

SPECS = build_plan("run", [("c", "m", "f")], ["j", "q"], 3, 0, "williams")
PLAN = plan_table(SPECS, {})


def key(arm: str, repeat: int) -> UnitKey:
    return UnitKey("c", arm, 0, repeat)


def row(
    arm: str, repeat: int, attempt: int, *, valid: bool, retryable: bool = False
) -> dict[str, Any]:
    return dict.fromkeys(ROWS.names) | {
        "row_id": f"c/{arm}/g0/r{repeat}/a{attempt}",
        "config_id": "c",
        "arm": arm,
        "execution_group": 0,
        "repeat": repeat,
        "attempt": attempt,
        "valid": valid,
        "invalid_reason": None if valid else ("timeout" if retryable else "catch_up"),
        "retryable": retryable,
    }


def rows(*records: dict[str, Any]) -> pa.Table:
    return pa.Table.from_pylist(list(records), schema=ROWS)


def test_resume_diff_classifies_each_key_by_its_final_attempt() -> None:
    state = resume_diff(
        PLAN,
        rows(
            row("j", 0, 0, valid=True),  # done: valid
            row("q", 0, 0, valid=False),  # done: arm-invalid is never retried
            row("j", 1, 0, valid=False, retryable=True),  # retry as attempt 1
            row("q", 1, 0, valid=False, retryable=True),
            row("q", 1, 1, valid=False, retryable=True),
            row("q", 1, 2, valid=False, retryable=True),  # done: attempts exhausted
        ),
        attempt_limit=3,
    )
    assert set(state.done) == {key("j", 0), key("q", 0), key("q", 1)}
    assert state.retry == (NextAttempt(key("j", 1), 1),)
    assert set(state.never_run) == {key("j", 2), key("q", 2)}
    assert state.excluded == ()


def test_a_valid_retry_makes_the_key_done() -> None:
    state = resume_diff(
        PLAN,
        rows(row("j", 0, 0, valid=False, retryable=True), row("j", 0, 1, valid=True)),
        attempt_limit=3,
    )
    assert key("j", 0) in state.done
    assert state.retry == ()


def test_attempt_limit_one_never_retries() -> None:
    state = resume_diff(PLAN, rows(row("j", 0, 0, valid=False, retryable=True)), attempt_limit=1)
    assert key("j", 0) in state.done


def test_not_run_plan_keys_are_excluded_not_owed() -> None:
    plan = plan_table(SPECS, {("c", "q"): "probe_rejected"})
    state = resume_diff(plan, rows(), attempt_limit=3)
    assert set(state.excluded) == {key("q", r) for r in range(3)}
    assert set(state.never_run) == {key("j", r) for r in range(3)}


def test_duplicate_key_and_attempt_is_a_run_dir_error() -> None:
    duplicated = rows(row("j", 0, 0, valid=True), row("j", 0, 0, valid=True))
    with pytest.raises(RunDirError, match="two rows share"):
        resume_diff(PLAN, duplicated, attempt_limit=3)


def test_specs_to_run_carries_the_next_attempt_number() -> None:
    state = resume_diff(PLAN, rows(row("j", 0, 0, valid=False, retryable=True)), attempt_limit=3)
    todo = {s.key: s for s in specs_to_run(SPECS, state)}
    assert len(todo) == 6
    assert todo[key("j", 0)].attempt == 1
    assert todo[key("j", 0)].row_id == "c/j/g0/r0/a1"
    assert todo[key("q", 2)].attempt == 0


def test_fingerprint_changes_on_a_real_change_and_not_on_run_local_keys() -> None:
    config = {"repeats": 2, "arms": {"q": {"output_tokens": 900}}, "out_dir": "runs"}
    base = config_fingerprint(config)
    assert config_fingerprint(config | {"out_dir": "elsewhere", "resume": "runs/x"}) == base
    assert config_fingerprint(config | {"budget": {"usd": 5}, "progress": False}) == base
    assert config_fingerprint(config | {"repeats": 3}) != base
    assert config_fingerprint(config | {"arms": {"q": {"output_tokens": 901}}}) != base


def test_fingerprint_ignores_key_order() -> None:
    assert config_fingerprint({"a": 1, "b": {"c": 2, "d": 3}}) == config_fingerprint(
        {"b": {"d": 3, "c": 2}, "a": 1}
    )


def manifest(config: dict[str, Any]) -> Manifest:
    return Manifest(
        run_id="run",
        config=config,
        config_fingerprint=config_fingerprint(config),
        started_at="2026-11-29T00:00:00Z",
        study="carrier",
        fixture_sha256="a" * 64,
    )


def test_resume_under_another_config_is_refused_with_the_changed_key() -> None:
    old, new = {"repeats": 2, "seed": 1}, {"repeats": 4, "seed": 1}
    with pytest.raises(RunDirError, match=r"another config: changed keys repeats.*allow_config"):
        check_resume_compatible(
            manifest(old), config_fingerprint(new), "a" * 64, False, new_config=new
        )


def test_resume_under_another_fixture_is_refused() -> None:
    config = {"repeats": 2}
    with pytest.raises(RunDirError, match="another fixture"):
        check_resume_compatible(manifest(config), config_fingerprint(config), "b" * 64, False)


def test_allow_change_overrides_and_reports_the_difference() -> None:
    old, new = {"repeats": 2}, {"repeats": 4}
    notes = check_resume_compatible(manifest(old), config_fingerprint(new), "a" * 64, True)
    assert len(notes) == 1
    assert "another config" in notes[0]


def test_same_config_and_fixture_resume_cleanly() -> None:
    config = {"repeats": 2}
    assert (
        check_resume_compatible(
            manifest(config), config_fingerprint(config | {"out_dir": "x"}), "a" * 64, False
        )
        == []
    )


def test_a_key_added_to_the_config_after_the_run_was_made_is_no_change() -> None:
    old, new = {"repeats": 2, "study": {"a": 1}}, {"repeats": 2, "study": {"a": 1, "added": 3}}
    notes = check_resume_compatible(
        manifest(old), config_fingerprint(new), "a" * 64, False, new_config=new
    )
    assert notes == []
