"""Smoke test of scripts/bench_oracle.py: with its smallest sizes it finds the same schedules
both ways and prints one line per length, the exponents and a positive `speedup=` last (the
figures themselves are not asserted: see docs/benchmarks.md for measured runs)."""

from __future__ import annotations

import re

import pytest

from tests.scripts.test_bench_smoke import _run_script


@pytest.mark.slow
def test_oracle_benchmark_prints_each_length_the_exponents_and_a_positive_speedup() -> None:
    lines = _run_script("bench_oracle.py", ["--lengths", "6", "12", "--rounds", "1"])
    rows = [line.split() for line in lines if re.match(r"\s*\d+\s", line)]
    assert [row[0] for row in rows] == ["6", "12"], lines
    assert all(len(row) == 6 and int(row[2]) > 0 and float(row[-1]) > 0 for row in rows), rows
    assert any(re.fullmatch(r"exponent baseline=-?\d+\.\d+ pipeline=-?\d+\.\d+", x) for x in lines)
    speedup = re.fullmatch(r"speedup=(\d+\.\d+)", lines[-1])
    assert speedup is not None and float(speedup.group(1)) > 0, lines[-5:]
