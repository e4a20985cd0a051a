"""Issue 13 on the sim panel: a resume that extends the plan runs the new units and records the
change; a resume that would alter planned units is refused in one line before anything starts.

Before the fix, `sweep resume=RUN repeats=5 allow_config_change=true` exited 0, ran 0 units and
left the manifest at the old repeats with nothing recorded.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.store.manifest import load_manifest
from pipeline.store.reader import read_plan, read_table
from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness, SweepResult
from tests.store.layouts import CARRIER_LAYOUT

pytestmark = [pytest.mark.slow, pytest.mark.ray]

FIRST = ["+panel=sim", "sim.configs=1", "arms=[j,q]", "repeats=1", "sim.latency_s=0.01"]


def sweep(overrides: list[str]) -> SweepResult:
    h = SweepHarness()
    try:
        return h.run(overrides, timeout_s=SWEEP_TIMEOUT_S)
    finally:
        h.close()


def rows_of(run: Path) -> list[dict[str, object]]:
    return read_table(run, "rows", CARRIER_LAYOUT).to_pylist()


def test_resume_extends_the_plan_and_refuses_changes_to_planned_units(tmp_path: Path) -> None:
    first = sweep([*FIRST, f"out_dir={tmp_path}"])
    assert first.returncode == 0, first.stderr[-3000:]
    run = first.run_dir
    assert run is not None and len(rows_of(run)) == 2

    # more repeats: the two new units run, the two planned ones are kept as they were
    before = {r["row_id"]: r["started_at"] for r in rows_of(run)}
    more = sweep([f"resume={run}", "repeats=2", "allow_config_change=true"])
    assert more.returncode == 0, more.stderr[-3000:]
    rows = rows_of(run)
    assert len(rows) == 4 and all(r["valid"] for r in rows)
    assert {r["row_id"]: r["started_at"] for r in rows if r["row_id"] in before} == before
    manifest = load_manifest(run)
    assert manifest.config["repeats"] == 2
    assert manifest.counts is not None and manifest.counts.planned == 4
    assert [h["session"] for h in manifest.history] == [0, 1]
    assert manifest.history[1]["changes"] == [
        {"key": "repeats", "before": 1, "after": 2, "kind": "extends"}
    ]
    assert manifest.history[1]["added_units"] == 2
    assert "allow_config_change=true" not in manifest.extra["overrides"]

    # an added arm and an added configuration: probed, planned and run
    wider = sweep([f"resume={run}", "arms=[j,q,m]", "sim.configs=2", "allow_config_change=true"])
    assert wider.returncode == 0, wider.stderr[-3000:]
    plan = read_plan(run)
    assert plan is not None and plan.num_rows == 2 * 3 * 2
    rows = rows_of(run)
    assert len(rows) == 12 and all(r["valid"] for r in rows)
    manifest = load_manifest(run)
    assert {c["key"] for c in manifest.history[2]["changes"]} == {"study.arms.m", "sim.configs"}
    assert {p["config_id"] for p in manifest.probes} == {"sim-00", "sim-01"}

    # fewer repeats would drop planned units: refused, one line, nothing changes
    plan_before = (run / "plan.parquet").read_bytes()
    fewer = sweep([f"resume={run}", "repeats=1", "allow_config_change=true"])
    assert fewer.returncode == 2
    errors = [line for line in fewer.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "resume cannot change repeats: 2 -> 1" in errors[0], fewer.stderr
    assert "run directory:" not in fewer.stderr  # refused before anything started
    assert (run / "plan.parquet").read_bytes() == plan_before
    assert len(load_manifest(run).history) == 3
