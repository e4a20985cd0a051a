from __future__ import annotations

import polars as pl
from polars.testing import assert_frame_equal

from jobs.carrier.retention import carrier_retention


def test_retention_is_the_share_of_checks_present_in_the_final_carrier() -> None:
    with_checks = pl.DataFrame(
        {
            "config_id": ["c", "c", "c", "d"],
            "arm": ["x", "x", "m", "x"],
            "recall": [0.0, 0.5, 0.0, 1.0],
            "checks": [4, 4, 4, None],
            "presence_known": [4, 4, 4, None],
            "present": [4, 2, 0, None],
        }
    )
    expected = pl.DataFrame(
        {
            "config_id": ["c", "c"],
            "arm": ["m", "x"],
            "audited_rows": [1, 2],
            "mean_retention": [0.0, 0.75],
            "mean_recall": [0.0, 0.25],
        }
    )
    assert_frame_equal(carrier_retention(with_checks), expected)


def test_rows_without_full_presence_are_not_audited() -> None:
    with_checks = pl.DataFrame(
        {
            "config_id": ["c"],
            "arm": ["x"],
            "recall": [0.0],
            "checks": [4],
            "presence_known": [3],
            "present": [3],
        }
    )
    assert carrier_retention(with_checks).is_empty()


def test_report_states_the_sweep_accounting_from_the_manifest() -> None:
    from jobs.carrier.report_sections import run_status

    manifest = {
        "status": "budget_exhausted",
        "counts": {
            "planned": 5,
            "valid": 2,
            "invalid": {"catch_up": 1},
            "not_run": {"budget_exhausted": 2},
            "pending": 0,
        },
    }
    (line, _) = run_status(manifest)
    assert "budget_exhausted" in line and "Planned trajectories 5: valid 2" in line
    assert "catch_up 1" in line and "budget_exhausted 2" in line
    assert run_status(None) == []
