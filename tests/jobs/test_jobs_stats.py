"""jobs.stats (built on scipy.stats) against hand-computed and textbook values."""

from __future__ import annotations

import math
import statistics

import pytest

from jobs import stats

# Two-sided 95% critical values of Student's t (standard statistical tables).
T_TABLE_0975 = {
    1: 12.706204736174694,
    2: 4.302652729749462,
    3: 3.1824463052837078,
    4: 2.7764451051977934,
    5: 2.5705818356363146,
    10: 2.228138851986274,
    19: 2.0930240544083087,
    30: 2.0422724563012378,
    100: 1.9839715185235518,
    1000: 1.9623390808264083,
}


@pytest.mark.parametrize(("df", "expected"), sorted(T_TABLE_0975.items()))
def test_t_interval_half_width_uses_the_table_t_to_1e9(df: int, expected: float) -> None:
    values = [float(i % 7) for i in range(df + 1)]
    sd = statistics.stdev(values)
    interval = stats.t_interval(values)
    assert interval is not None
    half_width = (interval.hi - interval.lo) / 2.0
    assert half_width / (sd / math.sqrt(len(values))) == pytest.approx(expected, abs=1e-9)


def test_t_interval_at_99_percent_uses_t_0995() -> None:
    values = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]  # df = 7; t(0.995, 7) = 3.4994832973504924
    interval = stats.t_interval(values, level=0.99)
    assert interval is not None
    scale = statistics.stdev(values) / math.sqrt(len(values))
    assert (interval.hi - interval.lo) / 2.0 / scale == pytest.approx(3.4994832973504924, abs=1e-9)


def test_t_interval_of_identical_values_is_a_point() -> None:
    assert stats.t_interval([0.25, 0.25, 0.25]) == (0.25, 0.25)


def test_percentile_interpolates_linearly_between_order_statistics() -> None:
    values = [-0.5, 0.0, 0.5]
    assert stats.percentile(values, 0.25) == -0.25
    assert stats.percentile(values, 0.75) == 0.25
    assert stats.median([4.0, 1.0, 3.0, 2.0]) == 2.5
    assert stats.percentile([], 0.5) is None


def test_leave_one_out_range_is_min_and_max_of_the_remaining_means() -> None:
    assert stats.leave_one_out_range([0.0, 0.5, -0.5]) == (-0.25, 0.25)
    assert stats.leave_one_out_range([1.0]) is None


def test_t_interval_uses_sample_sd_and_t_with_n_minus_one_df() -> None:
    half = T_TABLE_0975[2] * 0.5 / math.sqrt(3)
    interval = stats.t_interval([0.0, 0.5, -0.5])
    assert interval is not None
    assert interval.lo == pytest.approx(-half, abs=1e-12)
    assert interval.hi == pytest.approx(half, abs=1e-12)
    assert stats.t_interval([0.3]) is None


def test_sign_counts_treat_float_noise_as_zero() -> None:
    noise = (1 / 14 + 2 / 14) - 3 / 14
    assert stats.sign_counts([0.5, -0.1, 0.0, noise]) == (1, 1, 2)


def test_spearman_gives_tied_values_their_average_rank() -> None:
    # ranks (2, 3.5, 3.5, 1) against (1, 2, 3, 4): r = -1.5 / sqrt(4.5 * 5)
    assert stats.spearman([10.0, 20.0, 20.0, 5.0], [1.0, 2.0, 3.0, 4.0]) == pytest.approx(
        -1.5 / math.sqrt(22.5), abs=1e-12
    )
    assert stats.spearman([1.0, 2.0, 3.0], [1.0, 4.0, 9.0]) == pytest.approx(1.0)
    assert stats.spearman([1.0, 1.0], [1.0, 2.0]) is None


def test_pearson_is_none_without_variance() -> None:
    assert stats.pearson([1.0, 1.0, 1.0], [1.0, 2.0, 3.0]) is None
    assert stats.pearson([1.0, 2.0, 3.0], [3.0, 2.0, 1.0]) == pytest.approx(-1.0)


@pytest.mark.parametrize(
    ("only_a", "only_b", "expected"),
    [
        (7, 0, 0.015625),  # paper §4.3: seven full only under m, p = 0.0156
        (5, 1, 0.21875),  # paper §4.5: five only under j, one only under t, p = 0.2188
        (6, 1, 0.125),  # paper §4.5: the missing j outcome treated as a success
        (1, 1, 1.0),
        (0, 0, 1.0),
    ],
)
def test_mcnemar_exact_two_sided_p(only_a: int, only_b: int, expected: float) -> None:
    assert stats.mcnemar_exact_p(only_a, only_b) == pytest.approx(expected, abs=1e-15)


def test_icc_of_three_rows_of_two_checks_is_one_half() -> None:
    # rows (1,1), (1,0), (0,0): MSB = 1/2, MSW = 1/6, n0 = 2 -> ICC = (1/3)/(2/3)
    sums = stats.GroupedBinarySums(3, 6, 12.0, 3.0, 2.5)
    result = stats.icc_one_way(sums)
    assert result.icc == pytest.approx(0.5)
    assert result.design_effect == pytest.approx(1.5)
    assert result.effective_checks_per_row == pytest.approx(4 / 3)


def test_icc_is_none_when_no_row_varies_and_all_agree() -> None:
    sums = stats.GroupedBinarySums(2, 4, 8.0, 4.0, 4.0)  # every check passed
    assert stats.icc_one_way(sums).icc is None


def test_bootstrap_interval_is_reproducible_for_a_seed_and_brackets_the_mean() -> None:
    values = [0.0, 0.5, -0.5, 0.9, -0.2]
    first = stats.bootstrap_mean_interval(values, seed=166, resamples=10_000)
    again = stats.bootstrap_mean_interval(values, seed=166, resamples=10_000)
    other = stats.bootstrap_mean_interval(values, seed=7, resamples=10_000)
    assert first is not None and other is not None
    assert first == again
    assert first != other
    assert first.lo < sum(values) / len(values) < first.hi


def test_bootstrap_of_identical_values_is_degenerate() -> None:
    assert stats.bootstrap_mean_interval([0.25] * 4, seed=1, resamples=50) == (0.25, 0.25)
    assert stats.bootstrap_mean_interval([], seed=1, resamples=50) is None


def test_mcnemar_handles_thousands_of_discordant_pairs() -> None:
    assert stats.mcnemar_exact_p(1500, 1500) == 1.0
    assert stats.mcnemar_exact_p(3000, 0) == 0.0


@pytest.mark.parametrize("statistic", ["mean", "median"])
@pytest.mark.parametrize("size", [1, 7, 2001])
def test_bootstrap_in_blocks_equals_the_whole_index_matrix(statistic: str, size: int) -> None:
    # issue 20 (P8b): the savings job drew the whole (resamples x n) matrix at once, 480 MB at
    # 2,000 pairs; drawn in blocks of rows, every resample's statistic is the same float
    import numpy as np

    data = np.random.default_rng(3).normal(size=size)
    whole = data[np.random.default_rng(166).integers(0, size, size=(5_000, size))]
    want = np.median(whole, axis=1) if statistic == "median" else whole.mean(axis=1)
    got = stats.bootstrap_statistics(data, statistic, seed=166, resamples=5_000, block=700)  # type: ignore[arg-type]
    assert got.tolist() == want.tolist()
