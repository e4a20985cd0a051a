"""Synthetic reasoning traces with planted facts, for the length bands real traces lack.

The shipped real traces are nearly all under 1,000 characters (SWE-agent and OpenHands
thoughts are a sentence or two), while the seed's bloat lives in the long tail (p99 17,282
characters). `generate(seed, length)` writes a debugging monologue of the texture the seed
describes: dense technical facts punctuated by churn ("wait, actually", false starts,
restatements of earlier decisions, hedges), and returns the facts it planted.

Contract:
- Deterministic: the same `(seed, length, GENERATOR_VERSION)` gives the same bytes (one
  `random.Random(seed)`, no clock, no global state).
- `length - 40 <= len(text) <= length` for `length >= 200` (sentences are added while they
  fit, then short churn fills the rest).
- Planted facts are exactly what `facts.extract` finds in the text: every fact a sentence
  carries is declared with it (a `file.ext:N` reference declares its path too), and the
  churn and glue prose carry none. Restatements repeat earlier facts, so a summary that keeps
  each fact once is not penalised for dropping the repetition.
- Labelled: `source="synthetic"`, `synthetic=True`, and a provenance naming the generator, its
  version, the seed and the length. The text itself carries no label (it would be compressed).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pipeline.traces.compression.bands import DEFAULT_EDGES, check_edges
from pipeline.traces.compression.facts import Fact
from pipeline.traces.compression.items import SYNTHETIC, TraceItem, make_item

GENERATOR_VERSION = 1
_SLACK = 40  # a trace may fall this many characters short of its target length
_MISSES = 8  # sentences that did not fit before short fillers take over

_DIRS = (
    "src/gateway",
    "lib/proxy",
    "services/api/src",
    "packages/core/src",
    "app/models",
    "tests/integration",
    "scripts/deploy",
    "web/dashboard/styles",
    "internal/cache",
)
_STEMS = (
    "gateway",
    "proxy",
    "cache_store",
    "session_pool",
    "retry_budget",
    "stream_guard",
    "continuity-client",
    "tunnel",
    "health",
    "router",
    "tokenizer",
    "settle_path",
)
_EXTS = ("mjs", "ts", "py", "go", "rs", "css", "yaml", "json", "sh")
_ROUTES = ("/api/status", "/v1/chat/completions", "/healthz", "/api/sessions/active")
_LOGS = ("/var/log/ds4/gateway.log", "/tmp/repro/run.log", "/srv/cache/index.db")
_VERBS = ("send", "forward", "begin", "settle", "flush", "retry", "parse", "guard", "drain")
_NOUNS = (
    "Buffered",
    "Response",
    "Passthrough",
    "Upstream",
    "Headers",
    "Chunk",
    "Socket",
    "Candidate",
    "Budget",
    "Stream",
    "Request",
)
_CLASSES = ("Connection", "Retry", "Stream", "Session", "Upstream", "Cache", "Token")
_CLASS_TAILS = ("Pool", "Guard", "Budget", "Router", "Registry", "Reader", "Writer")
_SNAKE = (
    "buffer_candidate",
    "settle_once",
    "max_inflight",
    "drain_timeout",
    "pixel_array",
    "last_query_index",
    "retry_after",
    "headers_sent",
    "keep_alive",
    "chunk_size",
)
_ERRORS = (
    "ERR_HTTP_HEADERS_SENT",
    "ERR_STREAM_PREMATURE_CLOSE",
    "ECONNRESET",
    "EADDRINUSE",
    "ERR_SOCKET_CLOSED",
    "ETIMEDOUT",
    "ENOENT",
    "ERR_INVALID_STATE",
)
_CSS = (".chat-panel__header", ".status-badge--error", ".msg-list__item", ".btn-retry")
_SERVICES = ("ds4-gateway", "tunnel-v2", "dash-3000", "worker-pool-8", "proxy-01")
_SIZES = ("MB", "GB", "KiB", "MiB")
_TIMES = ("ms", "s", "seconds")


@dataclass(frozen=True)
class SyntheticTrace:
    item: TraceItem
    facts: tuple[Fact, ...]  # distinct planted facts, in order of first planting


class _Writer:
    """Draws fact values; each draw returns the text and the facts that text carries."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: list[tuple[str, tuple[Fact, ...]]] = []  # placed in the text
        self.pending: list[tuple[str, tuple[Fact, ...]]] = []  # drawn for the current sentence

    def settle(self, placed: bool) -> None:
        """Only values of a sentence that made it into the text can be restated later."""
        if placed:
            self.used.extend(self.pending)
        self.pending.clear()

    def _pick(self, options: Sequence[str]) -> str:
        return options[self.rng.randrange(len(options))]

    def _keep(self, text: str, *facts: Fact) -> tuple[str, tuple[Fact, ...]]:
        self.pending.append((text, facts))
        return text, facts

    def file(self) -> tuple[str, tuple[Fact, ...]]:
        name = f"{self._pick(_STEMS)}.{self._pick(_EXTS)}"
        return self._keep(name, Fact("path", name))

    def path(self) -> tuple[str, tuple[Fact, ...]]:
        value = f"{self._pick(_DIRS)}/{self._pick(_STEMS)}.{self._pick(_EXTS)}"
        return self._keep(value, Fact("path", value))

    def route(self) -> tuple[str, tuple[Fact, ...]]:
        value = self._pick(_ROUTES)
        return self._keep(value, Fact("path", value))

    def log(self) -> tuple[str, tuple[Fact, ...]]:
        value = self._pick(_LOGS)
        return self._keep(value, Fact("path", value))

    def file_line(self) -> tuple[str, tuple[Fact, ...]]:
        name = f"{self._pick(_STEMS)}.{self._pick(_EXTS)}"
        ref = f"{name}:{self.rng.randint(12, 1400)}"
        return self._keep(ref, Fact("line_ref", ref), Fact("path", name))

    def line(self) -> tuple[str, tuple[Fact, ...]]:
        ref = f"line {self.rng.randint(5, 1400)}"
        return self._keep(ref, Fact("line_ref", ref))

    def func(self) -> tuple[str, tuple[Fact, ...]]:
        value = f"{self._pick(_VERBS)}{self._pick(_NOUNS)}"
        return self._keep(value, Fact("identifier", value))

    def cls(self) -> tuple[str, tuple[Fact, ...]]:
        value = f"{self._pick(_CLASSES)}{self._pick(_CLASS_TAILS)}"
        return self._keep(value, Fact("identifier", value))

    def _named(self, options: Sequence[str]) -> tuple[str, tuple[Fact, ...]]:
        value = self._pick(options)
        return self._keep(value, Fact("identifier", value))

    def snake(self) -> tuple[str, tuple[Fact, ...]]:
        return self._named(_SNAKE)

    def err(self) -> tuple[str, tuple[Fact, ...]]:
        return self._named(_ERRORS)

    def css(self) -> tuple[str, tuple[Fact, ...]]:
        return self._named(_CSS)

    def service(self) -> tuple[str, tuple[Fact, ...]]:
        return self._named(_SERVICES)

    def _number(self, value: str) -> tuple[str, tuple[Fact, ...]]:
        return self._keep(value, Fact("number", value))

    def duration(self) -> tuple[str, tuple[Fact, ...]]:
        amount = self.rng.choice((5, 12, 30, 45, 120, 250, 800))
        return self._number(f"{amount} {self._pick(_TIMES)}")

    def size(self) -> tuple[str, tuple[Fact, ...]]:
        return self._number(f"{self.rng.choice((0.5, 1.5, 2.5, 4, 12, 64))} {self._pick(_SIZES)}")

    def port(self) -> tuple[str, tuple[Fact, ...]]:
        return self._number(f"port {self.rng.choice((3000, 8080, 30001, 30010, 5432, 6379))}")

    def percent(self) -> tuple[str, tuple[Fact, ...]]:
        return self._number(f"{self.rng.choice((3, 17, 42, 68, 99))}%")

    def earlier(self) -> tuple[str, tuple[Fact, ...]]:
        """A fact planted before (for restatements), or a new identifier if none yet."""
        if not self.used:
            return self.func()
        return self.used[self.rng.randrange(len(self.used))]


_Slot = Callable[[_Writer], tuple[str, tuple[Fact, ...]]]
_SLOTS: dict[str, _Slot] = {
    "file": _Writer.file,
    "path": _Writer.path,
    "route": _Writer.route,
    "log": _Writer.log,
    "fileline": _Writer.file_line,
    "line": _Writer.line,
    "func": _Writer.func,
    "cls": _Writer.cls,
    "snake": _Writer.snake,
    "err": _Writer.err,
    "css": _Writer.css,
    "svc": _Writer.service,
    "ms": _Writer.duration,
    "size": _Writer.size,
    "port": _Writer.port,
    "pct": _Writer.percent,
    "again": _Writer.earlier,
}

# Fact-bearing sentences: each {slot} is filled by the writer method of that name.
_FACT_SENTENCES = (
    "The crash is {err} thrown inside the async handler in {path}.",
    "Looking at {fileline}, the guard around {func} is missing.",
    "So {func} is called from {line} of {file}, after the client was already answered.",
    "The test in {path} uses real ports ({port}) and may spawn the whole {svc} service.",
    "Measured: the settle path takes {ms} and the buffer grows to {size} before it drains.",
    "I need to check {fileline} and {fileline}, since both call {func}.",
    "{snake} is a closure inside the request handler, not exported, so it is hard to test.",
    "Plan: run the suite in {path}, then restart {svc} and verify {route} on {port}.",
    "The style for {css} lives in {path}; the header overlaps the list by {pct}.",
    "Around {line} the code checks {snake} but not {snake}.",
    "The log at {log} shows {err} right after {ms} of idle time.",
    "If I move the check into {cls}, the change stays inside {file}.",
    "The upstream answers within {ms}, so the timeout of {ms} is not the problem.",
    "Edit {fileline}: wrap the write in a check of {snake}.",
    "{cls} keeps {size} per session, which explains the memory at {pct} of the limit.",
    "The dashboard on {port} polls {route}, and the badge uses {css}.",
    "{err} only shows up when {func} runs twice, so the second call needs a guard.",
    "The retry budget in {path} allows {pct} of requests to retry within {ms}.",
    "{cls} is constructed in {fileline} and never closed.",
    "The fixture for {svc} writes {size} to {log} on every run.",
    "Renaming {snake} would touch {file} and {file}, too wide for this fix.",
    "Between {line} and {line} the code reads {snake} without a lock.",
)

# Restatements: churn that repeats something already decided.
_RESTATEMENTS = (
    "Wait, actually, I already said that: {again}.",
    "So again, the key point is {again}.",
    "Let me restate: {again} is where it breaks.",
    "As I noted, {again} matters here, nothing new.",
)

# Churn without facts: hedges, false starts, corrections; an opener and a body, so a long
# trace does not repeat the same few sentences word for word.
_OPENERS = ("Wait, actually,", "Hmm,", "Actually,", "No,", "OK,", "Hold on,", "So,", "Then again,")
_CHURN = (
    "that is not right.",
    "let me think about this again.",
    "scratch that, I was looking at the wrong branch.",
    "maybe not, I should double check before editing anything.",
    "let me try a different approach.",
    "perhaps the race only happens under load, I am not sure.",
    "I think this is probably the cause, but I could be wrong.",
    "where was I.",
    "let me go back one step.",
    "or is it the other way round?",
    "that seems plausible, though it might be a red herring.",
    "a full integration test would be flaky and slow.",
    "I keep going around in circles here.",
    "that part is settled, moving on.",
    "let me start over with the simplest explanation.",
    "I assumed the handler runs once, which may be false.",
    "that contradicts what I saw a moment ago.",
    "it is either the retry or the timeout, probably the retry.",
    "I should not rewrite the whole module for this.",
    "the earlier idea still looks better.",
)
_FILLERS = ("Hmm.", "OK.", "Right.", "Wait.", "So.", "Fine.")


def _sentence(writer: _Writer, template: str) -> tuple[str, list[Fact]]:
    facts: list[Fact] = []
    out = template
    while "{" in out:
        start = out.index("{")
        end = out.index("}", start)
        text, carried = _SLOTS[out[start + 1 : end]](writer)
        facts.extend(carried)
        out = out[:start] + text + out[end + 1 :]
    return out, facts


def _draw(writer: _Writer) -> tuple[str, list[Fact]]:
    roll = writer.rng.random()
    if roll < 0.5:
        return _sentence(writer, writer.rng.choice(_FACT_SENTENCES))
    if roll < 0.65:
        return _sentence(writer, writer.rng.choice(_RESTATEMENTS))
    body = writer.rng.choice(_CHURN)
    if writer.rng.random() < 0.6:
        return f"{writer.rng.choice(_OPENERS)} {body}", []
    return body[0].upper() + body[1:], []


def generate(
    seed: int, length: int, *, edges: Sequence[int] = DEFAULT_EDGES, item_id: str | None = None
) -> SyntheticTrace:
    """A synthetic trace of at most `length` characters (at least `length - 40`)."""
    if length < 1:
        raise ValueError(f"length must be at least 1, not {length}")
    writer = _Writer(random.Random(seed))
    parts: list[str] = []
    size = 0
    planted: dict[Fact, None] = {}
    misses = 0
    while misses < _MISSES:
        text, facts = _draw(writer)
        sep = "" if not parts else ("\n\n" if writer.rng.random() < 0.2 else " ")
        fits = size + len(sep) + len(text) <= length
        writer.settle(placed=fits)
        if not fits:
            misses += 1
            continue
        parts.append(sep + text)
        size += len(sep) + len(text)
        planted.update(dict.fromkeys(facts))
    while fitting := [f for f in _FILLERS if size + 1 + len(f) <= length]:
        piece = (" " if parts else "") + writer.rng.choice(fitting)
        parts.append(piece)
        size += len(piece)
    text = "".join(parts)
    provenance = f"foldsweep generator v{GENERATOR_VERSION} seed={seed} length={length}"
    item = make_item(
        item_id or f"{SYNTHETIC}/s{seed}-n{length}",
        text,
        SYNTHETIC,
        provenance,
        synthetic=True,
        edges=edges,
    )
    return SyntheticTrace(item, tuple(planted))


def band_lengths(
    seed: int, n_per_band: int, edges: Sequence[int] = DEFAULT_EDGES, longest: int = 32000
) -> list[int]:
    """`n_per_band` target lengths inside each band, log-uniform, the top band up to `longest`.

    Why log-uniform: within 4k-16k a uniform draw would put three quarters of the traces
    above 7k; the seed's length distribution is heavy-tailed, so equal weight per doubling is
    the closer shape. The shortest band starts at 200 characters (the generator's floor), or
    at half the first edge when that is lower. Targets stay `_SLACK` above a band's lower edge,
    so a trace up to 40 characters short of its target still lands in the intended band.
    """
    values = check_edges(edges)
    if longest <= values[-1]:
        raise ValueError(f"longest ({longest}) must exceed the last band edge ({values[-1]})")
    rng = random.Random(seed)
    floor = max(1, min(200, values[0] // 2))
    pairs = list(itertools.pairwise([floor, *values, longest]))
    return [
        min(high - 1, max(low + _SLACK, round(low * (high / low) ** rng.random())))
        for low, high in pairs
        for _ in range(n_per_band)
    ]
