"""Benchmark: the viewer's time to first page, and the export's size, on one run directory.

    PYTHONPATH=. python scripts/bench_view.py RUN_DIR [--rounds 3]

Each round, in a fresh process as a user runs it:
- baseline: `python -m pipeline query RUN_DIR "select count(*) from rows"` (the same start-up
  and store reads, no pages): seconds from launch to its exit;
- view: `python -m pipeline view RUN_DIR --port 0` from launch to the first page's last byte
  (the URL printed, then GET of the run's overview), then the units page (first page of 50)
  and one unit page, each timed on the warm server;
- export: `python -m pipeline view --export OUT.html RUN_DIR`: seconds and bytes.
Prints the median of each, and `ratio=` first page / baseline last.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(REPO), "RAY_USAGE_STATS_ENABLED": "0"}
CLI = [sys.executable, "-m", "pipeline"]


def _get(url: str) -> tuple[float, str]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        body = response.read().decode("utf-8")
    return time.perf_counter() - start, body


def baseline(run_dir: Path) -> float:
    start = time.perf_counter()
    sql = "select count(*) from rows"
    subprocess.run(
        [*CLI, "query", str(run_dir), sql], cwd=REPO, env=ENV, check=True, capture_output=True
    )
    return time.perf_counter() - start


def first_pages(run_dir: Path) -> tuple[float, float, float, float]:
    """Seconds: launch to URL, launch to the overview's last byte, units page, a unit page."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [*CLI, "view", str(run_dir), "--port", "0"],
        cwd=REPO,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        listening = time.perf_counter() - start
        url = line.split(" at ", 1)[1].split(" ", 1)[0].rstrip("/")
        _, _overview = _get(f"{url}/run/0/")
        first = time.perf_counter() - start
        units, body = _get(f"{url}/run/0/units")
        row = body.split('class="unit-link" href="', 1)[1].split('"', 1)[0]
        unit, _ = _get(url + row.replace("&amp;", "&"))
        return listening, first, units, unit
    finally:
        process.terminate()
        process.wait(timeout=30)


def export(run_dir: Path) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "run.html"
        start = time.perf_counter()
        subprocess.run(
            [*CLI, "view", "--export", str(out), str(run_dir)],
            cwd=REPO,
            env=ENV,
            check=True,
            capture_output=True,
        )
        return time.perf_counter() - start, out.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base, listen, first, units, unit, exported, size = [], [], [], [], [], [], 0
    for _ in range(args.rounds):
        base.append(baseline(args.run_dir))
        a, b, c, d = first_pages(args.run_dir)
        listen.append(a), first.append(b), units.append(c), unit.append(d)
        seconds, size = export(args.run_dir)
        exported.append(seconds)
    med = statistics.median
    print(f"baseline query (launch to exit): {med(base):.2f} s")
    print(
        f"view: listening after {med(listen):.2f} s, first page (overview) after {med(first):.2f} s"
    )
    print(
        f"warm server: units page {med(units) * 1000:.0f} ms, unit page {med(unit) * 1000:.0f} ms"
    )
    print(f"export: {med(exported):.1f} s, {size} bytes ({size / 1e6:.1f} MB)")
    print(f"ratio={med(first) / med(base):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
