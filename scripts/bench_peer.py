"""Benchmark: foldsweep's request path against inspect_ai's, on the same sim server.

    PYTHONPATH=. python scripts/bench_peer.py [--concurrency 500] [--requests 8000]
        [--peer-requests 4000] [--rounds 3] [--peer-python PATH]

Why: a user choosing a harness for sweeps of many served endpoints wants to know how many
requests per second each one's client side can keep up, when the server is not the limit.

1. One sim server (a sim panel's first configuration, zero latency) runs in a child process.
2. foldsweep: one process drives one `EndpointWorkerCore` (its request boundary, cache in a
   temporary directory, the carrier protocol, no Ray, no sink), `--concurrency` requests in
   flight (a quarter as many carrier units, each sending its folds and recall in turn), until
   `--requests` requests are answered. Ray's fan-out across processes is left out on purpose:
   both sides get one process.
3. inspect_ai: one process runs an eval of `--peer-requests` samples (one `generate` each, no
   scorer) on the OpenAI provider pointed at the same server, `max_connections` =
   `--concurrency`, logs to a temporary directory, no display. Its interpreter is
   `--peer-python` (default this one), so foldsweep's environment need not hold inspect_ai:
   `pip install -e '.[bench]'` there, or any venv with `inspect_ai` and `openai`.
4. Both sides send bodies of the same size: each sample's input is padded so its JSON body is
   foldsweep's median body (both sizes are printed).
5. Rounds alternate the two sides; each reports requests answered over its own wall time, from
   its first request to its last reply, start-up left out. The last line is
   `ratio_vs_inspect=` (median foldsweep requests/s over median inspect_ai requests/s).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))

REPO = HERE.parent.parent
ARMS = ("j", "q", "m", "x")
PEER_CODE = r"""
import json, os, sys, time, tempfile
url, model = sys.argv[1], sys.argv[2]
n, concurrency, pad = map(int, sys.argv[3:6])
os.environ.setdefault("OPENAI_API_KEY", "unused")
os.environ["INSPECT_LOG_LEVEL"] = "error"
from inspect_ai import Task, eval as run_eval
from inspect_ai.dataset import Sample
from inspect_ai.solver import generate
text = "x" * pad
task = Task(dataset=[Sample(input=text) for _ in range(n)], solver=generate())
with tempfile.TemporaryDirectory() as logs:
    started = time.perf_counter()
    log = run_eval(task, model=f"openai/{model}", model_base_url=url, max_connections=concurrency,
                   max_samples=concurrency, display="none", log_dir=logs, log_samples=False,
                   max_tokens=16)[0]
    elapsed = time.perf_counter() - started
print(json.dumps({"requests": n, "seconds": elapsed, "status": log.status}))
"""


def foldsweep_side(url: str, requests: int, concurrency: int) -> dict[str, float]:
    """Requests per second of one worker core with `concurrency` requests in flight."""
    import asyncio
    import dataclasses

    from _bench_common import sweep_overrides

    from pipeline.commands.start import prepare
    from pipeline.config.schema import Limits
    from pipeline.study import UnitSpec
    from pipeline.sweep.run import publication_dates, worker_settings
    from pipeline.sweep.worker import EndpointWorkerCore

    with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
        p = prepare([*sweep_overrides(Path(tmp), configs=1, latency_s=0), "arms=[j,q,m,x]"])
        included = p.resolution.included[0]
        limits = Limits(concurrency=concurrency)
        ep = dataclasses.replace(included.endpoint, base_url=url, limits=limits)
        settings = worker_settings(p, ep, publication_dates(p.resolution))
        settings = dataclasses.replace(settings, cache_dir=str(Path(tmp) / "cache"))
        core = EndpointWorkerCore(settings)
        units = max(1, concurrency // 4)  # each unit has one request in flight at a time

        def spec(n: int) -> UnitSpec:
            return UnitSpec("bench", ep.config_id, ep.model, "f", ARMS[n % 4], 0, n // 4, 0)

        async def go() -> dict[str, float]:
            await asyncio.gather(*(core.run(spec(-1 - n)) for n in range(8)))  # warm-up
            done = sent = 0
            started = time.perf_counter()
            queue = iter(range(10**9))

            async def lane() -> None:
                nonlocal done
                while done < requests:
                    record = await core.run(spec(next(queue)))
                    done += int(record.row["requests"])

            await asyncio.gather(*(lane() for _ in range(units)))
            elapsed = time.perf_counter() - started
            sent = done
            await core.close()
            return {"requests": float(sent), "seconds": elapsed}

        return asyncio.run(go())


def median_body(url: str) -> int:
    """The median size of foldsweep's request bodies for one unit per arm."""
    import asyncio
    import dataclasses

    from _bench_common import sweep_overrides
    from bench_throughput import RecordingClient

    from pipeline.commands.start import prepare
    from pipeline.endpoints.client import open_client
    from pipeline.study import UnitSpec
    from pipeline.sweep.run import publication_dates, worker_settings
    from pipeline.sweep.worker import EndpointWorkerCore

    with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
        p = prepare([*sweep_overrides(Path(tmp), configs=1, latency_s=0), "arms=[j,q,m,x]"])
        ep = dataclasses.replace(p.resolution.included[0].endpoint, base_url=url)
        settings = worker_settings(p, ep, publication_dates(p.resolution))
        bodies: list[bytes] = []

        async def go() -> None:
            async with open_client(ep, retry=settings.retry, timeouts=settings.timeouts) as c:
                core = EndpointWorkerCore(settings, RecordingClient(c, ep, bodies))  # type: ignore[arg-type]
                for arm in ARMS:
                    await core.run(UnitSpec("bench", ep.config_id, ep.model, "f", arm, 0, 0, 0))

        asyncio.run(go())
    return int(statistics.median(len(b) for b in bodies))


def peer_side(
    python: str, url: str, model: str, *, n: int, concurrency: int, pad: int
) -> dict[str, float]:
    cmd = [python, "-c", PEER_CODE, url, model, str(n), str(concurrency), str(pad)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"inspect_ai run failed: {done.stderr.strip()[-1500:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _check_peer(python: str) -> str:
    """inspect_ai's version under `python`, or one line saying how to get it."""
    probe = "import inspect_ai, openai; print(inspect_ai.__version__)"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(
            f"inspect_ai is not importable by {python}: pip install -e '.[bench]', or pass "
            "--peer-python PATH of a venv with inspect_ai and openai"
        )
    return done.stdout.strip()


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrency", type=int, default=500)
    parser.add_argument("--requests", type=int, default=8000, help="foldsweep's per round")
    parser.add_argument("--peer-requests", type=int, default=4000, help="inspect_ai's per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-python", default=sys.executable)
    args = parser.parse_args()
    for name in ("concurrency", "requests", "peer_requests", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    return args


def main() -> int:
    args = _arguments()
    version = _check_peer(args.peer_python)
    sys.path.insert(0, str(REPO))
    from _bench_common import sweep_overrides

    from pipeline.commands.start import prepare
    from pipeline.sweep.servers import EndpointServers

    with tempfile.TemporaryDirectory(prefix="bench-peer-server-") as tmp:
        overrides = [*sweep_overrides(Path(tmp), configs=1, latency_s=0), "arms=[j]"]
        overrides.append(f"sim.concurrency={args.concurrency}")
        p = prepare(overrides)
        endpoints = [inc.endpoint for inc in p.resolution.included]
        pairs = [(inc.config_id, inc.model) for inc in p.resolution.included]
        models = p.study.sim_models(pairs, p.cfg.sim.seed)
        with EndpointServers("sim", endpoints, p.cfg, Path(tmp), sim_models=models) as servers:
            url, model = servers.endpoints[0].base_url, endpoints[0].model
            assert url is not None
            body = median_body(url)
            empty = len(json.dumps({"model": model, "messages": [{"role": "user", "content": ""}]}))
            pad = max(0, body - empty - 60)  # inspect adds max_tokens and a few fields
            print(f"sim server at {url}; inspect_ai {version}; load {os.getloadavg()[0]:.2f}")
            print(f"bodies: foldsweep median {body} bytes, inspect_ai about {empty + pad + 60}")
            ours: list[float] = []
            theirs: list[float] = []
            for number in range(args.rounds):
                f = foldsweep_side(url, args.requests, args.concurrency)
                i = peer_side(
                    args.peer_python,
                    url,
                    model,
                    n=args.peer_requests,
                    concurrency=args.concurrency,
                    pad=pad,
                )
                ours.append(f["requests"] / f["seconds"])
                theirs.append(i["requests"] / i["seconds"])
                print(
                    f"round {number + 1}: foldsweep {ours[-1]:,.0f} requests/s "
                    f"({f['requests']:.0f} in {f['seconds']:.1f} s), inspect_ai "
                    f"{theirs[-1]:,.0f} requests/s ({i['requests']:.0f} in {i['seconds']:.1f} s)"
                    f"; load {os.getloadavg()[0]:.2f}",
                    flush=True,
                )
    print(
        f"medians: foldsweep {statistics.median(ours):,.0f}, inspect_ai "
        f"{statistics.median(theirs):,.0f} requests/s"
    )
    print(f"ratio_vs_inspect={statistics.median(ours) / statistics.median(theirs):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
