"""The budget-stop paragraph: the resume command alone on its line, naming the budget that
stopped the sweep (issue 19 item 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.config.schema import BudgetConfig
from pipeline.store.manifest import OutcomeCounts
from pipeline.sweep import summary

RUN = Path("/a/very/long/runs/directory/name/20261202T014300-sim-small-941816ee-and-more")


def _stopped(budget: BudgetConfig, cost: float, requests: int) -> str:
    return summary.summary_paragraph(
        status="budget_exhausted",
        counts=OutcomeCounts(18, 4, {}, {"budget": 14}, 0),
        cost_usd=cost,
        requests=requests,
        simulated=False,
        report=RUN / "analysis" / "report.md",
        run_dir=RUN,
        budget=budget,
    )


@pytest.mark.parametrize(
    ("budget", "cost", "requests", "advice"),
    [
        (BudgetConfig(requests=40), 0.0, 40, "budget.requests=N"),
        (BudgetConfig(usd=0.5), 0.51, 12, "budget.usd=N"),
        (BudgetConfig(usd=5.0, requests=40), 0.2, 40, "budget.requests=N"),
        (BudgetConfig(usd=0.5, requests=400), 0.49, 12, "budget.usd=N budget.requests=N"),
    ],
)
def test_the_resume_command_is_alone_on_its_line_and_names_the_budget(
    budget: BudgetConfig, cost: float, requests: int, advice: str
) -> None:
    lines = _stopped(budget, cost, requests).splitlines()
    command = f"python -m pipeline sweep resume={RUN} {advice}"
    assert f"  {command}" in lines  # whole, on a line of its own, however long
    if "usd" not in advice:
        assert "budget.usd" not in " ".join(lines)
