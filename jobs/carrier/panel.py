"""The panel summary of one contrast: equal weight per configuration with at least one pair.

Decisions:
- Family means weight each configuration equally within its family (family = the rows'
  `family`, or the config_id when a configuration has none).
- `lofo_range` needs at least two families, `loo_range` and `t_interval` at least two
  configurations; otherwise they are null.
- The bootstrap resamples configurations (sorted by config_id, so the draw is reproducible).
- `exclude_single_pair` drops configurations with exactly one pair (= at least two pairs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import polars as pl

from jobs import stats
from jobs.small_sample import small_spread
from jobs.stats import Interval

PANEL_KEYS = (
    "configs",
    "mean",
    "median",
    "iqr",
    "range",
    "positive",
    "negative",
    "zero",
    "loo_range",
    "t_interval",
    "family_mean",
    "lofo_range",
    "planned_bounds",
    "bootstrap_interval",
    "sensitivity",
    "small_sample",
)

POPULATIONS: dict[str, Callable[[pl.DataFrame], pl.DataFrame]] = {
    "all": lambda paired: paired.filter(pl.col("pairs") >= 1),
    "min4": lambda paired: paired.filter(pl.col("pairs") >= 4),
    "equal_counts": lambda paired: paired.filter(
        (pl.col("pairs") >= 1) & (pl.col("valid_rows_a") == pl.col("valid_rows_b"))
    ),
    "exclude_single_pair": lambda paired: paired.filter(pl.col("pairs") >= 2),
}


@dataclass(frozen=True)
class Population:
    population: str
    configs: int
    mean: float | None
    median: float | None


@dataclass(frozen=True)
class PanelSummary:
    configs: int
    mean: float | None
    median: float | None
    iqr: Interval | None
    range: Interval | None
    positive: int
    negative: int
    zero: int
    loo_range: Interval | None
    t_interval: Interval | None
    family_mean: float | None
    lofo_range: Interval | None
    planned_bounds: Interval | None
    bootstrap_interval: Interval | None
    sensitivity: tuple[Population, ...]

    @property
    def small_sample(self) -> bool:
        """The panel's intervals rest on fewer than MIN_SPREAD_N configurations."""
        return small_spread(self.configs)

    def to_json(self) -> dict[str, object]:
        """The panel JSON, keys exactly PANEL_KEYS; intervals as [lo, hi] or null."""

        def pair(interval: Interval | None) -> list[float] | None:
            return None if interval is None else [interval.lo, interval.hi]

        payload: dict[str, object] = {}
        for key in PANEL_KEYS:
            value = getattr(self, key)
            if key == "sensitivity":
                payload[key] = [vars(p) for p in self.sensitivity]
            elif isinstance(value, Interval) or (value is None and key in _INTERVAL_KEYS):
                payload[key] = pair(value)
            else:
                payload[key] = value
        return payload


_INTERVAL_KEYS = frozenset(
    {
        "iqr",
        "range",
        "loo_range",
        "t_interval",
        "lofo_range",
        "planned_bounds",
        "bootstrap_interval",
    }
)


def _effects(paired: pl.DataFrame) -> list[float]:
    return [float(v) for v in paired.get_column("paired_mean").to_list()]


def family_mean_and_lofo(
    effects: Sequence[float], families: Sequence[str]
) -> tuple[float | None, Interval | None]:
    """Mean of family means, and min/max of it with one family left out."""
    means = stats.group_means(effects, families)
    if not means:
        return None, None
    values = list(means.values())
    return stats.mean(values), stats.leave_one_out_range(values)


def population(name: str, paired: pl.DataFrame) -> Population:
    effects = _effects(POPULATIONS[name](paired))
    return Population(name, len(effects), stats.mean(effects), stats.median(effects))


def panel_summary(
    paired: pl.DataFrame,
    *,
    planned_bounds: Interval | None,
    bootstrap_seed: int,
    bootstrap_resamples: int,
) -> PanelSummary:
    """Summarises a paired_<b>_vs_<a> table (columns of jobs.carrier.paired.paired_by_config)."""
    panel = POPULATIONS["all"](paired).sort("config_id")
    effects = _effects(panel)
    families = [str(f) for f in panel.get_column("family").to_list()]
    signs = stats.sign_counts(effects)
    q25, q75 = stats.percentile(effects, 0.25), stats.percentile(effects, 0.75)
    family_mean, lofo = family_mean_and_lofo(effects, families)
    return PanelSummary(
        configs=len(effects),
        mean=stats.mean(effects),
        median=stats.median(effects),
        iqr=None if q25 is None or q75 is None else Interval(q25, q75),
        range=stats.value_range(effects),
        positive=signs.positive,
        negative=signs.negative,
        zero=signs.zero,
        loo_range=stats.leave_one_out_range(effects),
        t_interval=stats.t_interval(effects),
        family_mean=family_mean,
        lofo_range=lofo,
        planned_bounds=planned_bounds,
        bootstrap_interval=stats.bootstrap_mean_interval(
            effects, seed=bootstrap_seed, resamples=bootstrap_resamples
        ),
        sensitivity=tuple(population(name, paired) for name in POPULATIONS),
    )
