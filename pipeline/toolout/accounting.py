"""Request accounting under a cache model: hits, writes, cost, and a cause for every missed token.

Input is one transcript × arm's request sequence as the replay built it: each request a tuple
of blocks (one per message, with its estimated tokens and whether the replay may put a
breakpoint on it), the output tokens and a timestamp. Per request the result holds input,
cached (hit), written and uncached tokens, output tokens, the cost in USD and the missed tokens
split by cause. Always `input = cached + written + uncached`, `missed = written + uncached =
the sum of the causes`, and the cost is the sum of its parts.

The cache state is every prefix an earlier request left in the cache, with the time it was
last used; a prefix is alive while `now − last_used <= ttl_seconds`. Decisions:

- **Blocks are the match unit.** Two blocks match when their keys (the serialised message)
  are equal; a hit ends on a block boundary, so tokens a provider would match inside a changed
  block are counted as missed (conservative). The prefix a request shares with the cache is
  its longest run of leading blocks that an earlier request sent in the same order.
- **Time.** A request's timestamp is the transcript's; a missing one is the previous request's
  time plus `think_time_s` (default 30 s), never past the next recorded time (missing ones
  before the first recorded time count back from it). TTLs are measured between request
  times; a recorded time that goes backwards is a bug (ValueError).
- **Hits per kind** (cache_models.py): `automatic_prefix` rounds the shared prefix down to
  `step_tokens` and hits nothing below the model's minimum; `prefix_units` hits the furthest
  end of an earlier request's input (or output, with `output_cached`) or `unit_tokens` grid
  point inside the shared prefix; `explicit_breakpoints` hits the furthest boundary holding an
  alive entry within `lookback_blocks` blocks before one of this request's breakpoints, writes
  (at `cache_write`) from the hit up to its last breakpoint at or above the minimum and bills
  the rest as input. Of more flagged blocks than `max_breakpoints`, the first (the stable
  system/tools prefix) and the last `max_breakpoints − 1` are used, as harnesses do.
  A `none` model bills everything as input.
- **Writes.** Only `explicit_breakpoints` bills a write; elsewhere a stored token is billed as
  ordinary input, so `written` is 0 and the miss is `uncached`.
- **Causes**, laid end to end on the request's tokens after the hit:
  `ttl_expiry` (would have hit had the entries not expired), then `below_minimum` (the whole
  shared prefix, when it is under the model's minimum) or `granularity` (the rest of the
  shared prefix that the model lets no hit land on: step or unit rounding, or for breakpoints
  no entry on that boundary or none within the lookback), then `rewrite` (blocks sitting where
  an earlier request's different blocks were: the prefix changed) and `cold_start` (tokens no
  earlier request sent there: the first request and every request's new tail). For
  breakpoints, when the request diverges from an earlier one, the shared prefix no breakpoint
  can reach any more is `rewrite`, not `granularity`: without the rewrite the earlier entry
  would have hit (a rewrite deep in history loses everything after the nearest entry within
  the lookback, often everything after the system prompt). Under `none`
  every token is `cold_start` (the cache is always cold). A cause's USD is what its tokens
  were billed (written or input rate), so hit cost + causes + output = request cost.
- **Unknown prices fail closed**: `UnknownPriceError` before anything is accounted.
Pure: values in, values out; the cache state lives in one call.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple, Protocol, cast, get_args

from pipeline.toolout.cache_models import CacheModel
from pipeline.toolout.ledger import Keyed, Ledger

DEFAULT_THINK_TIME_S = 30.0  # assumed seconds between requests where the transcript has no time
MTOK = 1_000_000

MissCause = Literal["cold_start", "rewrite", "ttl_expiry", "below_minimum", "granularity"]
MISS_CAUSES: tuple[MissCause, ...] = get_args(MissCause)


@dataclass(frozen=True)
class CacheBlock:
    """One block of a request as the cache sees it."""

    key: str  # the serialised block; equal keys are equal bytes for the cache
    tokens: int
    breakpoint: bool = False  # the replay may put an explicit cache breakpoint after it

    @classmethod
    def of(cls, role: str, text: str, tokens: int, *, breakpoint: bool = False) -> CacheBlock:
        """A message block keyed by its role and text (the replay's `Block` fields)."""
        return cls(f"{role}\x00{text}", tokens, breakpoint)


@dataclass(frozen=True)
class CacheRequest:
    """One request: its blocks in order, its output tokens and its time, where recorded."""

    blocks: tuple[CacheBlock, ...]
    output_tokens: int = 0
    timestamp: float | None = None  # seconds; None: think-time assumption
    output_block: CacheBlock | None = None  # the model output as the next request carries it

    @property
    def input_tokens(self) -> int:
        return sum(b.tokens for b in self.blocks)


def link_outputs(requests: Sequence[CacheRequest]) -> tuple[CacheRequest, ...]:
    """Each request's `output_block` set to the block that follows its prefix in the next one.

    In a replay of visible history that block is the assistant turn the request produced (the
    policies never rewrite assistant turns), which `output_cached` models can hit.
    """
    linked = list(requests)
    for i in range(len(linked) - 1):
        mine, following = linked[i], linked[i + 1]
        if len(following.blocks) > len(mine.blocks) and mine.output_block is None:
            linked[i] = replace(mine, output_block=following.blocks[len(mine.blocks)])
    return tuple(linked)


class CauseCost(NamedTuple):
    tokens: int
    usd: float


_ZERO = CauseCost(0, 0.0)


class Misses(NamedTuple):
    """Missed tokens of one request (or a sum of requests) by cause.

    Named tuples, as `CauseCost` and `RequestCost`: one of each is built per request, and a
    tuple costs a quarter of a frozen dataclass to build.
    """

    cold_start: CauseCost = _ZERO
    rewrite: CauseCost = _ZERO
    ttl_expiry: CauseCost = _ZERO
    below_minimum: CauseCost = _ZERO
    granularity: CauseCost = _ZERO

    def items(self) -> Iterator[tuple[MissCause, CauseCost]]:
        return zip(MISS_CAUSES, self, strict=True)

    @property
    def tokens(self) -> int:
        return sum(c.tokens for _, c in self.items())

    @property
    def usd(self) -> float:
        return sum(c.usd for _, c in self.items())

    def __add__(self, other: tuple[object, ...]) -> Misses:
        """The sum per cause (not a tuple's concatenation)."""
        if not isinstance(other, Misses):
            return NotImplemented
        return Misses(
            *(
                CauseCost(mine.tokens + theirs.tokens, mine.usd + theirs.usd)
                for mine, theirs in zip(self, other, strict=True)
            )
        )


@dataclass(slots=True)
class RequestCost:
    """One request's bill. A value nothing mutates; slotted, not frozen, as the replay's
    requests are: a frozen dataclass's `__init__` costs five times as much, once per request
    (and a named tuple's `index` field would hide `tuple.index`)."""

    index: int
    time_s: float
    time_assumed: bool  # the think-time assumption, not the transcript, set the time
    input_tokens: int
    cached_tokens: int
    written_tokens: int
    uncached_tokens: int
    output_tokens: int
    cost_usd: float
    misses: Misses

    @property
    def missed_tokens(self) -> int:
        return self.written_tokens + self.uncached_tokens


@dataclass(frozen=True)
class SessionCost:
    """One transcript × arm under one cache model and priced model."""

    cache_model: str
    model: str
    requests: tuple[RequestCost, ...]

    @property
    def cost_usd(self) -> float:
        return sum(r.cost_usd for r in self.requests)

    @property
    def input_tokens(self) -> int:
        return sum(r.input_tokens for r in self.requests)

    @property
    def cached_tokens(self) -> int:
        return sum(r.cached_tokens for r in self.requests)

    @property
    def misses(self) -> Misses:
        total = Misses()
        for r in self.requests:
            total = total + r.misses
        return total


class _Timed(Protocol):
    @property
    def timestamp(self) -> float | None: ...


def request_times(
    requests: Sequence[_Timed], think_time_s: float = DEFAULT_THINK_TIME_S
) -> list[tuple[float, bool]]:
    """(time, assumed) per request: the recorded time, else the think-time assumption."""
    if think_time_s < 0:
        raise ValueError(f"think_time_s must be >= 0, got {think_time_s}")
    stamps = [r.timestamp for r in requests]
    if None not in stamps:  # every time recorded (the common case): one pass, no assumption
        recorded = cast("list[float]", stamps)  # no None: checked above
        for i in range(1, len(recorded)):
            if recorded[i] < recorded[i - 1]:
                raise ValueError(
                    f"request {i}: time {recorded[i]} is before request {i - 1}'s {recorded[i - 1]}"
                )
        return [(now, False) for now in recorded]
    upcoming: list[float | None] = []  # the next recorded time at or after each request
    following: float | None = None
    for r in reversed(requests):
        following = r.timestamp if r.timestamp is not None else following
        upcoming.append(following)
    upcoming.reverse()
    times: list[tuple[float, bool]] = []
    for i, r in enumerate(requests):
        nxt = upcoming[i]
        if r.timestamp is not None:
            now, assumed = r.timestamp, False
        elif not times:  # the first request: count back from the first recorded time
            first = next((j for j, q in enumerate(requests) if q.timestamp is not None), 0)
            now, assumed = (0.0 if nxt is None else nxt - first * think_time_s), True
        else:  # never past the next recorded time
            now = times[-1][0] + think_time_s
            now, assumed = (now if nxt is None else min(now, nxt)), True
        if times and now < times[-1][0]:
            raise ValueError(f"request {i}: time {now} is before request {i - 1}'s {times[-1][0]}")
        times.append((now, assumed))
    return times


class Incremental(Protocol):
    """A request given as the change from the one before (pipeline.toolout.replay's form)."""

    @property
    def slots(self) -> Sequence[Keyed]: ...  # its blocks are slots[:block_count]

    @property
    def block_count(self) -> int: ...

    @property
    def unchanged_blocks(self) -> int: ...  # leading blocks equal to the previous request's

    @property
    def output_block(self) -> Keyed | None: ...

    @property
    def output_tokens(self) -> int: ...

    @property
    def timestamp(self) -> float | None: ...


def account(
    requests: Sequence[CacheRequest],
    cache_model: CacheModel,
    model: str,
    *,
    think_time_s: float = DEFAULT_THINK_TIME_S,
) -> SessionCost:
    """Every request of one sequence billed under `cache_model` at `model`'s prices.

    Any sequence of blocks: the blocks each request shares with the one before are found by
    comparing keys (the replay's own path, `account_incremental`, is told them instead).
    """
    bill = _Biller(cache_model, model)  # unknown prices raise before anything is billed
    for index, r in enumerate(requests):
        if r.output_tokens < 0 or any(b.tokens < 0 for b in r.blocks):
            raise ValueError(f"request {index}: token counts must be >= 0")
    times = request_times(requests, think_time_s)
    costs = []
    previous: tuple[CacheBlock, ...] = ()
    for i, (r, (now, assumed)) in enumerate(zip(requests, times, strict=True)):
        same = 0
        while same < min(len(r.blocks), len(previous)) and (
            r.blocks[same].key == previous[same].key
        ):
            same += 1
        flagged = [j + 1 for j, b in enumerate(r.blocks) if b.breakpoint]
        costs.append(
            bill(i, r.blocks, len(r.blocks), same, flagged, now, assumed, r.output_tokens,
                 r.output_block)
        )  # fmt: skip
        previous = r.blocks
    return SessionCost(cache_model.name, model, tuple(costs))


def account_incremental(
    requests: Sequence[Incremental],
    cache_model: CacheModel,
    model: str,
    *,
    think_time_s: float = DEFAULT_THINK_TIME_S,
) -> SessionCost:
    """`account` of a replay's requests, each billed in the work of what it changed.

    Breakpoints sit on the first and the last block of every request (runner.py's rule);
    a request's model output, where the next request carries it, is its `output_block`.
    """
    running = RunningAccount(cache_model, model, requests, think_time_s)
    costs = [running.bill(i, r, r.slots) for i, r in enumerate(requests)]
    return SessionCost(cache_model.name, model, tuple(costs))


class RunningAccount:
    """`account_incremental` one request at a time, so a caller can fork its state: the
    oracle's search prices many schedules that share their first requests
    (pipeline/toolout/schedule_cost.py) and bills only the requests after they differ."""

    def __init__(
        self,
        cache_model: CacheModel,
        model: str,
        requests: Sequence[_Timed],
        think_time_s: float = DEFAULT_THINK_TIME_S,
    ) -> None:
        self.biller = _Biller(cache_model, model)  # unknown prices raise before anything else
        self.times = request_times(requests, think_time_s)  # the requests' times, once
        self.explicit = cache_model.kind == "explicit_breakpoints"

    def bill(self, i: int, r: Incremental, slots: Sequence[Keyed]) -> RequestCost:
        """Request `i` (the next one after those billed), its blocks `slots[:r.block_count]`."""
        now, assumed = self.times[i]
        n = r.block_count
        return self.biller(
            i, slots, n, r.unchanged_blocks, self._flagged(i, r), now, assumed, r.output_tokens,
            r.output_block,
        )  # fmt: skip

    def usd(self, i: int, r: Incremental, slots: Sequence[Keyed]) -> float:
        """`bill(i, r, slots).cost_usd` without the causes (the oracle's search reads only
        this): the same ledger step and price."""
        biller, output = self.biller, r.output_block
        ledger = biller.ledger
        hit, write_end, *_ = ledger.bill(
            i, slots, r.block_count, r.unchanged_blocks, self._flagged(i, r),
            None if output is None else output.key, self.times[i][0],
        )  # fmt: skip
        return biller.usd(hit, write_end, ledger.pos[-1], r.output_tokens)

    def _flagged(self, i: int, r: Incremental) -> tuple[int, ...]:
        """The request checked, and its breakpoints: only explicit breakpoints read them."""
        if r.output_tokens < 0:
            raise ValueError(f"request {i}: token counts must be >= 0")
        n = r.block_count
        return ((1, n) if n > 1 else (1,) if n == 1 else ()) if self.explicit else ()

    def fork(self) -> RunningAccount:
        """An independent copy: billing either leaves the other as it was."""
        twin = copy.copy(self)
        twin.biller = copy.copy(self.biller)
        twin.biller.ledger = self.biller.ledger.fork()
        return twin


class _Biller:
    """Bills one sequence's requests in order on its ledger and prices each split (both
    `account` paths); the prices are read once, not per request."""

    def __init__(self, cache_model: CacheModel, model: str) -> None:
        self.prices = cache_model.prices_for(model)  # unknown prices raise here
        self.ledger = Ledger(cache_model, cache_model.min_tokens_for(model))

    def __call__(  # noqa: PLR0917 - one request's bill: its blocks and its times
        self,
        i: int,
        blocks: Sequence[Keyed],
        n: int,
        unchanged: int,
        breakpoints: Sequence[int],
        now: float,
        assumed: bool,
        output_tokens: int,
        output_block: Keyed | None,
    ) -> RequestCost:
        """The request's cost and its missed tokens by cause, from its split on the ledger.

        The causes lie end to end after the hit (ttl_expiry, below_minimum, granularity,
        rewrite, cold_start); a cause's USD is its written tokens at the write rate and the
        rest at the input rate. Without a write (every kind but explicit breakpoints) that is
        `tokens * input / MTOK` for each, the same float as the general form (0 * rate adds
        0.0). Billing and pricing are one method: a call fewer per request.
        """
        ledger, prices = self.ledger, self.prices
        output_key = output_block.key if output_block is not None else None
        split = ledger.bill(i, blocks, n, unchanged, breakpoints, output_key, now)
        total = ledger.pos[-1]
        hit, write_end, _, ttl, below, granularity, rewrite, cold = split
        assert hit + ttl + below + granularity + rewrite + cold == total, (split, total)
        rate = prices.input
        if write_end == hit:  # a cause of 0 tokens is _ZERO (0 * rate / MTOK is 0.0): most are
            misses = _tuple(
                Misses,
                (
                    _tuple(CauseCost, (cold, cold * rate / MTOK)) if cold else _ZERO,
                    _tuple(CauseCost, (rewrite, rewrite * rate / MTOK)) if rewrite else _ZERO,
                    _tuple(CauseCost, (ttl, ttl * rate / MTOK)) if ttl else _ZERO,
                    _tuple(CauseCost, (below, below * rate / MTOK)) if below else _ZERO,
                    _tuple(CauseCost, (granularity, granularity * rate / MTOK))
                    if granularity
                    else _ZERO,
                ),
            )
        else:
            write_rate = prices.cache_write

            def billed(start: int, length: int) -> CauseCost:
                """The tokens [start, start + length) beyond the hit: written, then input."""
                written = max(0, min(start + length, write_end) - max(start, hit))
                return CauseCost(length, (written * write_rate + (length - written) * rate) / MTOK)

            at_below = hit + ttl
            at_granularity = at_below + below
            at_rewrite = at_granularity + granularity
            misses = Misses(
                billed(at_rewrite + rewrite, cold),
                billed(at_rewrite, rewrite),
                billed(hit, ttl),
                billed(at_below, below),
                billed(at_granularity, granularity),
            )
        cost = self.usd(hit, write_end, total, output_tokens)
        return RequestCost(
            i, now, assumed, total, hit, write_end - hit, total - write_end, output_tokens, cost,
            misses,
        )  # fmt: skip

    def usd(self, hit: int, write_end: int, total: int, output_tokens: int) -> float:
        """A request's cost: [0, hit) read, [hit, write_end) written, the rest input."""
        prices = self.prices
        return (
            hit * prices.cache_read
            + (write_end - hit) * prices.cache_write
            + (total - write_end) * prices.input
            + output_tokens * prices.output
        ) / MTOK


# `tuple.__new__` itself: a named tuple's constructor is a Python function around it.
_tuple = tuple.__new__
