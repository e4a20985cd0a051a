"""Issue 32 §19: `fail_on.invalid_share=F` makes a run whose share of infrastructure-invalid
final units is above F exit 5 with one line (a CI gate, as inspect's fail-on-error).

Before it, a run with 7 of 8 units infrastructure-invalid exited 0 ("completed").
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config.schema import FailOnConfig, RunConfig
from pipeline.config.strict import ConfigError
from pipeline.store.manifest import OutcomeCounts
from pipeline.sweep import summary

REPORT = Path("runs/r/analysis/report.md")
SEVEN_OF_EIGHT = OutcomeCounts(8, 1, {"infrastructure:transport": 7}, {}, 0)


def test_fail_on_invalid_share_is_off_by_default_and_a_share_between_0_and_1() -> None:
    assert RunConfig().fail_on.invalid_share is None
    for bad in (-0.1, 1.5):
        with pytest.raises(ConfigError, match=r"fail_on\.invalid_share"):
            FailOnConfig(invalid_share=bad)


def test_seven_of_eight_infrastructure_invalid_above_the_share_exits_5_with_one_line() -> None:
    line = summary.invalid_share_failure(SEVEN_OF_EIGHT, 0.5, REPORT)
    assert summary.EXIT_INVALID_SHARE == 5
    assert line == (
        "error: 7 of 8 final units are infrastructure-invalid (87.5%), above "
        "fail_on.invalid_share=0.5 (infrastructure:transport 7); report: "
        "runs/r/analysis/report.md"
    )


def test_off_at_or_below_the_share_or_when_the_invalid_units_are_the_arms_own() -> None:
    assert summary.invalid_share_failure(SEVEN_OF_EIGHT, None, REPORT) is None  # off
    assert summary.invalid_share_failure(SEVEN_OF_EIGHT, 0.875, REPORT) is None  # not above
    arms_own = OutcomeCounts(8, 1, {"catch_up": 6, "rejected:auth": 1}, {}, 0)
    assert summary.invalid_share_failure(arms_own, 0.0, REPORT) is None  # data, not faults


def test_the_share_is_over_units_that_have_a_final_attempt_not_units_never_run() -> None:
    budget_stop = OutcomeCounts(10, 1, {"infrastructure:timeout": 1}, {"budget_exhausted": 8}, 0)
    line = summary.invalid_share_failure(budget_stop, 0.4, None)
    assert line == (
        "error: 1 of 2 final units are infrastructure-invalid (50.0%), above "
        "fail_on.invalid_share=0.4 (infrastructure:timeout 1)"
    )
