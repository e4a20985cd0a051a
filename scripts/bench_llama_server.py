"""Benchmark: the portable llama-server build on the embedded panel's models.

    .venv/bin/python scripts/bench_llama_server.py [--model smollm2|gemma3|all] [--rounds 2]
        [--prompt-tokens 1500] [--max-tokens 128]

Starts each local server exactly as a sweep does (LocalServerPool: portable binary, slots,
threads, key), then per round sends, with a fresh prefix so the prompt cache cannot help:

- baseline: two requests one after the other (one slot busy at a time);
- parallel: the same two requests at once (both slots busy).

It prints the server's own timings (prompt and generation tokens/s of the sequential requests,
median over rounds) and the ratio `parallel_speedup = sequential wall / parallel wall`, measured
in the same run. The build's flags come from its build_info.json. Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipeline.endpoints.llama_bin import locate
from pipeline.endpoints.local import LocalServer, build_servers, load_local_panel
from pipeline.endpoints.local_pool import LocalServerPool

WORDS = ("deploy", "log", "port", "host", "path", "shard", "region", "build", "status")


def _prompt(tag: str, tokens: int) -> str:
    """About `tokens` tokens of log-like text, starting with a unique tag (no cache reuse)."""
    lines = [f"[{tag}] session log follows."]
    i = 0
    while len(" ".join(lines)) < tokens * 4:  # ~4 characters per token
        lines.append(f"line {i}: {WORDS[i % len(WORDS)]} {8000 + i} ok")
        i += 1
    return "\n".join([*lines, "Summarise the log in five short lines."])


async def _complete(
    session: aiohttp.ClientSession, server: LocalServer, prompt: str, max_tokens: int
) -> dict[str, Any]:
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "ignore_eos": True,  # a fixed output length, so rounds are comparable
    }
    url = f"{server.base_url}/chat/completions"
    async with session.post(url, json=body, headers=server.headers()) as response:
        reply: dict[str, Any] = await response.json()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {reply}")
        return reply


async def _round(
    server: LocalServer, index: int, prompt_tokens: int, max_tokens: int
) -> dict[str, float]:
    timeout = aiohttp.ClientTimeout(total=600)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        prompts = [_prompt(f"r{index}-s{n}-{time.time_ns()}", prompt_tokens) for n in range(2)]
        started = time.monotonic()
        sequential = [await _complete(session, server, p, max_tokens) for p in prompts]
        sequential_s = time.monotonic() - started
        prompts = [_prompt(f"r{index}-p{n}-{time.time_ns()}", prompt_tokens) for n in range(2)]
        started = time.monotonic()
        await asyncio.gather(*(_complete(session, server, p, max_tokens) for p in prompts))
        parallel_s = time.monotonic() - started
    timings = [reply["timings"] for reply in sequential]
    return {
        "prompt_n": statistics.mean(t["prompt_n"] for t in timings),
        "prompt_tps": statistics.mean(t["prompt_per_second"] for t in timings),
        "gen_tps": statistics.mean(t["predicted_per_second"] for t in timings),
        "sequential_s": sequential_s,
        "parallel_s": parallel_s,
    }


async def _bench(family: str, rounds: int, prompt_tokens: int, max_tokens: int) -> None:
    config = next(c for c in load_local_panel().configs if c.family == family)
    with tempfile.TemporaryDirectory(prefix="bench-llama-") as logs:
        servers = build_servers([config], Path(logs))
        async with LocalServerPool(servers):
            results = [
                await _round(servers[0], i, prompt_tokens, max_tokens) for i in range(rounds)
            ]
    med = {k: statistics.median(r[k] for r in results) for k in results[0]}
    print(
        f"{family}: prompt {med['prompt_n']:.0f} tokens at {med['prompt_tps']:.0f} tok/s, "
        f"generation {med['gen_tps']:.1f} tok/s (median of {rounds}, one request at a time)"
    )
    print(
        f"{family}: baseline sequential 2 requests {med['sequential_s']:.1f} s, "
        f"parallel 2 slots {med['parallel_s']:.1f} s, "
        f"parallel_speedup={med['sequential_s'] / med['parallel_s']:.2f}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("smollm2", "gemma3", "all"), default="all")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--prompt-tokens", type=int, default=1500)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    # a SIGTERM (e.g. `timeout`) unwinds like Ctrl-C, so the pool stops its servers
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    build = locate()
    print(f"binary: {build.binary}")
    print(f"flags: {' '.join(build.info.get('cmake_flags', ['(no build_info.json)']))}")
    print(f"version: {json.dumps(build.info.get('version_output'))}")
    families = ("smollm2", "gemma3") if args.model == "all" else (args.model,)
    for family in families:
        asyncio.run(_bench(family, args.rounds, args.prompt_tokens, args.max_tokens))
    return 0


if __name__ == "__main__":
    sys.exit(main())
