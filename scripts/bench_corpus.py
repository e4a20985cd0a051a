"""Benchmark: the tool-output study at corpus scale, through `sweep study=toolout`.

    PYTHONPATH=. python scripts/bench_corpus.py [--transcripts 2000] [--min-requests 50]
        [--max-requests 400] [--seed 20] [--shipped] [--no-oracle] [--policies a,b]
        [--corpus DIR]

Writes a seeded corpus of `--transcripts` transcripts (each 50-400 requests, uniform) to a
temporary directory in the JSONL importer's format (one chat message per line): per request
one assistant turn with one tool call and its output, sizes log-normal around 3 KB (median
3 KB, clipped to 200 B .. 60 KB: grep hits, source files, test logs, listings, search
results as in bench_replay.py; one output in twelve carries a traceback). Then it runs
`python -m pipeline sweep study=toolout study.transcripts_dir=DIR` (or, with `--shipped`, the
shipped corpus, or with `--corpus DIR` a corpus written before: the 2,000-transcript corpus
takes about 20 minutes to write) in a child process and samples, every 0.5 s, the peak RSS
(VmHWM) of the driver and of every Ray actor process of the sweep (`ray::EndpointWorker`
descendants of the driver). It prints the wall time, units per second, requests accounted per
second (the rows' `replayed_requests` summed over units, over the wall time), the driver's
peak RSS and the largest actor's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_replay import TOOLS, TRACEBACK, _path  # the same realistic text

REPO = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


def _output(rng: random.Random, name: str, i: int) -> str:
    line = TOOLS[name][0]
    target = int(min(60_000, max(200, math.exp(rng.gauss(math.log(3000), 0.9)))))
    lines: list[str] = []
    size = 0
    while size < target:
        lines.append(line(rng))
        size += len(lines[-1]) + 1
    text = "\n".join(lines)
    return text + "\n" + TRACEBACK if i % 12 == 5 else text


def write_corpus(root: Path, transcripts: int, low: int, high: int, seed: int) -> int:
    """The corpus as JSONL files; returns the number of requests it holds."""
    rng = random.Random(seed)
    names = sorted(TOOLS)
    total = 0
    for t in range(transcripts):
        requests = rng.randint(low, high)
        total += requests
        clock = 1_767_000_000.0 + t * 10_000
        lines = [
            {"role": "system", "content": "You are a coding agent. Use the tools."},
            {"role": "user", "content": f"Task {t}: the nightly report double-counts refunds."},
        ]
        for i in range(requests):
            clock += rng.uniform(3, 40)
            name = rng.choice(names)
            call = {"id": f"c{i}", "type": "function"}
            call["function"] = {"name": name, "arguments": json.dumps({"q": _path(rng)})}
            said = f"Checking {_path(rng)} (step {i})."
            lines.append({"role": "assistant", "content": said, "tool_calls": [call]})
            lines.append({"role": "tool", "tool_call_id": f"c{i}", "name": name,
                          "content": _output(rng, name, i)})  # fmt: skip
        lines.append({"role": "assistant", "content": "Done."})
        text = "".join(json.dumps(line) + "\n" for line in lines)
        (root / f"t{t:05d}.jsonl").write_text(text, encoding="utf-8")
    return total


def _hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def _actors(root: int) -> list[int]:
    """This sweep's actor processes: `ray::EndpointWorker` descendants of the driver (other
    sweeps on the machine have their own)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if not cmd.startswith(b"ray::EndpointWorker"):
            continue
        pid = ancestor = int(entry.name)
        while ancestor > 1 and ancestor != root:
            ancestor = _parent(ancestor)
        if ancestor == root:
            found.append(pid)
    return found


class Sampler(threading.Thread):
    """Peak RSS of the driver and of each actor, sampled until stopped."""

    def __init__(self, driver: int) -> None:
        super().__init__(daemon=True)
        self.driver = driver
        self.peak_driver = 0
        self.peak_actor: dict[int, int] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.5):
            self.peak_driver = max(self.peak_driver, _hwm_kib(self.driver))
            for pid in _actors(self.driver):
                self.peak_actor[pid] = max(self.peak_actor.get(pid, 0), _hwm_kib(pid))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=int, default=2000)
    parser.add_argument("--min-requests", type=int, default=50)
    parser.add_argument("--max-requests", type=int, default=400)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--shipped", action="store_true", help="the shipped corpus instead")
    parser.add_argument("--no-oracle", action="store_true")
    parser.add_argument("--policies", default="", help="comma-separated; default every policy")
    parser.add_argument("--corpus", type=Path, help="a corpus written before (keep a copy)")
    parser.add_argument("--runs", type=Path, help="keep the run directory here (to re-analyze)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-corpus-") as tmp:
        runs = args.runs if args.runs is not None else Path(tmp) / "runs"
        overrides = ["study=toolout", f"out_dir={runs}"]
        if args.corpus is not None:
            files = sorted(args.corpus.glob("*.jsonl"))
            if not files:
                parser.error(f"--corpus {args.corpus}: no *.jsonl file there")
            size = sum(p.stat().st_size for p in files)
            print(f"corpus: {args.corpus}, {len(files)} files, {size / MIB:,.0f} MiB")
            overrides.append(f"study.transcripts_dir={args.corpus}")
        elif not args.shipped:
            corpus = Path(tmp) / "corpus"
            corpus.mkdir()
            started = time.perf_counter()
            requests = write_corpus(
                corpus, args.transcripts, args.min_requests, args.max_requests, args.seed
            )
            size = sum(p.stat().st_size for p in corpus.iterdir())
            print(
                f"corpus: {args.transcripts} transcripts, {requests:,} requests, "
                f"{size / MIB:,.0f} MiB (written in {time.perf_counter() - started:.0f} s)"
            )
            overrides.append(f"study.transcripts_dir={corpus}")
        if args.no_oracle:
            overrides.append("study.oracle=false")
        if args.policies:
            overrides.append(f"study.policies=[{args.policies}]")
        command = [sys.executable, "-m", "pipeline", "sweep", *overrides]
        print("command:", " ".join(command[1:]))
        started = time.perf_counter()
        child = subprocess.Popen(
            command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )  # fmt: skip
        sampler = Sampler(child.pid)
        sampler.start()
        out, err = child.communicate()
        wall = time.perf_counter() - started
        sampler.done.set()
        sampler.join()
        if child.returncode != 0:
            print(err[-3000:], file=sys.stderr)
            return child.returncode
        run_dir = out.strip().splitlines()[-1]
        sql = "select count(*) as units, sum(replayed_requests) as requests from rows"
        query = [sys.executable, "-m", "pipeline", "query", run_dir, "--format", "json", sql]
        done = subprocess.run(query, cwd=REPO, capture_output=True, text=True, check=True)
        totals = json.loads(done.stdout)[0]
        actor = max(sampler.peak_actor.values(), default=0)
        print(
            f"wall {wall:.0f} s; units {totals['units']} ({totals['units'] / wall:.2f}/s); "
            f"requests accounted {totals['requests']:,} ({totals['requests'] / wall:,.0f}/s); "
            f"peak RSS driver {sampler.peak_driver / 1024:,.0f} MiB, largest actor "
            f"{actor / 1024:,.0f} MiB ({len(sampler.peak_actor)} actors)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
