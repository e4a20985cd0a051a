"""Outcome accounting (final-attempt rule, invariant), redaction and manifest round trip."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pipeline.store import manifest as manifest_module
from pipeline.store.manifest import (
    Manifest,
    OutcomeCounts,
    final_attempts,
    load_manifest,
    outcome_counts,
    redact,
    write_manifest,
)
from pipeline.store.provenance import GitRevision
from pipeline.store.reader import RunDirError
from pipeline.store.schemas import PLAN
from tests.store.layouts import ROWS


def plan(
    *keys: tuple[str, str, int], not_run: dict[tuple[str, str], str] | None = None
) -> pa.Table:
    records = []
    for config_id, arm, repeat in keys:
        reason = (not_run or {}).get((config_id, arm))
        records.append(
            dict.fromkeys(PLAN.names)
            | {
                "config_id": config_id,
                "arm": arm,
                "execution_group": 0,
                "repeat": repeat,
                "status": "not_run" if reason else "pending",
                "not_run_reason": reason,
            }
        )
    return pa.Table.from_pylist(records, schema=PLAN)


def row(
    config_id: str,
    arm: str,
    repeat: int,
    attempt: int = 0,
    *,
    valid: bool = True,
    reason: str | None = None,
    retryable: bool = False,
) -> dict[str, Any]:
    return dict.fromkeys(ROWS.names) | {
        "row_id": f"{config_id}/{arm}/g0/r{repeat}/a{attempt}",
        "config_id": config_id,
        "arm": arm,
        "execution_group": 0,
        "repeat": repeat,
        "attempt": attempt,
        "valid": valid,
        "invalid_reason": reason,
        "retryable": retryable,
    }


def rows(*records: dict[str, Any]) -> pa.Table:
    return pa.Table.from_pylist(list(records), schema=ROWS)


def test_outcome_counts_sorts_every_planned_key_into_one_outcome() -> None:
    the_plan = plan(
        ("a", "j", 0),
        ("a", "q", 0),
        ("a", "j", 1),
        ("a", "q", 1),
        ("b", "j", 0),
        ("b", "q", 0),
        ("c", "j", 0),
        not_run={("b", "j"): "probe_rejected", ("b", "q"): "probe_rejected"},
    )
    the_rows = rows(
        row("a", "j", 0),
        row("a", "q", 0, valid=False, reason="catch_up"),
        row("a", "j", 1, valid=False, reason="transport", retryable=True),
    )
    counts = outcome_counts(the_plan, the_rows)
    assert counts == OutcomeCounts(
        planned=7,
        valid=1,
        invalid={"catch_up": 1, "transport": 1},
        not_run={"probe_rejected": 2},
        pending=2,
    )


def test_outcome_counts_uses_the_final_attempt_only() -> None:
    the_plan = plan(("a", "j", 0), ("a", "q", 0))
    the_rows = rows(
        row("a", "j", 0, 0, valid=False, reason="timeout", retryable=True),
        row("a", "j", 0, 2, valid=True),
        row("a", "j", 0, 1, valid=False, reason="timeout", retryable=True),
        row("a", "q", 0, 0, valid=True),
        row("a", "q", 0, 1, valid=False, reason="http_503", retryable=True),
    )
    counts = outcome_counts(the_plan, the_rows)
    assert (counts.valid, counts.invalid, counts.pending) == (1, {"http_503": 1}, 0)


def test_outcome_counts_can_count_unfinished_keys_as_not_run() -> None:
    counts = outcome_counts(
        plan(("a", "j", 0), ("a", "q", 0)), rows(row("a", "j", 0)), unfinished_as="budget_stop"
    )
    assert (counts.pending, counts.not_run) == (0, {"budget_stop": 1})


def test_outcome_counts_refuses_rows_outside_the_plan() -> None:
    with pytest.raises(RunDirError, match="not in the plan"):
        outcome_counts(plan(("a", "j", 0)), rows(row("z", "j", 0)))


def test_outcome_counts_invariant_is_enforced() -> None:
    with pytest.raises(AssertionError, match="do not add up"):
        OutcomeCounts(planned=3, valid=1, invalid={"x": 1}, not_run={}, pending=0)


def test_duplicate_attempt_is_a_run_dir_error() -> None:
    with pytest.raises(RunDirError, match="two rows share"):
        final_attempts(rows(row("a", "j", 0, 1), row("a", "j", 0, 1)))


def test_redact_drops_credentials_but_keeps_env_var_names() -> None:
    config = {
        "endpoint": {"api_key_env": "OPENROUTER_API_KEY", "api_key": "sk-123", "model": "m"},
        "headers": [{"Authorization": "Bearer sk-123"}, {"X-Note": "Bearer sk-456"}],
        "OPENAI_APIKEY": "sk-789",
    }
    assert redact(config) == {
        "endpoint": {"api_key_env": "OPENROUTER_API_KEY", "model": "m"},
        "headers": [{}, {"X-Note": "<redacted>"}],
    }


def test_manifest_round_trips_through_json_and_redacts_on_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manifest_module, "git_revision", lambda: GitRevision("c0ffee", False))
    manifest = Manifest.start(
        "run-1",
        {"repeats": 2, "endpoint": {"api_key_env": "KEY_VAR"}},
        config_fingerprint="f" * 64,
        study="carrier",
        fixture_sha256="a" * 64,
        provenance={"conf/config.yaml": "b" * 64},
    )
    manifest = manifest.finish(
        "completed", OutcomeCounts(planned=2, valid=1, invalid={}, not_run={"x": 1}, pending=0)
    )
    extra = {"inputs": {"api_key": "sk-leak", "ok": 1}}
    manifest = Manifest(**{**manifest.__dict__, "extra": extra})
    write_manifest(tmp_path, manifest)
    assert "sk-leak" not in (tmp_path / "manifest.json").read_text()
    loaded = load_manifest(tmp_path)
    assert loaded.counts == manifest.counts
    assert loaded.extra == {"inputs": {"ok": 1}}
    assert (loaded.status, loaded.study) == ("completed", "carrier")
    assert loaded.versions["python"]
    assert loaded.started_at.endswith("Z")
    assert (loaded.git_sha, loaded.git_dirty) == ("c0ffee", False)


def test_load_manifest_of_a_corrupt_file_is_a_run_dir_error(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(RunDirError, match="corrupt"):
        load_manifest(tmp_path)


def test_load_manifest_with_unknown_keys_is_a_run_dir_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manifest_module, "git_revision", lambda: GitRevision(None, None))
    manifest = Manifest.start("r", {}, config_fingerprint="f", study="carrier")
    write_manifest(tmp_path, manifest)
    text = (tmp_path / "manifest.json").read_text().replace('"run_id"', '"bogus": 1, "run_id"')
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(RunDirError, match="bogus"):
        load_manifest(tmp_path)


def test_nothing_ran_is_a_status_that_round_trips_with_every_trajectory_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manifest_module, "git_revision", lambda: GitRevision(None, None))
    counts = OutcomeCounts(
        planned=4, valid=0, invalid={}, not_run={"probe:unreachable": 4}, pending=0
    )
    manifest = Manifest.start("run-1", {}, config_fingerprint="f" * 64, study="carrier").finish(
        "nothing_ran", counts
    )
    write_manifest(tmp_path, manifest)
    loaded = load_manifest(tmp_path)
    assert (loaded.status, loaded.counts) == ("nothing_ran", counts)


def _manifest_with(extra: dict[str, object]) -> Manifest:
    return Manifest(
        run_id="r",
        config={},
        config_fingerprint="0" * 64,
        started_at="2026-01-01T00:00:00Z",
        study="carrier",
        extra=extra,
    )


def test_an_unknown_extra_key_is_a_bug_when_written(tmp_path: Path) -> None:
    """Issue 18: the manifest's `extra` is typed, a schema per key, not a bag."""
    with pytest.raises(ValueError, match=r"extra\.colour is not a manifest key"):
        write_manifest(tmp_path, _manifest_with({"colour": "red"}))


def test_an_extra_value_of_the_wrong_type_is_a_bug_when_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"extra\.overrides must be a list of strings"):
        write_manifest(tmp_path, _manifest_with({"overrides": "+panel=sim"}))


def test_an_edited_extra_is_one_line_when_read(tmp_path: Path) -> None:
    import json

    write_manifest(tmp_path, _manifest_with({"simulated": True}))
    data = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    data["extra"]["simulated"] = "yes"
    (tmp_path / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(RunDirError, match=r"extra\.simulated must be a boolean, not str"):
        load_manifest(tmp_path)
