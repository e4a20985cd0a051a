"""Smoke test of the sweep benchmarks: each runs end to end with tiny parameters and ends
with the last line its docs promise (the figures themselves are not asserted: see
docs/benchmarks.md for measured runs)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

CASES = {
    "bench_throughput.py": (
        [
            "--configs",
            "2",
            "--concurrency",
            "3",
            "--repeats",
            "1",
            "--raw-seconds",
            "1",
            "--rounds",
            "1",
        ],
        r"ratio_vs_raw=\d+\.\d+",
    ),
    "bench_ratelimit.py": (
        ["--configs", "2", "--rpm", "600", "--window", "2", "--warmup", "1"],
        r"max_deviation=\d+\.\d+ server_429=\d+",
    ),
    "bench_memory.py": (
        ["--configs", "2", "--concurrency", "3", "--repeats", "2", "--latency", "0.01"],
        r"peak_rss_mb=\d+\.\d+",
    ),
}


def _run_script(script: str, args: list[str]) -> list[str]:
    """Run a benchmark script from the repo; its stdout lines (asserting exit code 0)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0")
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / script), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()


@pytest.mark.slow
@pytest.mark.ray
@pytest.mark.parametrize("script", sorted(CASES))
def test_benchmark_runs_and_ends_with_its_figure_line(script: str) -> None:
    args, last_line = CASES[script]
    lines = _run_script(script, args)
    assert re.fullmatch(last_line, lines[-1]), lines[-5:]


@pytest.mark.slow
@pytest.mark.local_model
def test_llama_server_benchmark_prints_speeds_and_the_parallel_ratio() -> None:
    args = ["--model", "smollm2", "--rounds", "1", "--prompt-tokens", "200", "--max-tokens", "8"]
    lines = _run_script("bench_llama_server.py", args)
    assert re.search(r"prompt \d+ tokens at \d+ tok/s, generation \d+\.\d tok/s", lines[-2])
    assert re.search(r"parallel_speedup=\d+\.\d+$", lines[-1]), lines[-5:]


@pytest.mark.slow
def test_request_path_benchmark_counts_instructions_and_cpu_against_a_base_tree() -> None:
    # this checkout as its own base: the smoke test needs a tree, not an older commit
    args = ["--base-tree", str(REPO), "--units", "3", "--native-rounds", "1"]
    lines = _run_script("bench_request_path.py", [*args, "--native-units", "4"])
    assert any(re.fullmatch(r"ratio_cache_on_vs_base=\d+\.\d+", line) for line in lines), lines
    counted = [line for line in lines if line.startswith("callgrind base: 12 requests")]
    assert counted and "instructions per request" in counted[0], lines
    assert re.fullmatch(r"native_ratio_cache_off_vs_base=\d+\.\d+", lines[-1]), lines[-5:]


@pytest.mark.slow
def test_request_path_benchmark_counts_the_worker_without_its_http_exchange(
    tmp_path: Path,
) -> None:
    args = ["--units", "3", "--native-rounds", "1", "--native-units", "4", "--no-http"]
    args += ["--keep-dumps", str(tmp_path)]
    lines = _run_script("bench_request_path.py", args)
    counted = [line for line in lines if line.startswith("callgrind no HTTP: 12 requests")]
    assert counted and "instructions per request" in counted[0], lines
    # the replayed replies are the recorded ones: every unit graded valid, none re-sent
    native = [line for line in lines if line.startswith("native round 1 no HTTP:")]
    assert native and "16 requests, 4 valid units" in native[0], lines
    assert any(
        re.fullmatch(r"http_exchange_instructions_per_request=[\d,-]+ .*", line) for line in lines
    ), lines
    assert (tmp_path / "no-HTTP.worker.callgrind").stat().st_size > 0
