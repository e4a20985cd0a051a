"""Smoke test of scripts/bench_replay.py: it runs with its smallest sizes and prints one line
per length, the scaling exponents and a positive `ratio=` last (the figures themselves are not
asserted: see docs/benchmarks.md for measured runs)."""

from __future__ import annotations

import re

import pytest

from tests.scripts.test_bench_smoke import _run_script


@pytest.mark.slow
def test_replay_benchmark_prints_each_length_the_exponents_and_a_positive_ratio() -> None:
    lines = _run_script("bench_replay.py", ["--lengths", "3", "6", "--rounds", "1"])
    rows = [line.split() for line in lines if re.match(r"\s*\d+\s", line)]
    assert [row[0] for row in rows] == ["3", "6"], lines
    assert all(len(row) == 9 and float(row[-1]) > 0 for row in rows), rows
    assert any(
        re.search(r"pipeline k=-?\d+\.\d+, control k=-?\d+\.\d+, naive k=-?\d+\.\d+", line)
        for line in lines
    ), lines
    ratio = re.fullmatch(r"ratio=(\d+\.\d+)", lines[-1])
    assert ratio is not None and float(ratio.group(1)) > 0, lines[-5:]
