"""Benchmark: foldsweep's requests per second against inspect_ai's, on one zero-latency sim server.

    PYTHONPATH=. python scripts/bench_peer.py [--peer-python PATH] [--rounds 3]
        [--concurrency 500] [--units 2500] [--samples 1000] [--side-timeout 60]

The peer, inspect_ai, comes from the bench-only extra: `pip install -e '.[bench]'` makes the
default `--peer-python` (this interpreter) work; otherwise give an interpreter that has it, so
foldsweep's own virtualenv stays as CI builds it.

1. One sim server (a sim panel's first configuration, zero latency) runs in a child process,
   started as a sweep starts it (`EndpointServers`). Both sides talk to it over 127.0.0.1 only.
2. foldsweep's side is the EndpointWorker path, as `bench_request_path.py` drives it: one
   `EndpointWorkerCore` (no Ray, no driver) in a child process of this checkout's code, with
   the cache on (`cache.scope=run`, the default), `--concurrency` carrier units in flight (arms
   j, q, m, x; a unit's requests follow each other, so that many requests are in flight).
   Why this path and not a whole sweep: a sim sweep starts servers of its own, and inspect_ai's
   eval is one process with no storage step, so the worker path (HTTP, the request boundary and
   cache, the protocol, the records) is the part the two have in common. Its records are
   counted, not committed.
3. inspect_ai's side is an eval in a child process of `--peer-python`: a task of `--samples`
   identical samples, `generate()` and an exact-match scorer, model `openai/<served model>`
   with `model_base_url` at the sim server, `max_connections` and `max_samples` at
   `--concurrency`. The sample's input is padded so that its request body has the median size
   of foldsweep's bodies (measured first, from one unit per arm); the child measures its own
   body on a capture server of its own before it starts (both sizes are printed). Its logs go
   to a temporary directory; the environment points it at nothing outside 127.0.0.1.
4. Each child sets up (imports, configuration, warm-up), says it is ready and waits; the
   measured window runs from the go this script sends until the child reports done, or until
   `--side-timeout` seconds, when the child is stopped. Requests per second are the server's
   answered requests (its counters) in that window over its length, the same on both sides.
5. The sides alternate for `--rounds` rounds, and which goes first alternates too, so a change
   in the machine's load reaches both. The last line is `ratio_vs_inspect=` (median foldsweep
   rps / median inspect rps; issue 36's goal is >= 50).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from statistics import median
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent
sys.path[:0] = [str(REPO), str(HERE.parent)]  # pipeline, _bench_common (imported when used)
ARMS = ("j", "q", "m", "x")
MARK = "BENCH_PEER "  # the prefix of every line a child says to this script
INSTALL_HINT = (
    "inspect_ai is not importable by {python}: pip install -e '.[bench]' into it, or give "
    "--peer-python PATH to an interpreter that has inspect_ai and openai"
)


def say(kind: str, **fields: object) -> None:
    """One line from a child to the parent."""
    print(MARK + json.dumps({"kind": kind, **fields}), flush=True)


def wait_for_go() -> None:
    say("ready")
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("the parent did not say go")


def run_on_loop(make: Callable[[], Any]) -> Any:
    """Run a coroutine on uvloop when installed (the loop Ray gives the actors)."""
    import asyncio

    try:
        import uvloop
    except ImportError:
        return asyncio.run(make())
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(make())


# --- foldsweep's side (this checkout's interpreter and code) --------------------------------


def sim_overrides(out_dir: Path, concurrency: int) -> list[str]:
    from _bench_common import sweep_overrides

    return [
        *sweep_overrides(out_dir, configs=1, latency_s=0, concurrency=concurrency),
        f"arms=[{','.join(ARMS)}]",
    ]


def settings_for(url: str, concurrency: int, tmp: Path) -> Any:
    """The WorkerSettings of the sim server at `url`, with the cache in `tmp`."""
    import dataclasses

    from pipeline.commands.start import prepare
    from pipeline.sweep.run import publication_dates, worker_settings

    p = prepare(sim_overrides(tmp / "runs", concurrency))
    ep = dataclasses.replace(p.resolution.included[0].endpoint, base_url=url)
    settings = worker_settings(p, ep, publication_dates(p.resolution))
    return dataclasses.replace(settings, cache_dir=str(tmp / "cache"))


def unit_specs(ep: Any, first: int, count: int) -> Iterator[Any]:
    from pipeline.study import UnitSpec

    for n in range(first, first + count):
        arm = ARMS[n % len(ARMS)]
        yield UnitSpec("bench", ep.config_id, ep.model, "f", arm, 0, n // len(ARMS), 0)


async def run_units(core: Any, specs: Iterator[Any], concurrency: int) -> list[Any]:
    """`concurrency` units in flight at all times until `specs` runs out."""
    import asyncio

    done: list[Any] = []

    async def lane() -> None:
        for spec in specs:  # one shared iterator: each lane takes the next unit
            done.append(await core.run(spec))

    await asyncio.gather(*(lane() for _ in range(concurrency)))
    return done


def foldsweep_child(url: str, units: int, concurrency: int, tmp: Path) -> None:
    from pipeline.sweep.worker import EndpointWorkerCore, tune_collector

    settings = settings_for(url, concurrency, tmp)
    core, ep = EndpointWorkerCore(settings), settings.endpoint
    tune_collector()  # as the EndpointWorker actor runs

    async def go() -> dict[str, int]:
        await run_units(core, unit_specs(ep, -len(ARMS), len(ARMS)), concurrency)  # warm-up
        wait_for_go()
        records = await run_units(core, unit_specs(ep, 0, units), concurrency)
        await core.close()
        return {
            "units": len(records),
            "valid": sum(bool(r.row["valid"]) for r in records),
            "requests": sum(int(r.row["requests"]) for r in records),
        }

    say("done", **run_on_loop(go))


class RecordingClient:
    """Forwards to the real client and keeps the size of each body as the client encodes it."""

    def __init__(self, inner: Any, endpoint: Any, sizes: list[int]) -> None:
        self.inner, self.endpoint, self.sizes = inner, endpoint, sizes

    async def complete(self, request: Any) -> Any:
        from pipeline.endpoints.wire import build_body, encode_body

        body, _ = build_body(self.endpoint, request, send_seed=True)
        self.sizes.append(len(encode_body(body)))
        return await self.inner.complete(request)


def foldsweep_body_sizes(url: str, tmp: Path) -> list[int]:
    """The bodies of one unit per arm, through the worker with a recording client."""
    from pipeline.endpoints.client import open_client
    from pipeline.sweep.worker import EndpointWorkerCore

    settings = settings_for(url, 1, tmp)
    ep = settings.endpoint

    async def go() -> list[int]:
        sizes: list[int] = []
        async with open_client(ep, retry=settings.retry, timeouts=settings.timeouts) as client:
            core = EndpointWorkerCore(settings, RecordingClient(client, ep, sizes))
            await run_units(core, unit_specs(ep, -100, len(ARMS)), 1)
        return sizes

    return run_on_loop(go)  # type: ignore[no-any-return]


# --- inspect_ai's side (the peer's interpreter; nothing of foldsweep imported) --------------


def capture_server() -> tuple[str, list[int], Callable[[], None]]:
    """A local OpenAI-compatible stub that records request body sizes: (base URL, sizes, stop)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    sizes: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            sizes.append(len(body))
            model = json.loads(body).get("model", "")
            reply = json.dumps(
                {
                    "id": "capture",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": "x"},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def stop() -> None:
        server.shutdown()
        server.server_close()

    return f"http://127.0.0.1:{server.server_address[1]}/v1", sizes, stop


def inspect_eval(
    *, base_url: str, model: str, text: str, samples: int, concurrency: int, log_dir: str
) -> Any:
    # imported by name: the peer's interpreter has inspect_ai, foldsweep's need not (nor mypy)
    inspect_ai = import_module("inspect_ai")
    data = import_module("inspect_ai.dataset")
    scorer, solver = import_module("inspect_ai.scorer"), import_module("inspect_ai.solver")
    dataset = data.MemoryDataset(
        [data.Sample(input=text, target="x", id=n) for n in range(samples)]
    )
    task = inspect_ai.Task(dataset=dataset, solver=solver.generate(), scorer=scorer.exact())
    logs = inspect_ai.eval(
        task,
        model=f"openai/{model}",
        model_base_url=base_url,
        model_args={"responses_api": False},  # the sim server speaks Chat Completions
        max_connections=concurrency,
        max_samples=concurrency,
        log_dir=log_dir,
        display="none",
        log_samples=False,
        max_retries=0,
    )
    return logs[0]


def inspect_child(
    *, url: str, model: str, samples: int, concurrency: int, body_bytes: int, log_dir: str
) -> None:
    """Pad the input to `body_bytes` (measured on a capture server), then run the eval."""
    capture, sizes, stop = capture_server()
    try:
        inspect_eval(
            base_url=capture, model=model, text="x", samples=1, concurrency=1, log_dir=log_dir
        )
        pad = max(1, body_bytes - (sizes[-1] - 1))  # ASCII: one byte per character in JSON
        text = "x" * pad
        inspect_eval(
            base_url=capture, model=model, text=text, samples=1, concurrency=1, log_dir=log_dir
        )
        measured = sizes[-1]
    finally:
        stop()
    say("body", bytes=measured)
    wait_for_go()
    log = inspect_eval(
        base_url=url,
        model=model,
        text=text,
        samples=samples,
        concurrency=concurrency,
        log_dir=log_dir,
    )
    say("done", status=str(log.status), samples=samples)


# --- the parent: the server, the check, the rounds -----------------------------------------


@dataclass(frozen=True)
class Window:
    """One side's measured window."""

    answered: int  # requests the server answered with 200 in the window
    other: int  # requests it counted but did not answer with 200
    seconds: float
    stopped: bool  # the side hit --side-timeout and was stopped
    said: dict[str, Any]
    client_cpu_s: float  # the side's child process tree in the window
    server_cpu_s: float  # the sim server's process

    @property
    def rps(self) -> float:
        return self.answered / self.seconds

    @property
    def client_ms(self) -> float:
        """The client's CPU ms per answered request (its own cost, whatever the load)."""
        return 1000 * self.client_cpu_s / max(1, self.answered)


def peer_problem(python: str) -> str | None:
    """Why `python` cannot run the peer (None if it can)."""
    try:
        done = subprocess.run(
            [python, "-c", "import inspect_ai, openai"],
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return INSTALL_HINT.format(python=python)
    return None if done.returncode == 0 else INSTALL_HINT.format(python=python)


def peer_version(python: str) -> str:
    code = (
        "import importlib.metadata as m; "
        "print(m.version('inspect_ai'), m.version('openai'), m.version('httpx'))"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    names = ("inspect_ai", "openai", "httpx")
    return " ".join(f"{n} {v}" for n, v in zip(names, done.stdout.split(), strict=False))


def peer_env(log_dir: str) -> dict[str, str]:
    """The peer's environment: loopback only, a dummy key, logs in a temporary directory."""
    proxies = {"http_proxy", "https_proxy", "all_proxy"}
    env = {k: v for k, v in os.environ.items() if k.lower() not in proxies}
    env.pop("PYTHONPATH", None)
    env.update(
        OPENAI_API_KEY="sim",
        INSPECT_LOG_DIR=log_dir,
        INSPECT_DISPLAY="none",
        INSPECT_EVAL_CTL_SERVER="false",
        XDG_DATA_HOME=log_dir,
        XDG_CACHE_HOME=log_dir,
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


class Child:
    """A child process that speaks MARK lines; read with a deadline."""

    def __init__(self, name: str, cmd: Sequence[str], env: dict[str, str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(MARK):
                self.lines.put(line[len(MARK) :])
        self.lines.put(None)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.errors = [*self.errors[-40:], line]

    def next(self, timeout_s: float) -> dict[str, Any] | None:
        """The child's next message; None at the deadline. A child that exits is an error."""
        try:
            line = self.lines.get(timeout=timeout_s)
        except queue.Empty:
            return None
        if line is None:
            self.proc.wait()
            tail = "".join(self.errors).strip()[-3000:]
            raise SystemExit(f"{self.name} child exited ({self.proc.returncode}):\n{tail}")
        return json.loads(line)  # type: ignore[no-any-return]

    def expect(self, kind: str, timeout_s: float) -> dict[str, Any]:
        said = self.next(timeout_s)
        if said is None or said["kind"] != kind:
            self.stop()
            raise SystemExit(f"{self.name} child did not say {kind} in {timeout_s} s")
        return said

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def cpu_split(child_pid: int) -> tuple[float, float]:
    """CPU seconds so far of (the child's tree, every other process under this one)."""
    from _bench_common import tree_snapshot

    everything = tree_snapshot([os.getpid()])
    mine = tree_snapshot([child_pid])
    own = everything.get(os.getpid())
    others = sum(s.cpu_s for pid, s in everything.items() if pid not in mine)
    return sum(s.cpu_s for s in mine.values()), others - (own.cpu_s if own else 0.0)


def measure(child: Child, servers: Any, timeout_s: float) -> Window:
    """From go to done (or the deadline): the server's answered requests, the seconds, CPU."""

    def counted() -> tuple[int, int]:
        c = next(iter(servers.counters().values()))
        return int(c["served_ok"]), int(c["requests"])

    ok0, all0 = counted()
    cpu0 = cpu_split(child.proc.pid)
    started = time.monotonic()
    child.go()
    said = child.next(timeout_s)
    seconds = time.monotonic() - started
    cpu1 = cpu_split(child.proc.pid)
    ok1, all1 = counted()
    if said is None:
        child.stop()
    else:
        child.proc.wait(timeout=60)
    answered = ok1 - ok0
    client, server = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
    return Window(
        answered, (all1 - all0) - answered, seconds, said is None, said or {}, client, server
    )


def foldsweep_side(args: argparse.Namespace, servers: Any, url: str, tmp: Path) -> Window:
    cmd = [sys.executable, str(HERE), "--foldsweep-child", url, "--tmp", str(tmp)]
    cmd += ["--units", str(args.units), "--concurrency", str(args.concurrency)]
    from _bench_common import bench_env

    child = Child("foldsweep", cmd, bench_env())
    child.expect("ready", 300)
    return measure(child, servers, args.side_timeout)


def inspect_side(
    args: argparse.Namespace, servers: Any, *, url: str, model: str, body_bytes: int, tmp: Path
) -> tuple[Window, int]:
    log_dir = str(tmp / "inspect-logs")
    cmd = [args.peer_python, str(HERE), "--inspect-child", url, "--model", model]
    cmd += ["--samples", str(args.samples), "--concurrency", str(args.concurrency)]
    cmd += ["--body-bytes", str(body_bytes), "--tmp", log_dir]
    child = Child("inspect_ai", cmd, peer_env(log_dir))
    body = child.expect("body", 300)
    child.expect("ready", 60)
    return measure(child, servers, args.side_timeout), int(body["bytes"])


def report(name: str, w: Window) -> None:
    bound = " (stopped at --side-timeout)" if w.stopped else ""
    print(
        f"{name}: {w.answered} requests answered ({w.other} not) in {w.seconds:.2f} s{bound}; "
        f"rps={w.rps:.1f}; CPU cores busy: client {w.client_cpu_s / w.seconds:.2f}, "
        f"server {w.server_cpu_s / w.seconds:.2f}; client CPU ms per request "
        f"{w.client_ms:.3f}; child said {w.said}",
        flush=True,
    )


def check_args(args: argparse.Namespace) -> str | None:
    """Why the arguments cannot run (None if they can)."""
    for name in ("rounds", "concurrency", "units", "samples"):
        if getattr(args, name) < 1:
            return f"--{name} must be at least 1, not {getattr(args, name)}"
    if not args.side_timeout > 0:
        return f"--side-timeout must be positive, not {args.side_timeout}"
    return None


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--peer-python", default=sys.executable, help="has inspect_ai")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=500, help="in flight, both sides")
    parser.add_argument("--units", type=int, default=2500, help="foldsweep units a round")
    parser.add_argument("--samples", type=int, default=1000, help="inspect_ai samples a round")
    parser.add_argument("--side-timeout", type=float, default=60.0, help="seconds a side")
    parser.add_argument("--foldsweep-child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--inspect-child", metavar="URL", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--body-bytes", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--tmp", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args.foldsweep_child:
        foldsweep_child(args.foldsweep_child, args.units, args.concurrency, Path(args.tmp))
        return 0
    if args.inspect_child:
        inspect_child(
            url=args.inspect_child,
            model=args.model,
            samples=args.samples,
            concurrency=args.concurrency,
            body_bytes=args.body_bytes,
            log_dir=args.tmp,
        )
        return 0
    problem = check_args(args) or peer_problem(args.peer_python)
    if problem is not None:
        print(problem, file=sys.stderr)
        return 2
    return bench(args)


def bench(args: argparse.Namespace) -> int:
    from pipeline.commands.start import prepare
    from pipeline.sweep.servers import EndpointServers

    print(f"peer: {args.peer_python}: {peer_version(args.peer_python)}")
    print(f"load average before: {os.getloadavg()[0]:.2f}; in flight: {args.concurrency}")
    fold: list[Window] = []
    peer: list[Window] = []
    with tempfile.TemporaryDirectory(prefix="bench-peer-") as name:
        tmp = Path(name)
        p = prepare(sim_overrides(tmp / "server", args.concurrency))
        endpoints = [inc.endpoint for inc in p.resolution.included]
        pairs = [(inc.config_id, inc.model) for inc in p.resolution.included]
        models = p.study.sim_models(pairs, p.cfg.sim.seed)
        with EndpointServers("sim", endpoints, p.cfg, tmp, sim_models=models) as servers:
            url, model = servers.endpoints[0].base_url, servers.endpoints[0].model
            assert url is not None
            sizes = sorted(foldsweep_body_sizes(url, tmp / "sizes"))
            body = int(median(sizes))
            print(f"sim server at {url} serving {model}")
            print(f"foldsweep bodies: {len(sizes)}, {sizes[0]}-{sizes[-1]} bytes, median {body}")
            for number in range(1, args.rounds + 1):
                print(f"--- round {number} of {args.rounds} (load {os.getloadavg()[0]:.2f})")
                round_tmp = tmp / f"round-{number}"

                def run_fold(where: Path = round_tmp) -> None:
                    fold.append(foldsweep_side(args, servers, url, where / "fold"))
                    report("foldsweep", fold[-1])

                def run_peer(where: Path = round_tmp) -> None:
                    window, sent = inspect_side(
                        args, servers, url=url, model=model, body_bytes=body, tmp=where
                    )
                    peer.append(window)
                    print(f"inspect_ai body: {sent} bytes (foldsweep median {body})")
                    report("inspect_ai", window)

                for side in (run_fold, run_peer) if number % 2 else (run_peer, run_fold):
                    side()
                print(f"round ratio_vs_inspect={fold[-1].rps / peer[-1].rps:.1f}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    fold_rps, peer_rps = median(w.rps for w in fold), median(w.rps for w in peer)
    print(f"median foldsweep_rps={fold_rps:.1f} inspect_rps={peer_rps:.1f}")
    fold_ms, peer_ms = median(w.client_ms for w in fold), median(w.client_ms for w in peer)
    print(
        f"median client CPU ms per request: foldsweep {fold_ms:.3f} inspect_ai {peer_ms:.3f}; "
        f"cpu_ratio={peer_ms / fold_ms:.1f} (inspect_ai CPU per request / foldsweep's)"
    )
    print(f"ratio_vs_inspect={fold_rps / peer_rps:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
