"""Benchmark: sweep throughput against a raw aiohttp loop on the same simulated servers.

    PYTHONPATH=. python scripts/bench_throughput.py [--configs 10] [--concurrency 50]
        [--latency 0.2] [--repeats 60] [--raw-seconds 12] [--rounds 3]
        [--endpoints-per-worker 1] [--override KEY=VALUE ...]

1. Starts the sim servers exactly as a sweep does (EndpointServers: same profiles, latency,
   pseudo-model) and records the request bodies of one trajectory per (configuration, arm),
   built by the pipeline's own wire code, so the raw loop sends the same request sizes.
2. Raw baseline: one client process (no Ray, no protocol, no storage) keeps `concurrency`
   POSTs in flight per server, cycling through the recorded bodies, for `--raw-seconds`.
3. Pipeline: a full sim sweep in a subprocess (`run_sweep(..., analyze=False)`) with the same
   configs, latency and concurrency. Requests come from the servers' counters (chat probes
   subtracted), time is the coordinator's first dispatch to last completion.
4. Steps 2 and 3 alternate for `--rounds` rounds (default 3), each raw run next to its
   pipeline run, so a change in the machine's load hits both sides of a round; the figures
   printed last are medians over the rounds (on this shared machine single runs of the
   same code scattered by +-10%).
Requests in flight = configs x concurrency in both (the coordinator keeps 2 x concurrency
trajectories per endpoint, so every request slot stays busy). CPU ms per request is the whole
process tree's (servers, client or driver, Ray) over the measured window.
The last line is `ratio_vs_raw=<float>` (median pipeline_rps / raw_rps; target >= 0.9). On 2
cores the raw loop is bound by the sim server process (one thread) and the pipeline by the
machine's CPU, so `cpu_ratio` (raw CPU per request / pipeline CPU per request) is printed too:
it says how much of the gap is the pipeline's own work (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repo: pipeline
sys.path.insert(0, str(Path(__file__).resolve().parent))  # _bench_common

from _bench_common import (
    TreeSampler,
    load_average,
    read_run,
    run_sweep_subprocess,
    sweep_overrides,
)

ARMS = "[j,q,m,x]"


@dataclass(frozen=True)
class RawResult:
    requests: int
    errors: int
    elapsed_s: float
    started: float  # epoch seconds
    finished: float


class RecordingClient:
    """Forwards to the real client and keeps each request body as the client sends it."""

    def __init__(self, inner: object, endpoint: object, bodies: list[bytes]) -> None:
        self.inner = inner
        self.endpoint = endpoint
        self.bodies = bodies

    async def complete(self, request: object) -> object:
        from pipeline.endpoints.wire import build_body, encode_body

        body, _ = build_body(self.endpoint, request, send_seed=True)  # type: ignore[arg-type]
        self.bodies.append(encode_body(body))
        return await self.inner.complete(request)  # type: ignore[attr-defined]


async def _record_bodies(p: object, endpoints: tuple[object, ...]) -> list[list[bytes]]:
    """One trajectory per (configuration, arm) through the real worker; their bodies."""
    from pipeline.endpoints.client import open_client
    from pipeline.study import UnitSpec
    from pipeline.sweep.run import publication_dates, worker_settings
    from pipeline.sweep.worker import EndpointWorkerCore

    dates = publication_dates(p.resolution)  # type: ignore[attr-defined]
    out: list[list[bytes]] = []
    for ep in endpoints:
        settings = worker_settings(p, ep, dates)  # type: ignore[arg-type]
        bodies: list[bytes] = []
        async with open_client(ep, retry=settings.retry, timeouts=settings.timeouts) as client:  # type: ignore[arg-type]
            core = EndpointWorkerCore(settings, RecordingClient(client, ep, bodies))  # type: ignore[arg-type]
            for arm in settings.study.arms():
                spec = UnitSpec("bench", ep.config_id, ep.model, "f", arm, 0, 0, 0)  # type: ignore[attr-defined]
                await core.run(spec)
        out.append(bodies)
    return out


def raw_client(
    urls: list[str], bodies: list[list[bytes]], concurrency: int, seconds: float
) -> RawResult:
    """The raw loop (runs in its own process): `concurrency` POSTs in flight per server.

    It runs on the event loop Ray gives the pipeline's actors (uvloop when installed), so
    the loop implementation is not a difference between the two sides.
    """
    try:
        import uvloop
    except ImportError:
        return asyncio.run(_raw(urls, bodies, concurrency, seconds))
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(_raw(urls, bodies, concurrency, seconds))


async def _raw(
    urls: list[str], bodies: list[list[bytes]], concurrency: int, seconds: float
) -> RawResult:
    import aiohttp

    counts = {"ok": 0, "errors": 0}
    headers = {"Content-Type": "application/json"}
    last = [0.0]
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        started = time.time()
        deadline = started + seconds

        async def worker(url: str, mine: list[bytes], offset: int) -> None:
            i = offset
            while time.time() < deadline:
                async with session.post(url, data=mine[i % len(mine)], headers=headers) as r:
                    await r.read()
                    counts["ok" if r.status == 200 else "errors"] += 1
                last[0] = time.time()
                i += 1

        await asyncio.gather(
            *(
                worker(f"{url}/chat/completions", mine, k)
                for url, mine in zip(urls, bodies, strict=True)
                for k in range(concurrency)
            )
        )
    return RawResult(counts["ok"], counts["errors"], last[0] - started, started, last[0])


def run_raw(args: argparse.Namespace, out_dir: Path) -> tuple[RawResult, float, int]:
    """Start equivalent servers, record bodies, run the raw loop; (result, cpu_s, server n)."""
    from pipeline.commands.start import prepare
    from pipeline.sweep.servers import EndpointServers

    overrides = [
        *sweep_overrides(
            out_dir, configs=args.configs, concurrency=args.concurrency, latency_s=args.latency
        ),
        f"arms={ARMS}",
    ]
    p = prepare(overrides)
    endpoints = [inc.endpoint for inc in p.resolution.included]
    pairs = [(inc.config_id, inc.model) for inc in p.resolution.included]
    models = p.study.sim_models(pairs, p.cfg.sim.seed)  # a sim panel
    with EndpointServers(
        p.resolution.kind, endpoints, p.cfg, out_dir, sim_models=models
    ) as servers:
        bodies = asyncio.run(_record_bodies(p, servers.endpoints))
        before = sum(c["requests"] for c in servers.counters().values())
        urls = [ep.base_url for ep in servers.endpoints]
        sampler = TreeSampler([os.getpid()]).start()
        with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
            raw = pool.submit(raw_client, urls, bodies, args.concurrency, args.raw_seconds)
            result = raw.result()
        sampler.stop()
        served = sum(c["requests"] for c in servers.counters().values()) - before
    sizes = [len(b) for per in bodies for b in per]
    print(
        f"request bodies: {len(sizes)} recorded, {min(sizes)}-{max(sizes)} bytes, "
        f"mean {sum(sizes) / len(sizes):.0f}"
    )
    by_name = sampler.cpu_by_name(result.started, result.finished)
    print("raw CPU s by process: " + ", ".join(f"{k}={v:.1f}" for k, v in by_name.items()))
    return result, sampler.cpu_between(result.started, result.finished), served


@dataclass(frozen=True)
class Round:
    raw_rps: float
    raw_ms: float  # CPU ms per request
    pipeline_rps: float
    pipeline_ms: float


def raw_round(args: argparse.Namespace, tmp: Path) -> tuple[float, float]:
    """One raw measurement: (requests/s, CPU ms per request)."""
    raw, raw_cpu, served = run_raw(args, tmp)
    raw_rps = raw.requests / raw.elapsed_s
    raw_ms = 1000 * raw_cpu / raw.requests
    print(
        f"raw: {raw.requests} requests ({raw.errors} errors, server saw {served}) "
        f"in {raw.elapsed_s:.2f} s"
    )
    print(f"raw_rps={raw_rps:.1f} raw_cpu_ms_per_request={raw_ms:.3f}")
    return raw_rps, raw_ms


def pipeline_round(args: argparse.Namespace, tmp: Path) -> tuple[float, float]:
    """One full sim sweep through the pipeline: (requests/s, CPU ms per request)."""
    overrides = [
        *sweep_overrides(
            tmp, configs=args.configs, concurrency=args.concurrency, latency_s=args.latency
        ),
        f"arms={ARMS}",
        f"repeats={args.repeats}",
        f"ray.endpoints_per_worker={args.endpoints_per_worker}",
        *args.override,
    ]
    run = run_sweep_subprocess(overrides)
    figures = read_run(run.run_dir)
    cpu = run.sampler.cpu_between(figures.first_dispatch, figures.last_complete)
    pipeline_rps = figures.pipeline_requests / figures.window_s
    pipeline_ms = 1000 * cpu / figures.pipeline_requests
    print(
        f"pipeline: {figures.trajectories} trajectories ({figures.valid} valid), "
        f"{figures.pipeline_requests} requests (server) / {figures.row_requests} (rows) "
        f"in {figures.window_s:.2f} s dispatch-to-last-completion; whole run {run.wall_s:.1f} s"
    )
    print(f"pipeline_rps={pipeline_rps:.1f} pipeline_cpu_ms_per_request={pipeline_ms:.3f}")
    by_name = run.sampler.cpu_by_name(figures.first_dispatch, figures.last_complete)
    shares = sorted(by_name.items(), key=lambda kv: -kv[1])
    print("pipeline CPU s by process: " + ", ".join(f"{k}={v:.1f}" for k, v in shares if v >= 0.05))
    return pipeline_rps, pipeline_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--repeats", type=int, default=60)
    parser.add_argument("--raw-seconds", type=float, default=12.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--endpoints-per-worker", type=int, default=1)
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        help="a sweep override for the pipeline rounds only, e.g. cache.scope=off (repeatable)",
    )
    args = parser.parse_args()
    in_flight = args.configs * args.concurrency
    print(f"load average before: {load_average()}; requests in flight: {in_flight}")
    rounds: list[Round] = []
    for number in range(1, args.rounds + 1):
        print(f"--- round {number} of {args.rounds} (load average {load_average()})")
        with tempfile.TemporaryDirectory(prefix="bench-throughput-") as tmp:
            raw_rps, raw_ms = raw_round(args, Path(tmp))
            pipeline_rps, pipeline_ms = pipeline_round(args, Path(tmp))
        rounds.append(Round(raw_rps, raw_ms, pipeline_rps, pipeline_ms))
        print(f"round ratio_vs_raw={pipeline_rps / raw_rps:.3f}")
    print(f"load average after: {load_average()}")
    ratios = [r.pipeline_rps / r.raw_rps for r in rounds]
    cpu_ratios = [r.raw_ms / r.pipeline_ms for r in rounds]
    print(f"per-round ratio_vs_raw: {', '.join(f'{x:.3f}' for x in ratios)}")
    print(
        f"median raw_rps={median(r.raw_rps for r in rounds):.1f} "
        f"pipeline_rps={median(r.pipeline_rps for r in rounds):.1f} "
        f"raw_cpu_ms_per_request={median(r.raw_ms for r in rounds):.3f} "
        f"pipeline_cpu_ms_per_request={median(r.pipeline_ms for r in rounds):.3f}"
    )
    print(f"cpu_ratio={median(cpu_ratios):.3f} (raw CPU per request / pipeline CPU per request)")
    print(f"ratio_vs_raw={median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
