"""Golden tests of the check-level jobs: within-row dependence, carrier audit, failing answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from jobs.carrier.run_all import analyze
from tests.jobs.jobs_testdata import row, settings, write_run


def check(
    row_id: str,
    passed: bool,
    present: bool | None = None,
    outcome: str | None = None,
    stock: bool = False,
) -> dict[str, Any]:
    return {
        "row_id": row_id,
        "label": "x",
        "passed": passed,
        "present_in_carrier": present,
        "outcome": outcome or ("passed" if passed else "missing"),
        "stock_signature": stock,
    }


def test_icc_uses_checks_of_valid_final_rows_only(tmp_path: Path) -> None:
    # Valid final rows with two checks each: (1,1), (1,0), (0,0) -> ICC 0.5 (see test_jobs_stats).
    rows = [
        row("A", "j", 0, 2, checks_total=2, row_id="r1"),
        row("A", "j", 1, 1, checks_total=2, row_id="r2"),
        row("A", "j", 2, 0, checks_total=2, row_id="r3", attempt=2),
        row("A", "j", 2, 2, checks_total=2, row_id="r3-old", attempt=1),  # superseded attempt
        row("A", "j", 3, 2, checks_total=2, row_id="r4", valid=False, invalid_reason="catch_up"),
    ]
    checks = [
        check("r1", True),
        check("r1", True),
        check("r2", True),
        check("r2", False),
        check("r3", False),
        check("r3", False),
        check("r3-old", True),
        check("r3-old", True),
        check("r4", True),
        check("r4", True),
    ]
    write_run(tmp_path, rows, checks=checks)
    analyze(tmp_path, settings(["q_vs_j"]))
    dependence = json.loads((tmp_path / "analysis" / "dependence.json").read_text())
    assert dependence == {
        "icc": pytest.approx(0.5),
        "design_effect": pytest.approx(1.5),
        "effective_checks_per_row": pytest.approx(4 / 3),
        "checks_per_row": 2.0,
        "rows": 3,
        "checks": 6,
        "source": "checks",
        "small_sample": True,  # an ICC over 3 rows (jobs.small_sample.MIN_SPREAD_N)
    }


def audit_run(tmp_path: Path) -> Path:
    rows = [
        row("A", "j", 0, 1, checks_total=2, row_id="r1"),
        row("A", "j", 1, 1, checks_total=2, row_id="r2"),
        row("A", "q", 0, 2, checks_total=2, row_id="r3"),
        row("A", "q", 1, 0, checks_total=2, row_id="r4"),
    ]
    checks = [
        check("r1", True, True),
        check("r1", False, True),  # carrier held one, answer missed
        check("r2", True, False),
        check("r2", False, False),  # answered one absent from carrier
        check("r3", True, True),
        check("r3", True, True),  # agree
        check("r4", False, None),
        check("r4", False, None),  # presence not recorded
    ]
    return write_run(tmp_path, rows, checks=checks)


def test_carrier_audit_counts_both_discrepancies_over_audited_rows(tmp_path: Path) -> None:
    analyze(audit_run(tmp_path), settings(["q_vs_j"]))
    expected = pl.DataFrame(
        {
            "arm": ["j", "q"],
            "valid_rows": [2, 2],
            "audited_rows": [2, 1],
            "rows_counts_agree": [0, 1],
            "rows_carrier_held_answer_missed": [1, 0],
            "rows_answered_absent_from_carrier": [1, 0],
            "checks_carrier_held_answer_missed": [1, 0],
            "checks_answered_absent_from_carrier": [1, 0],
        },
        schema_overrides={"valid_rows": pl.Int64},
    ).cast(
        {
            c: pl.Int64
            for c in (
                "valid_rows",
                "audited_rows",
                "rows_counts_agree",
                "rows_carrier_held_answer_missed",
                "rows_answered_absent_from_carrier",
                "checks_carrier_held_answer_missed",
                "checks_answered_absent_from_carrier",
            )
        }
    )
    got = pl.read_parquet(tmp_path / "analysis" / "carrier_audit.parquet")
    assert_frame_equal(got, expected)


def test_failing_answers_are_abstaining_before_fabricating_before_missing(tmp_path: Path) -> None:
    rows = [
        row("A", "j", 0, 0, checks_total=2, row_id="abstain-flag", abstains=True),
        row("A", "j", 1, 0, checks_total=2, row_id="fabricate"),
        row("A", "j", 2, 0, checks_total=2, row_id="missing"),
        row("A", "j", 3, 2, checks_total=2, row_id="passes"),
        row("A", "j", 4, 0, checks_total=2, row_id="abstain-check"),
        row("A", "q", 0, 0, checks_total=2, row_id="no-checks"),
    ]
    checks = [
        check("abstain-flag", False),
        check("abstain-flag", False),
        check("fabricate", False, outcome="fabrication", stock=True),
        check("fabricate", False),
        check("missing", False),
        check("missing", False),
        check("passes", True),
        check("passes", True),
        check("abstain-check", False, outcome="abstention"),
        check("abstain-check", False, outcome="fabrication"),
    ]
    write_run(tmp_path, rows, checks=checks)
    analyze(tmp_path, settings(["q_vs_j"]))
    expected = pl.DataFrame(
        {
            "arm": ["j", "q"],
            "valid_rows": [5, 1],
            "failing_rows": [4, 1],
            "fabricating": [1, 0],
            "abstaining": [2, 0],
            "missing": [1, 0],
            "unclassified": [0, 1],
            "stock_signature_rows": [1, 0],
        },
    ).cast(
        {
            c: pl.Int64
            for c in (
                "valid_rows",
                "failing_rows",
                "fabricating",
                "abstaining",
                "missing",
                "unclassified",
                "stock_signature_rows",
            )
        }
    )
    assert_frame_equal(pl.read_parquet(tmp_path / "analysis" / "answers.parquet"), expected)


def test_without_checks_answers_fall_back_to_the_row_abstention_flag(tmp_path: Path) -> None:
    rows = [
        row("A", "j", 0, 0, abstains=True),
        row("A", "j", 1, 0, abstains=False),
        row("A", "q", 0, 14),
        row("A", "q", 1, 14),
    ]
    analyze(write_run(tmp_path, rows), settings(["q_vs_j"]))
    answers = pl.read_parquet(tmp_path / "analysis" / "answers.parquet").filter(
        pl.col("arm") == "j"
    )
    assert answers.select("failing_rows", "abstaining", "unclassified").row(0) == (2, 1, 1)
    audit = pl.read_parquet(tmp_path / "analysis" / "carrier_audit.parquet")
    assert audit.get_column("audited_rows").to_list() == [0, 0]
