"""A plan over `limits.max_units` is refused before anything starts, naming its size; the plan
is built in chunks that a signal can stop (issue 32 §6).

`repeats=1000000000` grew the driver to 23.4 GB until the kernel killed it, SIGTERM was
ignored while the plan was built, and the run dir was left `running` with no plan. The size is
now computed arithmetically (configurations x arms x execution groups x repeats) before a unit
is materialised.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.sweep.plan import build_plan, iter_plan, plan_table
from pipeline.sweep.plan_bounds import PlanStopped, check_plan_size, planned_units
from pipeline.usererror import UserError

SIM = ["sweep", "+panel=sim", "sim.configs=2", "arms=[j,q]", "scenario=small"]


def _one_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err
    assert err[0].startswith("error: ")
    return err[0]


def test_a_plan_over_limits_max_units_is_refused_in_one_line_naming_its_size(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_error(capsys, [*SIM, "repeats=3", "limits.max_units=10", f"out_dir={tmp_path}"])
    assert "12 units" in line  # 2 configurations x 2 arms x 1 group x 3 repeats
    assert "2 configurations x 2 arms x 1 execution group x 3 repeats" in line
    assert "limits.max_units=10" in line
    assert not any(tmp_path.iterdir())  # no run directory


def test_a_billion_repeats_is_refused_at_once_under_the_default_bound(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_error(capsys, [*SIM, "repeats=1000000000", f"out_dir={tmp_path}"])
    assert "4,000,000,000 units" in line and "limits.max_units=1,000,000" in line
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("value", ["0", "-5"])
def test_limits_max_units_has_a_range(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    line = _one_error(capsys, [*SIM, f"limits.max_units={value}", f"out_dir={tmp_path}"])
    assert "limits.max_units must be at least 1" in line


def test_the_planned_count_is_arithmetic_and_the_bound_is_inclusive() -> None:
    assert planned_units(configs=3, arms=4, groups=2, repeats=5) == 120
    assert check_plan_size(configs=1, arms=2, groups=1, repeats=5, max_units=10) == 10
    with pytest.raises(UserError, match="11 units"):
        check_plan_size(configs=1, arms=1, groups=1, repeats=11, max_units=10)


def test_the_plan_is_lazy_equal_to_the_list_and_a_stop_between_chunks_ends_it() -> None:
    configs = [("c1", "m1", "f"), ("c2", "m2", "f")]
    arms = ["j", "q", "m"]
    assert list(iter_plan("r", configs, arms, 7, 0, "williams")) == build_plan(
        "r", configs, arms, 7, 0, "williams"
    )
    # a billion repeats: the generator yields its first units without building the rest
    first = list(itertools.islice(iter_plan("r", configs, arms, 10**9, 0, "williams"), 5))
    assert [s.repeat for s in first] == [0, 0, 0, 1, 1]
    chunked = plan_table(iter_plan("r", configs, arms, 7, 0, "williams"), {}, chunk=5)
    assert chunked.equals(plan_table(build_plan("r", configs, arms, 7, 0, "williams"), {}))
    asked = iter([False, False, True])
    with pytest.raises(PlanStopped):
        plan_table(
            iter_plan("r", configs, arms, 10**9, 0, "williams"),
            {},
            chunk=1000,
            should_stop=lambda: next(asked),
        )
