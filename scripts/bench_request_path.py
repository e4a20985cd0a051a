"""Benchmark: the worker's cost per request, counted in instructions (deterministic).

    PYTHONPATH=. python scripts/bench_request_path.py [--base-tree DIR] [--units 100]
        [--concurrency 4] [--native-rounds 5] [--no-callgrind] [--no-http] [--keep-dumps DIR]

Why: `bench_throughput.py` measures the whole process tree of a Ray sweep in CPU seconds, and
on this 2-core machine the same code scatters by up to 45% between rounds, so it cannot
resolve issue 18's "within 5%". This bench isolates the part the request boundary changed, the
EndpointWorker's request path, and counts it in a way that does not depend on the machine's
load:

1. One sim server (a sim panel's first configuration, zero latency) runs in a child process,
   started once by this script with the code of this checkout, so every variant talks to the
   same server.
2. A variant is a source tree (this checkout, or `--base-tree`: e.g. a worktree at the commit
   before the boundary) and a cache setting. The variant's code runs one
   `EndpointWorkerCore` (no Ray, no driver) through its own `prepare` and `worker_settings`,
   over real HTTP, `concurrency` carrier units at a time (arms j, q, m, x, as the throughput
   bench), then commits their records through its own `Sink` (rows, study tables and, after
   the boundary, the `requests` table), as the coordinator does; between the two it pickles
   and unpickles the records (protocol 5), as the Ray hop from actor to driver does.
3. Under `valgrind --tool=callgrind --instr-atstart=no` the child turns instrumentation on
   just before its measured loop and off after it, through callgrind's client requests (a
   ten-line C library this script compiles with gcc against valgrind's `callgrind.h`; outside
   valgrind its calls do nothing), so start-up, imports and warm-up are not counted. Before
   the loop the child collects and freezes the heap (`gc.freeze`), so a full collection of
   the imports' objects cannot land in one run and not another, and sets the collector's
   thresholds as the EndpointWorker actor does (`tune_collector`) for the worker's part and
   back to Python's default (the coordinator's) for the commit. Callgrind counts user-space
   instructions: the same total for the same code, inputs and environment, whatever else the
   machine does. It does not count the kernel's work (the cache's appends are syscalls), so
   step 4 measures CPU time too.
4. Natively, `--native-rounds` rounds alternate the variants; each child reports the user and
   system CPU seconds of its measured loop (after two warm-up units), and the figure is the
   fastest round per variant (the least disturbed by other work).

Variants: `base` (the base tree, which has no response cache), `cache on` and `cache off`
(this checkout, the cache at the run's directory, as `cache.scope=run`, or off), and with
`--no-http`, `no HTTP`: `cache on` answered from replies a native run recorded first, so
`cache on` minus `no HTTP` is the HTTP exchange (`http_exchange_instructions_per_request=`;
a sampling profile overstates it, since its samples include system time; `--profile` then
samples `no HTTP`, whose phases it can split). The last lines
are `ratio_cache_on_vs_base=` (callgrind instructions per request) and
`native_ratio_cache_on_vs_base=` (CPU per request): issue 18's goal is <= 1.05.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

HERE = Path(__file__).resolve()
sys.path.insert(0, str(HERE.parent))  # _bench_common

from _bench_common import sweep_overrides  # noqa: E402 - after the path it needs
from _phases import APART, Profile, classify  # noqa: E402

REPO = HERE.parent.parent
ARMS = ("j", "q", "m", "x")
WARM_UNITS = 2


TOGGLE_C = """
#include <valgrind/callgrind.h>
void bench_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void bench_mark(void) { CALLGRIND_DUMP_STATS; }
void bench_stop(void) { CALLGRIND_STOP_INSTRUMENTATION; }
"""


def build_toggle(tmp: Path) -> Path:
    """The client-request library: instrumentation on and off from Python (ctypes)."""
    source, lib = tmp / "toggle.c", tmp / "toggle.so"
    source.write_text(TOGGLE_C)
    cmd = ["gcc", "-shared", "-fPIC", "-O1", "-o", str(lib), str(source)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"cannot build the callgrind toggle (needs gcc, valgrind): {done.stderr}")
    return lib


def _overrides(out_dir: Path) -> list[str]:
    return [*sweep_overrides(out_dir, configs=1, latency_s=0), f"arms=[{','.join(ARMS)}]"]


# --- the child: one variant's worker, run by that variant's code ---------------------------


def _prepare(overrides: list[str]) -> object:
    try:
        from pipeline.commands.start import prepare  # after the boundary
    except ImportError:
        from pipeline.sweep.run import prepare  # type: ignore[no-redef,attr-defined]  # before
    return prepare(overrides)


async def _units(core: object, specs: list[object], concurrency: int) -> list[object]:
    done: list[object] = []
    for start in range(0, len(specs), concurrency):
        batch = specs[start : start + concurrency]
        done.extend(await asyncio.gather(*(core.run(s) for s in batch)))  # type: ignore[attr-defined]
    return done


def _on_uvloop(main: Coroutine[Any, Any, dict[str, float]]) -> dict[str, float]:
    try:
        import uvloop  # the loop Ray gives the actors, when installed
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def _commit(sink: Any, records: list[object]) -> None:
    """Commit records as the coordinator does: add each, then flush one batch."""
    for r in records:
        sink.add(r)
    sink.flush()


def _replies_in_place(replies: Path, *, record: bool) -> None:
    """Record each HTTP exchange's result by its body, or answer from that record instead of
    the network: the `no HTTP` variant counts everything but aiohttp, uvloop's transport and
    the sockets (the client's `_send`; the wire, retries and limiter around it still run)."""
    import atexit
    import pickle

    from pipeline.endpoints.client import OpenAIChatClient

    real = OpenAIChatClient._send
    if record:
        seen: dict[bytes | None, object] = {}
        atexit.register(lambda: replies.write_bytes(pickle.dumps(seen)))

        async def recording(
            self: OpenAIChatClient, method: str, url: str, payload: bytes | None, cap: int | None
        ) -> tuple[int, dict[str, str], bytes]:
            seen[payload] = got = await real(self, method, url, payload, cap)
            return got

        OpenAIChatClient._send = recording  # type: ignore[method-assign]
        return
    known = pickle.loads(replies.read_bytes())

    async def replayed(
        self: OpenAIChatClient, method: str, url: str, payload: bytes | None, cap: int | None
    ) -> tuple[int, dict[str, str], bytes]:
        return known[payload]  # type: ignore[no-any-return]

    OpenAIChatClient._send = replayed  # type: ignore[method-assign]


def _frozen_as_the_actor() -> tuple[int, ...]:
    """Collect and freeze the heap, then set the collector as an EndpointWorker actor does;
    returns the thresholds before (Python's default, which the coordinator keeps) for the
    commit. The actor's setting comes from the variant's code where it names it, else it is
    the literal its actor used before (`gc.set_threshold` in `endpoint_actor.py`), so every
    variant's worker runs as it does in a sweep."""
    import gc

    gc.collect()
    gc.freeze()
    before = gc.get_threshold()
    try:
        from pipeline.sweep.worker import tune_collector
    except ImportError:
        gc.set_threshold(100_000, 50, 100)
    else:
        tune_collector()
    return before


def child(
    url: str,
    units: int,
    concurrency: int,
    cache: bool,
    tmp: Path,
    *,
    toggle: Path | None,
    replies: Path | None = None,
    record: bool = False,
) -> dict[str, float]:
    """Run `units` units through one worker core and commit them; report requests and CPU."""
    import ctypes
    import dataclasses
    import gc
    import pickle

    from pipeline.study import UnitSpec
    from pipeline.sweep.run import publication_dates, worker_settings
    from pipeline.sweep.sink import Sink
    from pipeline.sweep.worker import EndpointWorkerCore

    p = _prepare(_overrides(tmp / "runs"))
    included = p.resolution.included[0]  # type: ignore[attr-defined]
    ep = dataclasses.replace(included.endpoint, base_url=url)
    settings = worker_settings(p, ep, publication_dates(p.resolution))  # type: ignore[arg-type,attr-defined]
    if any(f.name == "cache_dir" for f in dataclasses.fields(settings)):
        cache_dir = str(tmp / "cache") if cache else None
        settings = dataclasses.replace(settings, cache_dir=cache_dir)  # type: ignore[call-arg]
    core = EndpointWorkerCore(settings)
    if replies is not None:
        _replies_in_place(replies, record=record)
    run_dir = tmp / "run"
    run_dir.mkdir(parents=True)
    sink = Sink(run_dir, "bench", p.layout)  # type: ignore[attr-defined]

    def spec(n: int) -> object:
        arm = ARMS[n % len(ARMS)]
        return UnitSpec("bench", ep.config_id, ep.model, "f", arm, 0, n // len(ARMS), 0)

    async def go() -> dict[str, float]:
        # warm-up units have negative repeats: keys of their own, so the measured units miss
        # the cache as a sweep's first session does (each a lookup, a send and an append)
        warm = await _units(core, [spec(-1 - n) for n in range(WARM_UNITS)], concurrency)
        # ... and are committed to a run of their own, so the sink's lazy imports (pyarrow's
        # compute module, on the first sort) happen once per process, as in a sweep, not in
        # the measured commit
        warm_dir = tmp / "warm-run"
        warm_dir.mkdir(parents=True)
        warm_sink = Sink(warm_dir, "bench-warm", p.layout)  # type: ignore[attr-defined]
        _commit(warm_sink, pickle.loads(pickle.dumps(warm, protocol=5)))
        driver = _frozen_as_the_actor()
        lib = ctypes.CDLL(str(toggle)) if toggle is not None else None
        before = resource.getrusage(resource.RUSAGE_SELF)
        if lib is not None:
            lib.bench_start()
        records = await _units(core, [spec(n) for n in range(units)], concurrency)
        if lib is not None:
            lib.bench_mark()  # the worker's part ends here: dumped as its own file, then zeroed
        gc.set_threshold(*driver)
        # the Ray hop: an actor's return value is pickled (protocol 5) and unpickled
        records = pickle.loads(pickle.dumps(records, protocol=5))
        if lib is not None:
            lib.bench_mark()
        _commit(sink, records)
        if lib is not None:
            lib.bench_stop()
        after = resource.getrusage(resource.RUSAGE_SELF)
        await core.close()
        stored = sum(f.stat().st_size for f in (tmp / "cache").rglob("*") if f.is_file())
        return {
            "cache_bytes": float(stored if cache else 0),
            "requests": float(sum(r.row["requests"] for r in records)),  # type: ignore[attr-defined]
            "valid": float(sum(bool(r.row["valid"]) for r in records)),  # type: ignore[attr-defined]
            "user_s": after.ru_utime - before.ru_utime,
            "sys_s": after.ru_stime - before.ru_stime,
        }

    return _on_uvloop(go())


def raw_child(
    url: str, requests: int, concurrency: int, *, toggle: Path | None
) -> dict[str, float]:
    """The floor: the same bodies POSTed with plain aiohttp, `concurrency` in flight, counted
    the same way. The bodies are the worker's own, recorded from one unit per arm."""
    import ctypes
    import dataclasses
    import gc

    import aiohttp
    from bench_throughput import RecordingClient

    from pipeline.endpoints.client import open_client
    from pipeline.study import UnitSpec
    from pipeline.sweep.run import publication_dates, worker_settings
    from pipeline.sweep.worker import EndpointWorkerCore

    with tempfile.TemporaryDirectory(prefix="bench-path-raw-") as tmp:
        p = _prepare(_overrides(Path(tmp) / "runs"))
    ep = dataclasses.replace(p.resolution.included[0].endpoint, base_url=url)  # type: ignore[attr-defined]
    settings = worker_settings(p, ep, publication_dates(p.resolution))  # type: ignore[arg-type,attr-defined]

    async def go() -> dict[str, float]:
        bodies: list[bytes] = []
        async with open_client(ep, retry=settings.retry, timeouts=settings.timeouts) as client:
            core = EndpointWorkerCore(settings, RecordingClient(client, ep, bodies))  # type: ignore[arg-type]
            for arm in ARMS:
                await core.run(UnitSpec("bench", ep.config_id, ep.model, "f", arm, 0, 0, 0))
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        target = f"{url}/chat/completions"
        ok = [0]
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

            async def post(body: bytes) -> None:
                async with session.post(target, data=body, headers=headers) as reply:
                    await reply.read()
                    ok[0] += reply.status == 200

            await asyncio.gather(*(post(b) for b in bodies[:concurrency]))  # warm connections
            ok[0] = 0
            gc.collect()
            gc.freeze()
            lib = ctypes.CDLL(str(toggle)) if toggle is not None else None
            if lib is not None:
                lib.bench_start()
            for start in range(0, requests, concurrency):
                batch = range(start, min(requests, start + concurrency))
                await asyncio.gather(*(post(bodies[n % len(bodies)]) for n in batch))
            if lib is not None:
                lib.bench_stop()
        return {"requests": float(requests), "ok": float(ok[0])}

    return _on_uvloop(go())


# --- the parent: server, variants, callgrind and native rounds ------------------------------


@dataclass(frozen=True)
class Variant:
    name: str
    tree: Path
    cache: bool
    replies: Path | None = None  # the `no HTTP` variant: answered from recorded replies


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tree)
    env["PYTHONHASHSEED"] = "0"  # the same dict and set orders in every run: the same count
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return env


def _child_cmd(
    v: Variant, url: str, units: int, concurrency: int, tmp: Path, *, toggle: Path | None = None
) -> list[str]:
    extra = ["--toggle", str(toggle)] if toggle is not None else []
    if v.replies is not None:
        extra += ["--replies", str(v.replies)]
    return [
        sys.executable,
        str(HERE),
        "--child",
        url,
        "--units",
        str(units),
        "--concurrency",
        str(concurrency),
        "--cache" if v.cache else "--no-cache",
        "--tmp",
        str(tmp),
        *extra,
    ]


def _run_child(cmd: list[str], tree: Path) -> dict[str, float]:
    done = subprocess.run(cmd, env=_env(tree), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"child failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


class Counted(NamedTuple):
    worker: int  # instructions of the units' run through the worker core
    transfer: int  # of pickling and unpickling their records (the Ray hop)
    sink: int  # of committing them
    requests: float


def _total(path: Path) -> int:
    # `totals:` is what was collected; `summary:` is 0 when instrumentation starts off
    match = re.search(r"^totals:\s+(\d+)", path.read_text(errors="replace"), re.MULTILINE)
    if match is None:
        raise SystemExit(f"no instruction total in callgrind's output {path}")
    return int(match.group(1))


def callgrind(
    v: Variant, url: str, units: int, concurrency: int, keep: Path | None = None
) -> Counted:
    """The instructions of one child run's measured loop under callgrind; with `keep`, its
    three dumps are copied there (`callgrind_annotate` reads them)."""
    with tempfile.TemporaryDirectory(prefix="bench-path-") as tmp:
        out = Path(tmp) / "callgrind.out"
        toggle = build_toggle(Path(tmp))
        cmd = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            f"--callgrind-out-file={out}",
            *_child_cmd(v, url, units, concurrency, Path(tmp), toggle=toggle),
        ]
        figures = _run_child(cmd, v.tree)
        dumps = Path(f"{out}.1"), Path(f"{out}.2"), out
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for part, dump in zip(("worker", "transfer", "sink"), dumps, strict=True):
                shutil.copy(dump, keep / f"{v.name.replace(' ', '-')}.{part}.callgrind")
        return Counted(*map(_total, dumps), figures["requests"])


def raw_floor(url: str, requests: int, concurrency: int) -> float:
    """Instructions per request of plain aiohttp sending the worker's bodies (the floor)."""
    with tempfile.TemporaryDirectory(prefix="bench-path-") as tmp:
        out = Path(tmp) / "callgrind.out"
        toggle = build_toggle(Path(tmp))
        child_args = ["--raw-child", url, "--units", str(requests)]
        child_args += ["--concurrency", str(concurrency), "--toggle", str(toggle)]
        cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no"]
        cmd += [f"--callgrind-out-file={out}", sys.executable, str(HERE), *child_args]
        figures = _run_child(cmd, REPO)
        if figures["ok"] != figures["requests"]:
            raise SystemExit(f"raw floor: {figures['ok']:.0f} of {requests} requests answered 200")
        return _total(out) / figures["requests"]


def native(v: Variant, url: str, units: int, concurrency: int) -> tuple[float, dict[str, float]]:
    """CPU ms per request of one native child run, and its figures."""
    with tempfile.TemporaryDirectory(prefix="bench-path-") as tmp:
        figures = _run_child(_child_cmd(v, url, units, concurrency, Path(tmp)), v.tree)
    return 1000 * (figures["user_s"] + figures["sys_s"]) / figures["requests"], figures


def profile(v: Variant, url: str, units: int, concurrency: int, py_spy: str) -> Profile:
    """One native child run sampled by py-spy (1 kHz, idle samples left out), in phases."""
    with tempfile.TemporaryDirectory(prefix="bench-path-") as tmp:
        raw = Path(tmp) / "profile.txt"
        sampled = [py_spy, "record", "--rate", "1000", "--format", "raw", "--output", str(raw)]
        cmd = [*sampled, "--", *_child_cmd(v, url, units, concurrency, Path(tmp))]
        done = subprocess.run(cmd, env=_env(v.tree), capture_output=True, text=True, check=False)
        if done.returncode != 0 or not raw.exists():
            raise SystemExit(f"py-spy failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        return classify(raw)


def _print_profile(found: Profile, per_request: float | None, top: int) -> None:
    """Shares of the worker's samples; with a callgrind count, instructions per request too."""
    total = found.worker_total()
    print(f"profile: {total} worker samples ({found.startup} start-up samples left out)")
    for phase, n in sorted(found.phases.items(), key=lambda kv: -kv[1]):
        share = n / total
        if phase in APART:
            print(f"  {phase:<48} {n:>6} samples (counted apart by callgrind)")
            continue
        count = f" ~{share * per_request:>10,.0f} instructions" if per_request else ""
        print(f"  {phase:<48} {100 * share:5.1f}%{count}")
    print(f"profile: the {top} functions with the most worker samples")
    for function, n in found.functions.most_common(top):
        print(f"  {100 * n / total:5.1f}% {function}")


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--tmp", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--toggle", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--raw-child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--replies", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--record", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--cache", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--base-tree", type=Path, help="a source tree to compare with")
    parser.add_argument(
        "--base-cache",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the base tree with its response cache on, as `cache on` (a tree from before "
        "the cache ignores it)",
    )
    parser.add_argument("--units", type=int, default=100, help="units counted under callgrind")
    parser.add_argument("--native-units", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--native-rounds", type=int, default=5)
    parser.add_argument("--no-callgrind", action="store_true")
    parser.add_argument(
        "--keep-dumps",
        type=Path,
        metavar="DIR",
        help="copy each variant's callgrind dumps to DIR (e.g. DIR/no-HTTP.worker.callgrind)",
    )
    parser.add_argument(
        "--no-http",
        action="store_true",
        help="also count `cache on` with the HTTP exchange answered from recorded replies",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also sample one native run with py-spy and print the worker's phases: of "
        "`no HTTP` with --no-http, else of `cache on`",
    )
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    return parser.parse_args()


def _counted(variants: list[Variant], url: str, args: argparse.Namespace) -> dict[str, Counted]:
    counted: dict[str, Counted] = {}
    for v in variants:
        t0 = time.monotonic()
        c = counted[v.name] = callgrind(v, url, args.units, args.concurrency, args.keep_dumps)
        print(
            f"callgrind {v.name}: {c.requests:.0f} requests, worker "
            f"{c.worker / c.requests:,.0f} + transfer {c.transfer / c.requests:,.0f}"
            f" + sink {c.sink / c.requests:,.0f} = "
            f"{(c.worker + c.transfer + c.sink) / c.requests:,.0f} instructions per request "
            f"({time.monotonic() - t0:.0f} s)",
            flush=True,
        )
    return counted


def _recorded(url: str, tmp: Path, args: argparse.Namespace) -> Variant:
    """The `no HTTP` variant, its replies recorded by one native `cache on` run first."""
    replies = tmp / "replies.pickle"
    units = max(args.units, args.native_units)  # every variant's units, the same specs
    with tempfile.TemporaryDirectory(prefix="bench-path-") as scratch:
        v = Variant("record", REPO, True, replies)
        _run_child([*_child_cmd(v, url, units, args.concurrency, Path(scratch)), "--record"], REPO)
    return Variant("no HTTP", REPO, True, replies)


def _native_rounds(variants: list[Variant], url: str, args: argparse.Namespace) -> dict[str, float]:
    best: dict[str, float] = {}
    for number in range(args.native_rounds):
        for v in variants:
            ms, figures = native(v, url, args.native_units, args.concurrency)
            best[v.name] = min(ms, best.get(v.name, ms))
            print(
                f"native round {number + 1} {v.name}: {ms:.3f} CPU ms per request "
                f"({figures['requests']:.0f} requests, {figures['valid']:.0f} valid "
                f"units, user {figures['user_s']:.2f} s, sys {figures['sys_s']:.2f} s, "
                f"{figures['cache_bytes'] / 1024:.0f} KiB cached)",
                flush=True,
            )
    return best


def _ratios(prefix: str, figures: dict[str, float]) -> None:
    if "base" not in figures:
        return
    for name in ("cache on", "cache off"):
        key = name.replace(" ", "_")
        print(f"{prefix}ratio_{key}_vs_base={figures[name] / figures['base']:.4f}")


def main() -> int:
    args = _arguments()
    if args.raw_child:
        print(
            json.dumps(raw_child(args.raw_child, args.units, args.concurrency, toggle=args.toggle))
        )
        return 0
    if args.child:
        figures = child(
            args.child,
            args.units,
            args.concurrency,
            args.cache,
            args.tmp,
            toggle=args.toggle,
            replies=args.replies,
            record=args.record,
        )
        print(json.dumps(figures))
        return 0
    if not args.no_callgrind and shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed: apt-get install valgrind, or --no-callgrind")
    if args.profile and shutil.which(args.py_spy) is None:
        raise SystemExit(f"py-spy not found ({args.py_spy}): pip install -e '.[bench]' or --py-spy")
    variants = [Variant("cache on", REPO, True), Variant("cache off", REPO, False)]
    if args.base_tree is not None:
        variants.insert(0, Variant("base", args.base_tree.resolve(), args.base_cache))
    sys.path.insert(0, str(REPO))
    from pipeline.commands.start import prepare
    from pipeline.sweep.servers import EndpointServers

    with tempfile.TemporaryDirectory(prefix="bench-path-server-") as tmp:
        p = prepare(_overrides(Path(tmp)))
        endpoints = [inc.endpoint for inc in p.resolution.included]
        pairs = [(inc.config_id, inc.model) for inc in p.resolution.included]
        models = p.study.sim_models(pairs, p.cfg.sim.seed)
        with EndpointServers("sim", endpoints, p.cfg, Path(tmp), sim_models=models) as servers:
            url = servers.endpoints[0].base_url
            assert url is not None
            print(f"sim server at {url}; load average {os.getloadavg()[0]:.2f}", flush=True)
            if args.no_http:
                variants.append(_recorded(url, Path(tmp), args))
            counted = {} if args.no_callgrind else _counted(variants, url, args)
            if counted:
                requests = int(counted["cache on"].requests)
                floor = raw_floor(url, requests, args.concurrency)
                print(
                    f"callgrind raw aiohttp: {requests} requests, {floor:,.0f} instructions per "
                    "request (the floor: the same bodies, plain aiohttp, nothing else)",
                    flush=True,
                )
            if args.profile:
                # without HTTP the samples hold almost no system time, so their shares of the
                # counted worker are the phases' instructions (see the module doc)
                sampled = next(v for v in variants[::-1] if v.name in ("no HTTP", "cache on"))
                found = profile(sampled, url, args.native_units, args.concurrency, args.py_spy)
                on = counted.get(sampled.name)
                print(f"profile of `{sampled.name}`", flush=True)
                _print_profile(found, on.worker / on.requests if on else None, top=25)
            best = _native_rounds(variants, url, args)
    for name, value in best.items():
        print(f"native fastest {name}: {value:.3f} CPU ms per request")
    if "no HTTP" in counted:
        on, off = counted["cache on"], counted["no HTTP"]
        http = on.worker / on.requests - off.worker / off.requests
        print(f"http_exchange_instructions_per_request={http:,.0f} (cache on - no HTTP, worker)")
    _ratios("", {k: (c.worker + c.transfer + c.sink) / c.requests for k, c in counted.items()})
    _ratios("native_", best)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
