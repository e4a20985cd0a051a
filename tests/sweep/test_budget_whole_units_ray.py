"""A budget buys whole units, end to end (issue 31 §6): a priced sim sweep whose whole cost is
C, run again under `budget.usd=0.6*C`, ends with at least half its units valid and paired.

Before the rule, dispatch was breadth-first: this sweep under 0.6*C stopped with every unit
in flight and 0 of 96 valid. Both sweeps run as `python -m pipeline sweep` subprocesses, as
the budget-stop reliability test runs them (tests/reliability/test_budget_stop.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from tests.reliability.conftest import SWEEP_TIMEOUT_S
from tests.reliability.harness import SweepHarness

pytestmark = [pytest.mark.slow, pytest.mark.ray]

ARMS = ("j", "q", "m", "x")
CONTRASTS = (("q", "j"), ("m", "q"), ("x", "m"))  # analysis.contrasts among these arms
PRICED = (
    "+panel=sim",
    "sim.configs=6",
    f"arms=[{','.join(ARMS)}]",
    "repeats=4",  # 96 units, about $6.57 at these prices
    "sim.price_input_per_mtok=10",
    "sim.price_output_per_mtok=10",
)


@pytest.fixture
def sweeps() -> Iterator[SweepHarness]:
    h = SweepHarness()
    try:
        yield h
    finally:
        h.close()


def run(harness: SweepHarness, *overrides: str) -> tuple[Path, str]:
    result = harness.run([*PRICED, *overrides], timeout_s=SWEEP_TIMEOUT_S)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.run_dir is not None
    return result.run_dir, result.stderr


def table(run_dir: Path, name: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = pq.read_table(run_dir / name).to_pylist()
    return records


def paired(rows: list[dict[str, Any]]) -> set[tuple[str, int, int, str]]:
    """Valid units whose partner in some contrast is valid in the same configuration, group
    and repeat: the units a paired effect can use."""
    valid = {
        (r["config_id"], r["execution_group"], r["repeat"], r["arm"]) for r in rows if r["valid"]
    }
    out = set()
    for config, group, repeat, arm in valid:
        partners = {b if a == arm else a for b, a in CONTRASTS if arm in (a, b)}
        if any((config, group, repeat, p) in valid for p in partners):
            out.add((config, group, repeat, arm))
    return out


def test_a_budget_of_sixty_percent_buys_at_least_half_the_units_whole_and_paired(
    sweeps: SweepHarness, tmp_path: Path
) -> None:
    full, _ = run(sweeps, f"out_dir={tmp_path / 'full'}")
    whole_cost = sum(r["spent_usd"] for r in table(full, "requests"))
    planned = len(table(full, "plan.parquet"))
    budget = round(0.6 * whole_cost, 4)

    stopped, stderr = run(sweeps, f"budget.usd={budget}", f"out_dir={tmp_path / 'budget'}")
    rows, requests = table(stopped, "rows"), table(stopped, "requests")
    valid = [r for r in rows if r["valid"]]
    pairs = paired(rows)
    spent = sum(r["spent_usd"] for r in requests)
    print(
        f"\nC=${whole_cost:.4f}, budget ${budget}: {len(valid)} of {planned} valid, "
        f"{len(pairs)} paired, spent ${spent:.4f}"
    )
    assert "covers at least" in stderr and f"budget ${budget:,.2f}" in stderr  # the preview
    assert len(valid) >= planned / 2 and len(pairs) >= planned / 2
    assert spent <= budget
    cut = {r["row_id"] for r in requests} - {r["row_id"] for r in rows}
    assert not cut, f"units cut mid-flight: {sorted(cut)}"  # every started unit finished
