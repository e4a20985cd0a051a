"""Shared statistics of the analysis jobs: pure functions of numbers, no I/O, no polars.

Decisions the paper leaves open (also in docs/carrier.md, "Analysis jobs", its "Protocol
decisions"):
- Percentiles (median, IQR, bootstrap interval) use linear interpolation between order
  statistics, h = (n - 1) * p (numpy's default, "type 7").
- A statistic that is undefined for the data (a t interval from one value, a correlation with
  zero variance, an ICC without between-row variance) is None, never NaN, so JSON stays valid.
- The bootstrap draws configuration indices with numpy's PCG64 `default_rng(seed)` as one
  (resamples x n) integer matrix, in blocks to bound memory.
- Every test statistic scipy.stats has (t quantiles, exact McNemar as a two-sided binomial test,
  Pearson, Spearman with average ranks for ties) comes from scipy.stats, a well-kept library,
  not from hand-written numerics. One-way ICC has no scipy function: it stays the short
  mean-squares computation below, on sufficient statistics a Polars query already summed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
from scipy import stats as scipy_stats

ZERO_TOLERANCE = 1e-9
"""An effect whose magnitude is below this counts as zero (sums of k/14 recalls are not exact)."""


class Interval(NamedTuple):
    lo: float
    hi: float


def mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def percentile(values: Sequence[float], fraction: float) -> float | None:
    """Linear-interpolation percentile (h = (n - 1) * fraction)."""
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=np.float64), 100.0 * fraction))


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 0.5)


def sample_sd(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    return float(np.std(np.asarray(values, dtype=np.float64), ddof=1))


def value_range(values: Sequence[float]) -> Interval | None:
    return Interval(min(values), max(values)) if values else None


class SignCounts(NamedTuple):
    positive: int
    negative: int
    zero: int


def sign_counts(values: Sequence[float]) -> SignCounts:
    positive = sum(1 for v in values if v > ZERO_TOLERANCE)
    negative = sum(1 for v in values if v < -ZERO_TOLERANCE)
    return SignCounts(positive, negative, len(values) - positive - negative)


def leave_one_out_range(values: Sequence[float]) -> Interval | None:
    """Min and max of the mean with each value left out in turn (needs two values)."""
    n = len(values)
    if n < 2:
        return None
    total = math.fsum(values)
    means = [(total - v) / (n - 1) for v in values]
    return Interval(min(means), max(means))


def t_interval(values: Sequence[float], level: float = 0.95) -> Interval | None:
    """mean ± t((1 + level) / 2, n - 1) · sd / √n with the sample sd (needs two values)."""
    sd = sample_sd(values)
    centre = mean(values)
    if sd is None or centre is None:
        return None
    if sd == 0.0:
        return Interval(centre, centre)  # scipy gives NaN for a zero scale; the interval is a point
    lo, hi = scipy_stats.t.interval(
        level, len(values) - 1, loc=centre, scale=sd / math.sqrt(len(values))
    )
    return Interval(float(lo), float(hi))


def group_means(values: Sequence[float], groups: Sequence[str]) -> dict[str, float]:
    """Mean of the values within each group (each value weighted equally inside its group)."""
    members: dict[str, list[float]] = {}
    for value, group in zip(values, groups, strict=True):
        members.setdefault(group, []).append(value)
    return {group: math.fsum(vs) / len(vs) for group, vs in sorted(members.items())}


def _has_variance(values: Sequence[float]) -> bool:
    return len(values) >= 2 and min(values) != max(values)


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None for fewer than two pairs or a constant sequence (r is undefined)."""
    if len(x) != len(y):
        raise ValueError("pearson needs equally long sequences")
    if not (_has_variance(x) and _has_variance(y)):
        return None
    return float(scipy_stats.pearsonr(x, y).statistic)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson of average ranks, so ties share their mean rank)."""
    if len(x) != len(y):
        raise ValueError("spearman needs equally long sequences")
    if not (_has_variance(x) and _has_variance(y)):
        return None
    return float(scipy_stats.spearmanr(x, y).statistic)


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """Exact two-sided McNemar test: a binomial test of the discordant pairs against 0.5."""
    discordant = only_a + only_b
    if discordant == 0:
        return 1.0
    return float(scipy_stats.binomtest(only_a, discordant, 0.5).pvalue)


class GroupedBinarySums(NamedTuple):
    """Sufficient statistics of binary outcomes in groups (rows), for the one-way ANOVA ICC."""

    groups: int  # g: rows
    observations: int  # N: checks
    sum_sizes_squared: float  # Σ n_i²
    successes: float  # Σ s_i
    sum_success_sq_over_size: float  # Σ s_i² / n_i


class Dependence(NamedTuple):
    icc: float | None
    design_effect: float | None
    effective_checks_per_row: float | None
    checks_per_row: float | None


def icc_one_way(sums: GroupedBinarySums) -> Dependence:
    """ICC(1) from one-way random-effects ANOVA (unequal group sizes use n0).

    The design effect uses k = the mean number of checks per row: 1 + (k - 1) · ICC;
    effective checks per row = k / design effect.
    """
    g, n = sums.groups, sums.observations
    if g < 2 or n <= g:
        return Dependence(None, None, None, n / g if g else None)
    ss_between = sums.sum_success_sq_over_size - sums.successes**2 / n
    ss_within = sums.successes - sums.sum_success_sq_over_size
    ms_between = ss_between / (g - 1)
    ms_within = ss_within / (n - g)
    n0 = (n - sums.sum_sizes_squared / n) / (g - 1)
    k = n / g
    denominator = ms_between + (n0 - 1.0) * ms_within
    if denominator <= 0.0:
        return Dependence(None, None, None, k)
    icc = (ms_between - ms_within) / denominator
    design_effect = 1.0 + (k - 1.0) * icc
    effective = k / design_effect if design_effect > 0.0 else None
    return Dependence(icc, design_effect, effective, k)


BOOTSTRAP_BLOCK = 2000  # resamples drawn at a time: memory is block x n values, not resamples x n


def bootstrap_statistics(
    data: np.ndarray,
    statistic: Literal["mean", "median"],
    *,
    seed: int,
    resamples: int,
    block: int = BOOTSTRAP_BLOCK,
) -> np.ndarray:
    """The statistic of each of `resamples` resamples of `data` with replacement.

    The indices are the rows of one (resamples x n) matrix from `default_rng(seed)`, drawn
    `block` rows at a time: the same draws and the same per-row statistics as the whole
    matrix (tests/jobs/test_jobs_stats.py), in memory bounded by the block. At corpus scale the
    whole matrix was the analysis's peak: 10,000 x 2,000 pairs is 160 MB of indices, as much
    again of values and of a median's partition (issue 20, P8b).
    """
    rng = np.random.default_rng(seed)
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, block):
        stop = min(start + block, resamples)
        sample = data[rng.integers(0, data.size, size=(stop - start, data.size))]
        out[start:stop] = np.median(sample, axis=1) if statistic == "median" else sample.mean(1)
    return out


def bootstrap_mean_interval(
    values: Sequence[float],
    *,
    seed: int,
    resamples: int,
    level: float = 0.95,
    block: int = BOOTSTRAP_BLOCK,
) -> Interval | None:
    """Percentile interval of the mean, resampling the values (configurations) with replacement."""
    if not values or resamples < 1:
        return None
    data = np.asarray(values, dtype=np.float64)
    means = bootstrap_statistics(data, "mean", seed=seed, resamples=resamples, block=block)
    tail = (1.0 - level) / 2.0
    lo, hi = np.percentile(means, [100.0 * tail, 100.0 * (1.0 - tail)])
    return Interval(float(lo), float(hi))
