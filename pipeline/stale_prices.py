"""Are a configuration's prices stale? The provider's charge against our estimate, one rule.

A configuration's prices (the panel, the catalog) turn reported usage into `cost_usd`, the
estimate; a provider that states what it charged (OpenRouter's `usage.cost`: `billed_usd`)
lets those prices be checked. Two readers apply this one rule: the report's Requests
section (jobs/requests_summary.py, over the run's `requests` table) and
`python -m pipeline probe` (over the probe's replies).

Decisions:
- The gap is relative to what was billed: |estimated - billed| / billed. More than 5%
  (`STALE_TOLERANCE`) is stale: prices rounded to a cent per million tokens stay well inside
  it, a provider's price change does not.
- Billed $0 against a positive estimate is stale (the gap is unbounded); both $0 is not.
- The caller compares like with like: only replies that carried a charge *and* reported their
  usage go into either sum. A reply without usage is priced at an upper estimate, which says
  nothing about the prices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

STALE_TOLERANCE = 0.05


@dataclass(frozen=True)
class Charges:
    """Replies that carried a charge and reported their usage, and their two sums."""

    replies: int
    billed_usd: float
    estimated_usd: float

    def stale_line(self, config_id: str, *, billed_by: str = "billed") -> str | None:
        return stale_prices_line(
            config_id, self.billed_usd, self.estimated_usd, billed_by=billed_by
        )


def prices_stale(billed: float, estimated: float) -> bool:
    """The estimate differs from the billed charge by more than STALE_TOLERANCE of it."""
    gap = abs(estimated - billed)
    if billed <= 0.0:
        return gap > 0.0
    return gap / billed > STALE_TOLERANCE


def stale_prices_line(
    config_id: str, billed: float, estimated: float, *, billed_by: str = "billed"
) -> str | None:
    """The one-line flag, e.g. "prices in the panel are stale for c1: billed $0.0120,
    estimated $0.0100" (`billed_by="probe billed"` for the probe); None when not stale."""
    if not prices_stale(billed, estimated):
        return None
    return (
        f"prices in the panel are stale for {config_id}: "
        f"{billed_by} {usd(billed)}, estimated {usd(estimated)}"
    )


def usd(value: float) -> str:
    """Dollars with at least four decimals and three significant digits: a probe's charge of
    $0.0000036 must not read as $0.0000."""
    if value == 0.0 or not math.isfinite(value):
        return f"${value:.4f}"
    decimals = max(4, 2 - math.floor(math.log10(abs(value))))
    return f"${value:.{decimals}f}"
