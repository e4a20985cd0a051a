"""Benchmark: peak memory of a sim sweep with 10,000 trajectories in flight.

    PYTHONPATH=. python scripts/bench_memory.py [--configs 10] [--concurrency 500]
        [--repeats 250] [--latency 0.5]

Runs a sim sweep (small scenario, arms j,q,m,x, no faults) in a subprocess with
`configs x 2 x concurrency` >= 10,000 trajectory slots and at least that many trajectories
planned, so the coordinator dispatches 10,000 at once. A sampler sums RSS (and PSS, which
counts shared pages such as Ray's object store once) over the whole process tree: driver with
its coordinator and sim servers, Ray's raylet/GCS and the EndpointWorker actors.
Per-trajectory bytes = (peak RSS - RSS just before the first dispatch) / trajectories in flight.
The last line is `peak_rss_mb=<float>`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo: pipeline
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench_common

from _bench_common import (
    load_average,
    read_run,
    run_sweep_subprocess,
    sweep_overrides,
)

MB = 1024 * 1024
ARMS = ("j", "q", "m", "x")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=250)
    parser.add_argument("--latency", type=float, default=0.5)
    args = parser.parse_args()
    planned = args.configs * len(ARMS) * args.repeats
    in_flight = min(planned, args.configs * 2 * args.concurrency)
    print(f"load average before: {load_average()}")
    print(f"planned trajectories: {planned}; trajectory slots in flight: {in_flight}")
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        overrides = [
            *sweep_overrides(
                Path(tmp),
                configs=args.configs,
                concurrency=args.concurrency,
                latency_s=args.latency,
            ),
            f"arms=[{','.join(ARMS)}]",
            f"repeats={args.repeats}",
        ]
        run = run_sweep_subprocess(overrides, every_s=0.5, pss=True)
        figures = read_run(run.run_dir)
    sampler = run.sampler
    peak_rss, peak_pss, processes = sampler.peak()
    before = sum(p.rss for p in sampler.at(figures.first_dispatch).values())
    print(
        f"{figures.trajectories} trajectories ({figures.valid} valid), "
        f"{figures.pipeline_requests} requests in {figures.window_s:.1f} s; "
        f"whole run {run.wall_s:.1f} s"
    )
    print(f"RSS before the first dispatch: {before / MB:.1f} MB")
    pss_text = f"{peak_pss / MB:.1f} MB" if peak_pss is not None else "n/a"
    print(f"peak: RSS {peak_rss / MB:.1f} MB, PSS {pss_text}, over {processes} processes")
    by_name: dict[str, int] = {}
    for sample in sampler.peak_sample().values():
        by_name[sample.name] = by_name.get(sample.name, 0) + sample.rss
    ranked = sorted(by_name.items(), key=lambda kv: -kv[1])
    print("peak RSS by process: " + ", ".join(f"{k}={v / MB:.0f} MB" for k, v in ranked[:8]))
    per = (peak_rss - before) / in_flight
    print(f"per_trajectory_bytes={per:.0f} (RSS growth over {in_flight} in flight)")
    print(f"load average after: {load_average()}")
    print(f"peak_rss_mb={peak_rss / MB:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
