"""Benchmark: the tool-output replay's cost as transcripts grow, against a naive recount.

    PYTHONPATH=. python scripts/bench_replay.py [--lengths 100 200 400 800 1600] [--rounds 3]
        [--min-rounds 2] [--seconds-per-length 8] [--policy deterministic_first_pass]
        [--cache-model deepseek] [--model deepseek-v4-pro]

Builds synthetic transcripts in canonical form (pipeline.toolout.transcript) of each length:
a system and a user message, then per request one assistant turn with one tool call (bash,
grep, read_file, find_files, web_search, now and then an editor) and its tool output of
1,500 to 6,000 bytes of realistic text (grep hits, source files, test logs, listings, search
results; one output in twelve carries a traceback, so the forced-exact layer has work). A
shorter transcript is a prefix of a longer one. For each length, in the same process and the
same round, it times:
- pipeline: `replay` under `--policy` (built by `build_policy` from conf/toolout/policies/),
  then `runner.price` (the incremental accounting)
  under `--cache-model` (data/cache-models/, loaded with
  jobs.toolout.inputs.load_cache_models) at `--model`'s prices: what one transcript x arm of
  a unit costs;
- control: the same with the `control` policy (no compaction), which shows what the replay
  and the accounting cost without the policy's own work;
- naive: for every request, every visible message re-rendered from scratch and
  `estimate_tokens` on the concatenated history, priced as uncached input: the obvious
  re-tokenize-everything way, O(n^2) in bytes.
Each run is timed as `timeit` does (a collection before it, the garbage collector off during
it), so a full collection of the process's heap does not land in one run at random. Each
figure is the fastest of up to `--rounds` rounds (pipeline, control and naive alternate
within a round, so a change in the machine's load hits all three); a length stops repeating
once its rounds have used `--seconds-per-length`, after `--min-rounds` rounds at least
(default 2), which keeps the default run near 40 s on 2 cores. Two rounds at least because a
length's first round is the first time the pipeline renders that length's new outputs (the
policies memoise their pure renderings, e.g. `deterministic_replacement`), so with one round
only (the 1,600-request length, where the naive baseline alone takes seconds) the pipeline's
figure would include that first-exposure work while every shorter length's fastest round
does not, and the scaling exponent would compare unlike runs. Per length it prints requests,
the bytes the requests carry, seconds and requests accounted per second of each, and
pipeline/naive (requests per second: below 1, the pipeline is slower). Then the scaling
exponent of each (least-squares slope of log seconds against log length; 2 is quadratic).
The last lines are `ratio@400=<float>` (pipeline/naive requests per second at 400 requests,
the P8 goal's point, when 400 is among the lengths) and `ratio=<float>` at the largest length.
As a guard that both count the same requests, control's input tokens must equal naive's up to
the per-message rounding of the byte estimator (ceil per block: at most one token a block).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from jobs.toolout.inputs import load_cache_models
from pipeline.toolout.cache_models import CacheModel
from pipeline.toolout.policies import Policy, build_policy
from pipeline.toolout.replay import replay
from pipeline.toolout.runner import price
from pipeline.toolout.tokens import estimate_tokens
from pipeline.toolout.transcript import Message, ToolCall, Transcript

REPO = Path(__file__).resolve().parent.parent
POLICIES = REPO / "conf" / "toolout" / "policies"
THINK_TIME_S = 30.0  # the study's default; the synthetic transcripts carry timestamps anyway
MTOK = 1_000_000

MODULES = ("billing", "ledger", "invoices", "accounts", "sync", "cache", "report", "auth")
SYMBOLS = ("compute_total", "apply_discount", "load_rows", "flush", "normalise", "resolve")
SENTENCE = (
    "the request retries once when the upstream returns a transient status and records the "
    "attempt in the ledger so the nightly report can reconcile totals per account and region"
)
WORDS = tuple(SENTENCE.split())


def _path(rng: random.Random) -> str:
    return f"src/{rng.choice(MODULES)}/{rng.choice(MODULES)}_{rng.randint(1, 40)}.py"


def _grep(rng: random.Random) -> str:
    symbol = rng.choice(SYMBOLS)
    return (
        f"{_path(rng)}:{rng.randint(1, 900)}:    total = self.{symbol}(rows, "
        f"region={rng.choice(MODULES)!r})  # {' '.join(rng.sample(WORDS, 5))}"
    )


def _source(rng: random.Random) -> str:
    indent = "    " * rng.randint(0, 3)
    return rng.choice(
        (
            f"{indent}def {rng.choice(SYMBOLS)}(self, rows: list[Row], *, limit: int = 100):",
            f"{indent}for row in rows[: {rng.randint(2, 90)}]:",
            f"{indent}total += row.amount * self.rates.get(row.currency, 1.0)",
            f'{indent}"""{" ".join(rng.sample(WORDS, 8)).capitalize()}."""',
            f"{indent}return {rng.choice(SYMBOLS)}(total, precision={rng.randint(2, 6)})",
            "",
        )
    )


def _test_log(rng: random.Random) -> str:
    percent = rng.randint(1, 100)
    return f"tests/test_{rng.choice(MODULES)}.py::test_{rng.choice(SYMBOLS)} PASSED [{percent:3d}%]"


def _listing(rng: random.Random) -> str:
    size = rng.randint(200, 90_000)
    return f"-rw-r--r--  1 dev dev {size:>6} Nov 30 12:{rng.randint(10, 59)} {_path(rng)}"


def _search(rng: random.Random) -> str:
    return (
        f"- https://docs.example.org/{rng.choice(MODULES)}/{rng.choice(SYMBOLS)}: "
        f"{' '.join(rng.sample(WORDS, 12))}."
    )


TOOLS: dict[str, tuple[Callable[[random.Random], str], str]] = {
    "grep": (_grep, "grep -rn {symbol} src/"),
    "read_file": (_source, "{path}"),
    "bash": (_test_log, "pytest -q tests/"),
    "find_files": (_listing, "ls -la src/{module}"),
    "web_search": (_search, "{symbol} rounding rules"),
}
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "src/billing/ledger_3.py", line 88, in compute_total\n'
    "    total += row.amount * rate\n"
    "TypeError: unsupported operand type(s) for *: 'NoneType' and 'float'\n"
)


def _turn(seed: int, i: int, clock: float) -> tuple[Message, Message]:
    """Request i's assistant turn (one tool call) and the tool output that answers it."""
    rng = random.Random(seed * 1_000_003 + i)
    call_id = f"call_{i}"
    if i % 17 == 16:  # an edit now and then: small, and forced exact by its name
        name, arguments = "str_replace_editor", json.dumps({"path": _path(rng), "old": "x"})
        output = f"The file {_path(rng)} has been edited. Review the change and run the tests."
    else:
        name = rng.choice(sorted(TOOLS))
        line, template = TOOLS[name]
        command = template.format(symbol=rng.choice(SYMBOLS), path=_path(rng), module="billing")
        arguments = json.dumps({"command" if name == "bash" else "query": command})
        target = rng.randint(1500, 6000)
        lines: list[str] = []
        size = 0
        while size < target:
            lines.append(line(rng))
            size += len(lines[-1]) + 1
        output = "\n".join(lines)
        if i % 12 == 5:
            output += "\n" + TRACEBACK
    said = f"Let me check how {rng.choice(SYMBOLS)} behaves in {_path(rng)} before changing it."
    assistant = Message(
        "assistant", said, tool_calls=(ToolCall(call_id, name, arguments),), timestamp=clock
    )
    tool = Message("tool", output, tool_call_id=call_id, name=name, timestamp=clock + 2.0)
    return assistant, tool


def synthetic_transcript(requests: int, seed: int = 11) -> Transcript:
    """A transcript of `requests` requests; a shorter one is a prefix of a longer one."""
    clock = 1_767_000_000.0
    messages = [
        Message(
            "system", "You are a coding agent. Use the tools to inspect and fix the repository."
        ),
        Message(
            "user", "The nightly billing report double-counts refunds. Find out why and fix it."
        ),
    ]
    for i in range(requests):
        clock += 5.0 + (i * 7919 % 35)  # 5 to 39 s of think time, deterministic
        messages += _turn(seed, i, clock)
    return Transcript(f"bench/{requests}", "jsonl", "synthetic", tuple(messages))


def _render(message: Message) -> str:
    """A message as the harness sends it (its text, then one line per tool call)."""
    text = message.content or ""
    for call in message.tool_calls:
        text += f"\n[tool call {call.name}] {call.arguments}"
    return text


def _request_bytes(transcript: Transcript) -> int:
    """UTF-8 bytes all requests carry uncompacted (what the naive baseline re-reads)."""
    total = history = 0
    for message in transcript.messages:
        if message.role == "assistant":
            total += history
        history += len(_render(message).encode("utf-8"))
    return total


@dataclass(frozen=True)
class Measured:
    seconds: float
    input_tokens: int
    cost_usd: float


@contextmanager
def _timed() -> Iterator[list[float]]:
    """Seconds of the block, as `timeit` measures: collected before, no collector during (a
    full collection over the whole heap lands in whichever run it falls in: noise)."""
    gc.collect()
    gc.disable()
    elapsed: list[float] = []
    started = time.perf_counter()
    try:
        yield elapsed
    finally:
        elapsed.append(time.perf_counter() - started)
        gc.enable()


def run_pipeline(transcript: Transcript, policy: Policy, cache: CacheModel, model: str) -> Measured:
    with _timed() as elapsed:
        requests = replay(transcript, policy, estimate_tokens)
        cost = price(requests, cache, model, THINK_TIME_S)
    return Measured(elapsed[0], cost.input_tokens, cost.cost_usd)


def run_naive(transcript: Transcript, input_usd_per_mtok: float) -> Measured:
    messages = transcript.messages
    tokens = 0
    with _timed() as elapsed:
        for position, message in enumerate(messages):
            if message.role == "assistant":  # one request: everything before this turn
                tokens += estimate_tokens("".join(_render(m) for m in messages[:position]))
    return Measured(elapsed[0], tokens, tokens * input_usd_per_mtok / MTOK)


def load_policy(name: str) -> Policy:
    path = POLICIES / f"{name}.yaml"
    if not path.is_file():
        available = ", ".join(sorted(p.stem for p in POLICIES.glob("*.yaml")))
        raise SystemExit(f"--policy: no {path}; available: {available}")
    spec: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return build_policy(spec)


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(ys) against log(xs)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True)) / sum(
        (a - mx) ** 2 for a in lx
    )


def _load_average() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[100, 200, 400, 800, 1600])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds-per-length", type=float, default=8.0)
    parser.add_argument("--min-rounds", type=int, default=2, help="rounds per length at least")
    parser.add_argument("--policy", default="deterministic_first_pass")
    parser.add_argument("--cache-model", default="deepseek")
    parser.add_argument("--model", default="deepseek-v4-pro")
    args = parser.parse_args(argv)
    lengths = sorted(set(args.lengths))
    if len(lengths) < 2 or lengths[0] < 1 or args.rounds < 1 or args.min_rounds < 1:
        parser.error(
            "--lengths needs two or more distinct positive lengths; --rounds, --min-rounds >= 1"
        )
    least = min(args.min_rounds, args.rounds)

    cache = load_cache_models()[args.cache_model]
    prices = cache.prices_for(args.model)
    policy, control = load_policy(args.policy), load_policy("control")
    print(
        f"load average before: {_load_average()}; policy {args.policy}, cache model "
        f"{cache.name} at {args.model}; fastest of {least} to {args.rounds} rounds "
        f"({args.seconds_per_length:g} s per length)"
    )
    print(
        f"{'requests':>8} {'request MB':>10} {'pipeline s':>10} {'req/s':>8} {'control s':>9} "
        f"{'req/s':>8} {'naive s':>8} {'req/s':>8} {'pipeline/naive':>14}"
    )
    best: dict[str, list[float]] = {"pipeline": [], "control": [], "naive": []}
    for length in lengths:
        transcript = synthetic_transcript(length)
        request_bytes = _request_bytes(transcript)
        times: dict[str, list[float]] = {name: [] for name in best}
        spent = 0.0
        while len(times["naive"]) < least or (
            len(times["naive"]) < args.rounds and spent < args.seconds_per_length
        ):
            measured = run_pipeline(transcript, policy, cache, args.model)
            exact = run_pipeline(transcript, control, cache, args.model)
            naive = run_naive(transcript, prices.input)
            times["pipeline"].append(measured.seconds)
            times["control"].append(exact.seconds)
            times["naive"].append(naive.seconds)
            spent += measured.seconds + exact.seconds + naive.seconds
        blocks = sum(
            position for position, m in enumerate(transcript.messages) if m.role == "assistant"
        )
        if not naive.input_tokens <= exact.input_tokens <= naive.input_tokens + blocks:
            raise SystemExit(
                f"{length} requests: control counted {exact.input_tokens} input tokens, naive "
                f"{naive.input_tokens}: they do not count the same requests"
            )
        for name, values in times.items():
            best[name].append(max(min(values), 1e-9))  # a timer tick at the least
        p, c, n = (best[name][-1] for name in ("pipeline", "control", "naive"))
        print(
            f"{length:>8} {request_bytes / 1e6:>10.1f} {p:>10.4f} {length / p:>8.0f} {c:>9.4f} "
            f"{length / c:>8.0f} {n:>8.4f} {length / n:>8.0f} {n / p:>14.4f}"
        )
    xs = [float(x) for x in lengths]
    print(
        f"scaling exponent (seconds ~ length^k): pipeline k={slope(xs, best['pipeline']):.2f}, "
        f"control k={slope(xs, best['control']):.2f}, naive k={slope(xs, best['naive']):.2f}"
    )
    print(f"load average after: {_load_average()}")
    if 400 in lengths:
        at = lengths.index(400)
        print(f"ratio@400={best['naive'][at] / best['pipeline'][at]:.4f}")
    print(f"ratio={best['naive'][-1] / best['pipeline'][-1]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
