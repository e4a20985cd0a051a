"""Which arm leads on a per-configuration measure, and by how much against the runner-up.

Why: the carrier's decision (jobs/carrier/decision.py) asks the same question of recall and,
as its fallback, of carrier retention: rank the arms by their mean over configurations (each
configuration weighted equally, as the panel summary does), then read the leader's paired
effect against the runner-up over the configurations that ran both. Pure: frames in, numbers
out.

The statistics are the report's (jobs/stats.py): the 95% t interval over configurations (the
contrast section's "t interval") and the leave-one-configuration-out range. The minimum
detectable effect at this panel's size is MDE = 2.80 · sd / √n, with sd the sample standard
deviation of the n per-configuration effects (2.80 = 1.96 + 0.84: a two-sided 5% test with
80% power); the panel that would detect an effect d at this spread has n = ⌈(2.80 · sd / d)²⌉
configurations.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from jobs import stats
from jobs.stats import Interval

MDE_Z = 2.80
"""z(0.975) + z(0.80): the MDE of a two-sided 5% test with 80% power, in sd / √n."""


@dataclass(frozen=True)
class Contest:
    """The ranked arms of one subject and the leader's paired effect against the runner-up.

    `effects` maps each configuration that ran both arms to (leader − runner-up)."""

    means: Mapping[str, float]  # arm -> mean over the configurations where it has a value
    configs: Mapping[str, int]  # arm -> configurations behind its mean
    best: str
    runner_up: str | None
    effects: Mapping[str, float]

    @property
    def n(self) -> int:
        return len(self.effects)

    @property
    def effect(self) -> float | None:
        return stats.mean(list(self.effects.values()))

    @property
    def interval(self) -> Interval | None:
        return stats.t_interval(list(self.effects.values()))

    @property
    def loo(self) -> Interval | None:
        return stats.leave_one_out_range(list(self.effects.values()))

    @property
    def wins(self) -> int:
        return stats.sign_counts(list(self.effects.values())).positive

    @property
    def sd(self) -> float | None:
        return stats.sample_sd(list(self.effects.values()))

    @property
    def mde(self) -> float | None:
        sd = self.sd
        return None if sd is None else MDE_Z * sd / math.sqrt(self.n)

    def configs_to_detect(self, effect: float) -> int | None:
        """Configurations that detect `effect` at this spread (None: spread unknown or 0)."""
        sd = self.sd
        if sd is None or sd == 0.0 or effect == 0.0:
            return None
        return max(math.ceil((MDE_Z * sd / abs(effect)) ** 2), 2)


def arm_means(cells: pl.DataFrame, value: str) -> tuple[dict[str, float], dict[str, int]]:
    """Per arm: the mean of `value` over configurations (equal weight), and their count."""
    per_arm = (
        cells.filter(pl.col(value).is_not_null())
        .group_by("arm")
        .agg(pl.col(value).mean().alias("mean"), pl.len().alias("configs"))
        .sort("arm")
    )
    arms = [str(a) for a in per_arm["arm"].to_list()]
    return (
        dict(zip(arms, [float(m) for m in per_arm["mean"].to_list()], strict=True)),
        dict(zip(arms, [int(c) for c in per_arm["configs"].to_list()], strict=True)),
    )


def differences(cells: pl.DataFrame, value: str, leader: str, other: str) -> dict[str, float]:
    """Per configuration that has both arms: `value` of `leader` minus that of `other`."""
    present = cells.filter(pl.col(value).is_not_null())
    wide = {
        arm: dict(present.filter(pl.col("arm") == arm).select("config_id", value).iter_rows())
        for arm in (leader, other)
    }
    both = sorted(set(wide[leader]) & set(wide[other]))
    return {str(c): float(wide[leader][c]) - float(wide[other][c]) for c in both}


def ranked(means: Mapping[str, float]) -> list[str]:
    """Arms by descending mean; a tie goes to the earlier name, so the order is stable."""
    return sorted(means, key=lambda arm: (-means[arm], arm))


def contest(cells: pl.DataFrame, value: str, effects: Mapping[str, float] | None = None) -> Contest:
    """The contest of one subject's cells (config_id, arm, `value`); `effects` the paired
    effects of leader vs runner-up when a finer table has them (else differences of cell
    means). `cells` must hold at least one value."""
    means, configs = arm_means(cells, value)
    order = ranked(means)
    best, runner_up = order[0], (order[1] if len(order) > 1 else None)
    if runner_up is None:
        found: Mapping[str, float] = {}
    else:
        found = effects if effects is not None else differences(cells, value, best, runner_up)
    return Contest(means, configs, best, runner_up, dict(found))
