"""RunSession: rows/ is read once per session; the Sink's commits are counted from memory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pipeline.store.manifest import Manifest, OutcomeCounts, load_manifest
from pipeline.store.parts import part_name, write_batch, write_plan
from pipeline.store.reader import read_plan
from pipeline.study import UnitSpec
from pipeline.sweep import session as session_module
from pipeline.sweep.plan import build_plan, plan_table
from pipeline.sweep.session import RunSession
from pipeline.sweep.sink import Sink
from tests.store.layouts import CARRIER_LAYOUT
from tests.sweep.rowfactory import records_for, row_for

ATTEMPTS = 3
SPECS = build_plan("run", [("c", "m", "f")], ["j", "q"], 3, 0, "williams")
BY_KEY = {(s.arm, s.repeat): s for s in SPECS}


def spec(arm: str, repeat: int, attempt: int = 0) -> UnitSpec:
    base = BY_KEY[(arm, repeat)]
    return UnitSpec(**{**base.__dict__, "attempt": attempt})


def prior_rows() -> list[dict[str, Any]]:
    """An earlier session's rows: j/r0 valid, q/r0 invalid by the arm, j/r1 retryable ($1 each)."""
    return [
        row_for(spec("j", 0), valid=True, cost=1.0),
        row_for(spec("q", 0), valid=False, reason="catch_up", cost=1.0),
        row_for(
            spec("j", 1), valid=False, reason="infrastructure:timeout", retryable=True, cost=1.0
        ),
    ]


def make_run_dir(tmp_path: Path) -> Path:
    write_plan(tmp_path, plan_table(SPECS, {}))
    rows = prior_rows()
    name = part_name(0, [r["row_id"] for r in rows])
    write_batch(tmp_path, part_name=name, rows=rows, children={}, layout=CARRIER_LAYOUT)
    return tmp_path


def manifest() -> Manifest:
    return Manifest(
        run_id="run",
        config={},
        config_fingerprint="f",
        started_at="2026-01-01T00:00:00Z",
        study="carrier",
    )


@pytest.fixture
def rows_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every table RunSession reads through read_table, in order."""
    calls: list[str] = []
    real = session_module.read_table

    def counting(run_dir: Path, table: str, layout: Any) -> pa.Table:
        calls.append(table)
        return real(run_dir, table, layout)

    monkeypatch.setattr(session_module, "read_table", counting)
    return calls


def open_session(run_dir: Path) -> RunSession:
    """A session on `run_dir`, handed its plan as `prepare` hands a resumed run's."""
    return RunSession(run_dir, CARRIER_LAYOUT, manifest(), ATTEMPTS, plan=read_plan(run_dir))


def keys(specs: list[UnitSpec]) -> set[tuple[str, int, int]]:
    return {(s.arm, s.repeat, s.attempt) for s in specs}


def test_rows_are_read_once_per_session_across_owed_specs_spent_and_finish(
    tmp_path: Path, rows_reads: list[str]
) -> None:
    session = open_session(make_run_dir(tmp_path))
    owed = session.owed_specs()
    assert keys(owed) == {("j", 1, 1), ("j", 2, 0), ("q", 1, 0), ("q", 2, 0)}
    assert session.spent() == {"cost_usd": 3.0, "requests": 12.0, "attempts": 3}
    session.owed_specs()
    session.spent()
    session.finish("stopped", {})
    assert rows_reads == ["rows", "requests"]  # each once, at open


def test_rows_the_sink_commits_are_counted_without_reading_them_back(
    tmp_path: Path, rows_reads: list[str]
) -> None:
    run_dir = make_run_dir(tmp_path)
    session = open_session(run_dir)
    sink = Sink(run_dir, "run", CARRIER_LAYOUT, on_commit=session.add_rows)
    sink.add(records_for(spec("j", 1, attempt=1), valid=True, cost=0.5))
    sink.add(records_for(spec("q", 1), valid=True, cost=0.5))
    assert session.spent()["attempts"] == 3  # buffered, not committed: not yet counted
    sink.flush()
    assert session.spent() == {"cost_usd": 4.0, "requests": 20.0, "attempts": 5}
    assert keys(session.owed_specs()) == {("j", 2, 0), ("q", 2, 0)}
    closed = session.finish("stopped", {})
    assert closed.counts == OutcomeCounts(
        planned=6, valid=3, invalid={"catch_up": 1}, not_run={"stopped": 2}, pending=0
    )
    assert rows_reads == ["rows", "requests"]  # each once, at open


def test_a_planned_session_keeps_its_plan_as_stored_without_reading_it_back(
    tmp_path: Path,
) -> None:
    session = RunSession(tmp_path, CARRIER_LAYOUT, manifest(), ATTEMPTS, plan=None)
    session.set_plan(plan_table(list(reversed(SPECS)), {}))
    stored = read_plan(tmp_path)
    assert stored is not None and session.plan is not None
    assert session.plan.equals(stored)  # cast and sorted by key, as plan.parquet holds it
    (tmp_path / "plan.parquet").unlink()  # the session answers from memory
    assert len(session.owed_specs()) == len(SPECS)


def test_finish_writes_done_plan_statuses_and_the_manifest_counts(tmp_path: Path) -> None:
    run_dir = make_run_dir(tmp_path)
    session = open_session(run_dir)
    session.finish("stopped", {"aborted": True})
    plan = read_plan(run_dir)
    assert plan is not None
    statuses = {
        (r["arm"], r["repeat"]): r["status"]
        for r in plan.select(["arm", "repeat", "status"]).to_pylist()
    }
    # j/r0 valid and q/r0 arm-invalid are final; j/r1 is owed a retry; the rest never ran
    assert statuses == {
        ("j", 0): "done",
        ("q", 0): "done",
        ("j", 1): "pending",
        ("j", 2): "pending",
        ("q", 1): "pending",
        ("q", 2): "pending",
    }
    loaded = load_manifest(run_dir)
    assert (loaded.status, loaded.extra) == ("stopped", {"aborted": True})
    assert loaded.finished_at is not None
    assert loaded.counts == OutcomeCounts(
        planned=6,
        valid=1,
        invalid={"catch_up": 1, "infrastructure:timeout": 1},
        not_run={"stopped": 3},
        pending=0,
    )
