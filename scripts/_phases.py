"""The request path's phases, from a sampling profile of the bench's child (py-spy raw).

Callgrind counts instructions between client requests only, and the worker's phases
interleave inside one event loop: a request's send, its cache lookup and the protocol's parse
of the previous reply run turn by turn. So `bench_request_path.py --profile` samples the child
with py-spy and attributes each sample to the innermost frame of this project's code; library
frames beneath it count for it (aiohttp under the client's `_send` is the HTTP send). A sample
with no project frame is the event loop (uvloop's C loop, aiohttp's protocol callbacks). The
shares of the worker's samples, times its callgrind count, give instructions per phase.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

# The first rule whose prefix a frame's path starts with names its phase.
PHASES: tuple[tuple[str, str], ...] = (
    ("pipeline/endpoints/wire.py", "HTTP: JSON encode, reply decode"),
    ("pipeline/endpoints/usage.py", "boundary: usage and price"),
    ("pipeline/endpoints/limits.py", "boundary: rate limit"),
    ("pipeline/endpoints/", "HTTP: send and receive (aiohttp beneath)"),
    ("pipeline/sweep/boundary.py", "boundary: key, budget, records"),
    ("pipeline/sweep/response_cache.py", "boundary: cache lookup and append"),
    ("pipeline/sweep/bill.py", "boundary: usage and price"),
    ("pipeline/sweep/budget", "boundary: key, budget, records"),
    ("pipeline/sweep/rows.py", "records"),
    ("pipeline/sweep/sink.py", "sink"),
    ("pipeline/store/", "sink"),
    ("pipeline/sweep/", "worker: unit scheduling"),
    ("pipeline/carrier/records.py", "records"),
    ("pipeline/carrier/grade.py", "protocol: grade"),
    ("pipeline/carrier/answers.py", "protocol: grade"),
    ("pipeline/carrier/carrier.py", "protocol: strip, parse, headings"),
    ("pipeline/carrier/ledger.py", "protocol: ledger (fail-safe)"),
    ("pipeline/carrier/tokens.py", "protocol: token estimates"),
    ("pipeline/carrier/", "protocol: render, step"),
    ("pipeline/chat/", "protocol: render, step"),
    ("pipeline/", "other project code"),
)
LOOP = "event loop, HTTP transport (no project frame)"
TRANSFER = "transfer (pickle)"
APART = ("sink", TRANSFER)  # counted apart by callgrind, so outside the worker's shares
# start-up: imports, configuration, the warm-up's first connections
_STARTUP = ("importlib", "prepare (", "_find_and_load")
_FRAME = re.compile(r"^(?P<name>.*) \((?P<path>[^()]*?):\d+\)$")


def phase_of(path: str) -> str:
    for prefix, phase in PHASES:
        if path.startswith(prefix):
            return phase
    return "other project code"


@dataclass
class Profile:
    phases: Counter[str] = field(default_factory=Counter)
    functions: Counter[str] = field(default_factory=Counter)
    startup: int = 0

    def worker_total(self) -> int:
        return sum(n for p, n in self.phases.items() if p not in APART)


def classify(raw: Path) -> Profile:
    """Read py-spy's raw (collapsed-stack) output into phases and functions."""
    profile = Profile()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames, n = stack.split(";"), int(count)
        if any(marker in f for f in frames for marker in _STARTUP):
            profile.startup += n
            continue
        phase, function = LOOP, "(event loop)"
        for frame in reversed(frames):
            match = _FRAME.match(frame)
            if match is None:
                continue
            path, name = match["path"], match["name"]
            if path.startswith("pipeline/"):
                phase, function = phase_of(path), f"{path}:{name}"
                break
            if path.endswith("bench_request_path.py") and name.endswith("go"):
                phase, function = TRANSFER, "pickle"  # `go` calls pickle itself, in C
                break
        profile.phases[phase] += n
        if phase not in APART:
            profile.functions[function] += n
    return profile
