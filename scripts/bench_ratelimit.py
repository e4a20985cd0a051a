"""Benchmark: rate-limit fidelity, 20 configurations at 600 rpm against enforcing sim servers.

    PYTHONPATH=. python scripts/bench_ratelimit.py [--configs 20] [--rpm 600] [--window 60]
        [--warmup 3]

Runs a sim sweep in this process (`run_sweep(..., analyze=False, sim_servers="thread")`: the
sim servers too, not in their usual child process) with `sim.rpm_limit=RPM`: the panel gives
each configuration a client limit of RPM (pipeline.endpoints.limits paces it) and its sim
server enforces RPM over a 60 s sliding window (429 + Retry-After when exceeded).
The sweep has more work than the window needs (small scenario, 4 requests per trajectory),
is kept saturated by `sim.concurrency`, and stops itself through `budget.requests` after
warmup + window + a few seconds. The default window is 60 s, not the 30 s minimum: the
server's 60 s sliding window only starts to bind (and can answer 429) once a run is longer
than 60 s, so a shorter run would get zero 429s for free.

Measured from the servers' view: the sim servers' `SlidingWindow` is replaced, in this
process only, by a subclass that records the time of every admitted request, so the rate is
what the server admitted, per configuration, over [first dispatch + warmup, + window].
Prints each configuration's achieved rpm and the servers' 429 count; the last line is
`max_deviation=<float> server_429=<int>` (largest |achieved - RPM| / RPM; targets <= 0.02, 0).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from bisect import bisect_left
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo: pipeline
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench_common

from _bench_common import bench_env, load_average, read_run, sweep_overrides

from pipeline.endpoints import sim

ADMITTED: list[list[float]] = []  # per server, in creation (= configuration) order


class RecordingWindow(sim.SlidingWindow):
    """The server's own window, recording the monotonic time of each admission."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.admitted: list[float] = []
        ADMITTED.append(self.admitted)

    def admit(self) -> float | None:
        wait = super().admit()
        if wait is None:
            self.admitted.append(time.monotonic())
        return wait


def achieved_rpm(stamps: list[float], start: float, seconds: float) -> float:
    """Admissions in [start, start + seconds), per minute."""
    count = bisect_left(stamps, start + seconds) - bisect_left(stamps, start)
    return count * 60.0 / seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=20)
    parser.add_argument("--rpm", type=float, default=600.0)
    parser.add_argument("--window", type=float, default=60.0, help="steady-state seconds")
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    os.environ.update({k: v for k, v in bench_env().items() if k.startswith("RAY_")})
    sim.SlidingWindow = RecordingWindow  # type: ignore[misc]
    from pipeline.commands.start import run_sweep

    seconds = args.warmup + args.window + 7.0
    budget = int(args.configs * args.rpm / 60.0 * seconds)
    per_config = args.rpm / 60.0 * seconds / 4  # trajectories needed at 4 requests each
    repeats = int(per_config / 4 * 1.5) + 2  # 4 arms; half again as much work as needed
    print(f"load average before: {load_average()}")
    with tempfile.TemporaryDirectory(prefix="bench-ratelimit-") as tmp:
        overrides = [
            *sweep_overrides(
                Path(tmp),
                configs=args.configs,
                rpm_limit=args.rpm,
                latency_s=args.latency,
                concurrency=args.concurrency,
            ),
            "arms=[j,q,m,x]",
            f"repeats={repeats}",
            f"budget.requests={budget}",
        ]
        print("overrides: " + " ".join(overrides[4:]))
        offset = time.time() - time.monotonic()
        # "thread": RecordingWindow replaces sim.SlidingWindow in this process only.
        run_dir = run_sweep(overrides, analyze=False, sim_servers="thread")
        figures = read_run(run_dir)
    stamps = [sorted(s) for s in ADMITTED]
    first = figures.first_dispatch - offset
    start = first + args.warmup
    end_of_work = figures.last_complete - offset
    if start + args.window > end_of_work:
        print(f"warning: the sweep ended {start + args.window - end_of_work:.1f} s into the window")
    deviations = []
    for i, mine in enumerate(stamps):
        rate = achieved_rpm(mine, start, args.window)
        deviations.append(abs(rate - args.rpm) / args.rpm)
        print(f"sim-{i:02d}: {rate:.1f} rpm ({len(mine)} admitted in total)")
    print(
        f"status={figures.status} trajectories={figures.trajectories} "
        f"server_requests={figures.server_requests} window=[+{args.warmup:.0f} s, "
        f"+{args.warmup + args.window:.0f} s] of {end_of_work - first:.1f} s of work"
    )
    print(f"load average after: {load_average()}")
    print(f"max_deviation={max(deviations):.4f} server_429={figures.server_429}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
