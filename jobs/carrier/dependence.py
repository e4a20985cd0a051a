"""Within-row dependence of the binary checks: ICC(1), design effect, effective checks per row.

Decisions:
- Population: valid final rows with at least one check. Check counts come from `checks/`
  when present; otherwise from rows' `checks_passed` / `checks_total` (the same binary
  outcomes, already summed), and `source` says which.
- ICC(1) is the one-way random-effects ANOVA estimator with n0 for unequal row sizes; the
  design effect uses k = mean checks per row (see jobs.stats.icc_one_way).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import polars as pl

from jobs import stats
from jobs.small_sample import small_spread


@dataclass(frozen=True)
class DependenceResult:
    icc: float | None
    design_effect: float | None
    effective_checks_per_row: float | None
    checks_per_row: float | None
    rows: int
    checks: int
    source: str  # checks | rows

    def to_json(self) -> dict[str, object]:
        return {**asdict(self), "small_sample": small_spread(self.rows)}


def within_row_dependence(valid_with_checks: pl.DataFrame) -> DependenceResult:
    """`valid_with_checks` from jobs.carrier.row_checks.valid_rows_with_checks."""
    from_checks = valid_with_checks.get_column("checks").null_count() < valid_with_checks.height
    if from_checks:
        sizes, successes, source = pl.col("checks"), pl.col("checks_passed_n"), "checks"
    else:
        sizes, successes, source = pl.col("checks_total"), pl.col("checks_passed"), "rows"
    grouped = (
        valid_with_checks.select(
            sizes.cast(pl.Float64).alias("n"), successes.cast(pl.Float64).alias("s")
        )
        .drop_nulls()
        .filter(pl.col("n") > 0)
    )
    totals = grouped.select(
        pl.len().alias("groups"),
        pl.col("n").sum().alias("observations"),
        (pl.col("n") ** 2).sum().alias("sum_sizes_squared"),
        pl.col("s").sum().alias("successes"),
        (pl.col("s") ** 2 / pl.col("n")).sum().alias("sum_success_sq_over_size"),
    ).row(0, named=True)
    sums = stats.GroupedBinarySums(
        groups=int(totals["groups"]),
        observations=int(totals["observations"] or 0),
        sum_sizes_squared=float(totals["sum_sizes_squared"] or 0.0),
        successes=float(totals["successes"] or 0.0),
        sum_success_sq_over_size=float(totals["sum_success_sq_over_size"] or 0.0),
    )
    result = stats.icc_one_way(sums)
    return DependenceResult(
        icc=result.icc,
        design_effect=result.design_effect,
        effective_checks_per_row=result.effective_checks_per_row,
        checks_per_row=result.checks_per_row,
        rows=sums.groups,
        checks=sums.observations,
        source=source,
    )
