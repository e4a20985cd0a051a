"""Fault soak: a sim sweep under the full infrastructure fault mix plus model faults.

Request-level retries are cut to 2 so that infrastructure faults survive them often enough to
invalidate whole trajectories (with 6 retries at fault rate 0.3 almost none would), which is
what exercises the trajectory re-queue.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness
from tests.reliability.tables import RunView, key_of, recount, view

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ATTEMPT_LIMIT = 3
SOAK = (
    "+panel=sim",
    "sim.configs=8",
    "arms=[j,q,m,x]",
    "repeats=2",
    "sim.fault_rate=0.3",
    "sim.model_faults=true",
    "sim.latency_s=0.01",
    "sim.stall_s=2",
    "timeouts.request_s=1",
    "retry.request_attempts=2",
    "retry.initial_wait_s=0.01",
    "retry.max_wait_s=0.05",
    f"retry.trajectory_attempts={ATTEMPT_LIMIT}",
)


@pytest.fixture(scope="module")
def soak_run(tmp_path_factory: pytest.TempPathFactory) -> RunView:
    h = SweepHarness()
    try:
        out: Path = tmp_path_factory.mktemp("soak")
        result = h.run([*SOAK, f"out_dir={out}"], timeout_s=SWEEP_TIMEOUT_S)
    finally:
        h.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.run_dir is not None
    run = view(result.run_dir)
    attempts = Counter(row["attempt"] for row in run.rows)
    print(f"fault soak: {result.wall_s:.1f}s wall, {len(run.rows)} rows, attempts {dict(attempts)}")
    print(f"fault soak counts: {run.manifest.counts}")
    return run


def test_every_planned_trajectory_ends_valid_invalid_or_not_run_with_a_reason(
    soak_run: RunView,
) -> None:
    finals = soak_run.finals()
    assert len(soak_run.plan) == 8 * 4 * 2
    for item in soak_run.plan:
        if item["status"] == "not_run":
            assert item["not_run_reason"], item
            continue
        final = finals[key_of(item)]  # KeyError: a planned trajectory has no row
        assert final["valid"] or final["invalid_reason"], final["row_id"]


def test_manifest_counts_add_up_to_the_plan_and_match_the_tables(soak_run: RunView) -> None:
    counts = soak_run.manifest.counts
    assert soak_run.manifest.status == "completed"
    assert counts is not None
    assert counts.planned == len(soak_run.plan)
    total = counts.valid + sum(counts.invalid.values()) + sum(counts.not_run.values())
    assert total + counts.pending == counts.planned
    assert counts.pending == 0
    valid, invalid, not_run, pending = recount(soak_run)
    assert (counts.valid, counts.invalid, counts.not_run, counts.pending) == (
        valid,
        invalid,
        not_run,
        pending,
    )


def test_infrastructure_invalid_trajectories_are_reattempted_within_the_limit(
    soak_run: RunView,
) -> None:
    attempts = [row["attempt"] for row in soak_run.rows]
    assert max(attempts) > 0, "no trajectory was re-attempted: the soak exercised nothing"
    assert max(attempts) < ATTEMPT_LIMIT
    finals = soak_run.finals()
    for row in soak_run.rows:
        if not row["valid"] and row["retryable"] and row["attempt"] + 1 < ATTEMPT_LIMIT:
            assert finals[key_of(row)]["attempt"] > row["attempt"], row["row_id"]
    assert not [dup for dup, n in soak_run.attempts().items() if n > 1]


def test_arm_behaviour_invalid_rows_are_never_reattempted(soak_run: RunView) -> None:
    finals = soak_run.finals()
    behaviour = [
        row
        for row in soak_run.rows
        if not row["valid"] and not row["invalid_reason"].startswith("infrastructure:")
    ]
    assert behaviour, "model faults produced no arm-behaviour invalid row"
    for row in behaviour:
        assert not row["retryable"], row["row_id"]
        assert finals[key_of(row)]["attempt"] == row["attempt"], f"{row['row_id']} re-attempted"


def test_parse_failures_stay_valid(soak_run: RunView) -> None:
    parsed_badly = [row for row in soak_run.rows if row["parse_failures"]]
    assert parsed_badly, "model faults produced no parse failure"
    assert any(row["valid"] for row in parsed_badly)
    for row in parsed_badly:
        reason = row["invalid_reason"] or ""
        assert "parse" not in reason, row["row_id"]
        if not row["valid"]:  # invalid for another cause, which the reason names
            assert reason.startswith("infrastructure:") or reason == "catch_up", reason


def test_the_sim_servers_injected_every_fault_kind(soak_run: RunView) -> None:
    seen: set[str] = set()
    for counters in soak_run.manifest.sim_counters.values():
        seen |= {kind for kind, n in counters["faults"].items() if n}
    assert {"http_500", "timeout", "connection_reset", "truncated_body", "error_body"} <= seen
