"""Smoke test of scripts/bench_view.py: one round over a small run ends with a positive ratio
(the figures themselves are in docs/benchmarks.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.scripts.test_bench_smoke import _run_script


@pytest.mark.slow
def test_view_benchmark_prints_first_page_export_size_and_a_ratio(traces_dir: Path) -> None:
    lines = _run_script("bench_view.py", [str(traces_dir), "--rounds", "1"])
    assert any(re.search(r"first page \(overview\) after \d+\.\d+ s", line) for line in lines)
    assert any(re.search(r"export: \d+\.\d s, \d+ bytes", line) for line in lines), lines
    ratio = re.fullmatch(r"ratio=(\d+\.\d+)", lines[-1])
    assert ratio is not None and float(ratio.group(1)) > 0, lines[-5:]
