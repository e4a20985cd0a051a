"""Carrier run directories whose decision is known by construction, analysed by the real jobs.

`carrier_run` writes one row per (configuration, arm, repeat) through the store, with its
checks (the first `passed` of CHECKS pass; the first `present` are held in the final carrier),
the plan and a completed manifest carrying the input digest, then runs the carrier's
analysis and report (`pipeline.studies.analyze_and_report`) with the q_vs_j contrast.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline import studies
from pipeline.store import load_manifest, write_batch, write_manifest
from tests.jobs.jobs_testdata import settings
from tests.view.rundirs import finish_run, full, study_row

CHECKS = 14
FIXTURE_A = "a" * 64
FIXTURE_B = "b" * 64

# (config_id, family) -> arm -> one (passed, present) per repeat
Cells = Mapping[tuple[str, str], Mapping[str, Sequence[tuple[int, int]]]]


def _records(
    cells: Cells, simulated: bool
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    rows: list[dict[str, object]] = []
    checks: list[dict[str, object]] = []
    for (config_id, family), arms in cells.items():
        for arm, repeats in arms.items():
            for repeat, (passed, present) in enumerate(repeats):
                row = study_row(
                    "carrier",
                    run_id="run-d",
                    config_id=config_id,
                    model=f"{family}-model-{config_id}",
                    family=family,
                    arm=arm,
                    repeat=repeat,
                    schedule_position=len(rows),
                    simulated=simulated,
                    requests=None,
                    recall=passed / CHECKS,
                    checks_passed=passed,
                    checks_total=CHECKS,
                    parse_failures=0,
                )
                rows.append(row)
                checks += [
                    {
                        "run_id": "run-d",
                        "row_id": row["row_id"],
                        "label": f"fact {i}",
                        "passed": i < passed,
                        "present_in_carrier": i < present,
                        "outcome": "passed" if i < passed else "missing",
                    }
                    for i in range(CHECKS)
                ]
    return rows, checks


def carrier_run(
    run_dir: Path, cells: Cells, *, simulated: bool = False, fixture: str = FIXTURE_A
) -> Path:
    """The run written, finished and analysed (module docstring)."""
    layout = studies.layout(studies.definition("carrier"))
    rows, checks = _records(cells, simulated)
    run_dir.mkdir(parents=True, exist_ok=True)
    write_batch(
        run_dir,
        part_name="p0",
        rows=rows,
        children={"checks": full(layout, "checks", checks)},
        layout=layout,
    )
    finish_run(run_dir, "run-d", "carrier")
    write_manifest(run_dir, dataclasses.replace(load_manifest(run_dir), fixture_sha256=fixture))
    studies.analyze_and_report(studies.definition("carrier"), run_dir, settings(["q_vs_j"]))
    return run_dir


def q_beats_j() -> Cells:
    """Six configurations in two families; q recalls (10 + i % 3)/14 in configuration i and j
    4/14 everywhere, so q leads by (6 + i % 3)/14 in every configuration."""
    return {
        (f"c{i}", "alpha" if i < 3 else "beta"): {
            "j": [(4, 6)] * 3,
            "q": [(10 + i % 3, 12)] * 3,
        }
        for i in range(6)
    }


def floor() -> Cells:
    """Five configurations where nothing is recalled (one value once); x holds 8 + i of 14
    values in its final carrier, m 2: x leads the retention by (6 + i)/14."""
    return {
        (f"c{i}", "tiny"): {
            "m": [(0, 2)] * 3,
            "x": [(1 if i == 0 else 0, 8 + i)] + [(0, 8 + i)] * 2,
        }
        for i in range(5)
    }


QJ_EFFECTS = (2, -1, 1, -2, 2)
"""Per configuration, q recalls 7 + e and j 7 of 14: a mean lead of 2/70 the t interval
cannot tell from 0 at n = 5."""


def no_difference() -> Cells:
    return {
        (f"c{i}", "mid"): {"j": [(7, 7)] * 2, "q": [(7 + e, 7)] * 2}
        for i, e in enumerate(QJ_EFFECTS)
    }
