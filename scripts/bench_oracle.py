"""Benchmark: the oracle's search per transcript, against a full replay per schedule.

    PYTHONPATH=. python scripts/bench_oracle.py [--lengths 50 100 200 400] [--rounds 2]

For each length, one synthetic transcript of bench_replay.py (realistic tool output, one
output in twelve forced exact) is searched by `oracle_schedule` under every configuration of
the offline panel (5 cache models), in the same process and the same round, with two cost
functions:
- baseline: every schedule replayed (`replay` under `ScheduledPolicy`) and accounted from
  its first request (`account_incremental`), the cost the search read before issue 20's
  schedule_cost.py;
- pipeline: the runner's own (`ToolOutRunner._schedule_cost`, pipeline/toolout/
  schedule_cost.py): no replay per schedule, and only the requests after the first one
  where the schedule differs from the last one priced are billed.
Both must find the same schedule (the script exits 1 otherwise). Each figure is the fastest
of `--rounds` rounds, with the garbage collector off while timed. Per length it prints the
requests, the eligible outputs, the schedules priced, both times summed over the five cache
models and baseline/pipeline; then the scaling exponent of each (least-squares slope of log
seconds against log length). The last line is `speedup=<float>` at the largest length.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_replay import slope, synthetic_transcript

from pipeline.toolout.oracle import Schedule, eligible_outputs, oracle_schedule
from pipeline.toolout.runner import ToolOutRunner
from pipeline.toolout.schedule_cost import replayed_cost
from pipeline.toolout.tokens import estimate_tokens
from pipeline.toolout.transcript import Transcript
from tests.golden.toolout_replay import endpoints, study


def _baseline(runner: ToolOutRunner, transcript: Transcript) -> Callable[[Schedule], float]:
    pricing = {"think_time_s": runner.think_time_s, "estimate": estimate_tokens}
    return partial(
        replayed_cost, transcript, cache_model=runner.cache_model, model=runner.model, **pricing
    )


def _timed_search(
    transcript: Transcript, make_cost: Callable[[], Callable[[Schedule], float]]
) -> tuple[float, dict[int, int], int]:
    """(seconds, schedule, schedules priced), the cost function's setup included."""
    priced = 0
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        cost = make_cost()

        def counted(schedule: Schedule) -> float:
            nonlocal priced
            priced += 1
            return cost(schedule)

        schedule = oracle_schedule(transcript, counted)
        return time.perf_counter() - started, schedule, priced
    finally:
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[50, 100, 200, 400])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    the_study = study()
    runners = [the_study.runner(e) for e in endpoints()]
    print(f"{'requests':>8} {'eligible':>8} {'priced':>7} {'baseline_s':>10} "
          f"{'pipeline_s':>10} {'speedup':>7}")  # fmt: skip
    base_times: list[float] = []
    pipe_times: list[float] = []
    for length in args.lengths:
        transcript = synthetic_transcript(length)
        best_base = best_pipe = float("inf")
        priced_total = 0
        for _ in range(args.rounds):
            base = pipe = 0.0
            priced_total = 0
            for runner in runners:
                b, slow_schedule, _ = _timed_search(
                    transcript, lambda r=runner, t=transcript: _baseline(r, t)
                )
                p, fast_schedule, priced = _timed_search(
                    transcript, lambda r=runner, t=transcript: r._schedule_cost(t)
                )
                if fast_schedule != slow_schedule:
                    print(f"{runner.cache_model.name} at {length}: the schedules differ")
                    return 1
                base, pipe, priced_total = base + b, pipe + p, priced_total + priced
            best_base, best_pipe = min(best_base, base), min(best_pipe, pipe)
        base_times.append(best_base)
        pipe_times.append(best_pipe)
        eligible = len(eligible_outputs(transcript))
        print(f"{length:>8} {eligible:>8} {priced_total:>7} {best_base:>10.3f} "
              f"{best_pipe:>10.3f} {best_base / best_pipe:>7.2f}")  # fmt: skip
    if len(args.lengths) > 1:
        lengths = [float(n) for n in args.lengths]
        print(f"exponent baseline={slope(lengths, base_times):.2f} "
              f"pipeline={slope(lengths, pipe_times):.2f}")  # fmt: skip
    print(f"speedup={base_times[-1] / pipe_times[-1]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
