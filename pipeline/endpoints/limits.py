"""Per-endpoint admission: requests/min and tokens/min pacing plus the concurrency cap.

One `EndpointLimiter` per endpoint, owned by that endpoint's actor (never a module global).
Every attempt, retries included, is admitted through it.

Why this design. A classic token bucket of capacity B refilled at L/60 per second admits up to
B + L in some 60 s window, so it either exceeds a limit of L per minute or (refilling at
(L - B)/60) wastes B/L of the rate. Instead each axis (requests, tokens) combines:

- pacing (virtual scheduling, burst of one request): after a request of cost c is admitted, the
  next may start c * 60 / L seconds after the previous pacing point. Steady-state throughput is
  exactly L per minute, and there is no initial burst of L requests to trip a provider's
  short-window limits;
- an exact sliding-window log: a request of cost c starts at t only if the costs admitted in
  (t - 60, t] plus c are at most L. This is the guarantee; pacing alone already keeps unit-cost
  (rpm) axes inside it, and for tokens it binds only when request sizes vary, costing at most
  one request's tokens per window (>= 98% of the rate when one request is <= 2% of tpm).

A single request whose token estimate exceeds the whole tpm limit is charged as exactly the
limit (it waits for an empty window): refusing it forever would deadlock the actor.
Waiting is FIFO: admission runs under one asyncio.Lock, whose waiters are served in order, so a
large request at the head is not starved by small ones behind it.
`settle` debits tokens a reply used beyond the estimate (never refunds: the limit is a ceiling),
and `hold` pauses the endpoint after a 429 with Retry-After, so siblings stop hammering it.

A limit group (`limits.group`: one key or account shared by several configurations) is one
more `EndpointLimiter` with the group's limits, shared by the members' `GroupedLimiter`s;
every member lives in the same actor, so that bucket has exactly one owner
(pipeline/endpoints/limit_groups.py). A request is admitted at the first instant both its own
endpoint's limits and the group's allow it, and counted in both at that instant, so each
window sees the send when it happens. A 429's Retry-After holds the whole group: the provider
refused the key, not the configuration.

A request that generates nothing (a template render, a token count) is admitted through
`admit_aside`: the rate axes count it as a request, but it holds a slot of its own pool, not
one of the `concurrency` slots. Those slots stand for the server's generation slots; a count
that waited for one queued behind whole generations (minutes on a CPU) for work the server
does in milliseconds on another thread.

`headroom` (default 0: pace at exactly the limit) paces at (1 - headroom) x each limit while the
window log still allows the full limit. A server that enforces its own 60 s sliding window sees
our requests with network/event-loop jitter; pacing at exactly the limit then crosses its window
edge about half the time once a run passes 60 s (measured: 429s in docs/benchmarks.md). The
sweep's workers use SWEEP_HEADROOM.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from pipeline.config.schema import Limits

WINDOW_S = 60.0
SWEEP_HEADROOM = 0.01  # 1% of the limit: 0.6 s of jitter slack per 60 s window
LAG_TOLERANCE_S = 0.25  # a late wake-up up to this long keeps the pacing schedule

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class RateAxis:
    """One per-minute limit (requests or tokens): pacing + exact sliding-window log."""

    def __init__(self, per_minute: float, headroom: float = 0.0) -> None:
        if per_minute <= 0:
            raise ValueError(f"a per-minute limit must be positive, got {per_minute}")
        if not 0.0 <= headroom < 1.0:
            raise ValueError(f"headroom must lie in [0, 1), got {headroom}")
        self.per_minute = per_minute
        self._pace_rate = per_minute * (1.0 - headroom)  # pacing; the window log keeps the limit
        self._log: deque[tuple[float, float]] = deque()  # (admitted_at, cost)
        self._in_window = 0.0
        self._pace_at = float("-inf")  # earliest start allowed by pacing

    def charge_of(self, cost: float) -> float:
        return min(cost, self.per_minute)

    def _expire(self, now: float) -> None:
        while self._log and self._log[0][0] <= now - WINDOW_S:
            self._in_window -= self._log.popleft()[1]
        if not self._log:
            self._in_window = 0.0  # drop float drift once the window is empty

    def earliest(self, cost: float, now: float) -> float:
        """The earliest time >= now at which a request of `cost` may start."""
        charge = self.charge_of(cost)
        if charge <= 0:  # e.g. GET /models on the tokens axis: nothing to pace
            return now
        self._expire(now)
        start = max(now, self._pace_at)
        excess = self._in_window + charge - self.per_minute
        for admitted_at, entry_cost in self._log:
            if excess <= 1e-9:
                break
            start = max(start, admitted_at + WINDOW_S)
            excess -= entry_cost
        return start

    def record(self, cost: float, at: float) -> None:
        charge = self.charge_of(cost)
        if charge <= 0:
            return
        self._log.append((at, charge))
        self._in_window += charge
        interval = charge * WINDOW_S / self._pace_rate
        # A waiter woken late (event-loop lag under load) keeps the schedule: counting the next
        # start from the late wake-up let the lag accumulate, 7% below the limit in
        # docs/benchmarks.md. A longer gap (idle) restarts it, so a catch-up burst is at most
        # LAG_TOLERANCE_S worth of requests (with SWEEP_HEADROOM still under the limit).
        base = self._pace_at if at - self._pace_at < max(interval, LAG_TOLERANCE_S) else at
        self._pace_at = base + interval

    def debit(self, extra: float, at: float) -> None:
        """Count `extra` cost used at `at` (no pacing change beyond the log and next start)."""
        if extra > 0:
            self._log.append((at, extra))
            self._in_window += extra
            self._pace_at = max(at, self._pace_at) + extra * WINDOW_S / self._pace_rate


class EndpointLimiter:
    """Admission control for one endpoint: concurrency semaphore, rpm and tpm axes."""

    def __init__(
        self,
        limits: Limits,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
        headroom: float = 0.0,
    ) -> None:
        if limits.concurrency < 1:
            raise ValueError("limits.concurrency must be at least 1")
        self.limits = limits
        self._clock = clock
        self._sleep = sleep
        self._slots = asyncio.Semaphore(limits.concurrency)
        self._aside = asyncio.Semaphore(limits.concurrency)
        self._turn = asyncio.Lock()
        self._requests = RateAxis(limits.rpm, headroom) if limits.rpm is not None else None
        self._tokens = RateAxis(limits.tpm, headroom) if limits.tpm is not None else None
        self._hold_until = float("-inf")

    async def acquire(self, tokens: int) -> None:
        """Wait (FIFO) until one request of about `tokens` tokens may start, and count it."""
        if self._unlimited_now():
            return  # nothing to count and nobody queued: no lock to take
        async with self._turn:
            await _admit_together((self,), tokens)

    def _unlimited_now(self) -> bool:
        """No rate axis, no hold in force and no waiter ahead: admission is immediate."""
        return (
            self._requests is None
            and self._tokens is None
            and not self._turn.locked()
            and self._hold_until <= self._clock()
        )

    def _next_start(self, tokens: int, now: float) -> float:
        start = max(now, self._hold_until)
        if self._requests is not None:
            start = max(start, self._requests.earliest(1.0, now))
        if self._tokens is not None:
            start = max(start, self._tokens.earliest(float(tokens), now))
        return start

    def _count(self, tokens: int, now: float) -> None:
        if self._requests is not None:
            self._requests.record(1.0, now)
        if self._tokens is not None:
            self._tokens.record(float(tokens), now)

    def admit(self, tokens: int) -> AbstractAsyncContextManager[None]:
        """Hold a concurrency slot, then a rate admission, for one attempt.

        The slot is taken first so a request is sent as soon as it is admitted: admitting and
        then queueing for a slot would let admitted requests bunch up past the rate. A class,
        not an @asynccontextmanager: it is entered on every request, and the generator's
        machinery cost 4% of a worker's CPU (docs/benchmarks.md).
        """
        return _Admission(self, tokens)

    @asynccontextmanager
    async def admit_aside(self) -> AsyncIterator[None]:
        """Admission for a request that generates nothing (see the module docstring)."""
        async with self._aside:
            await self.acquire(0)
            yield

    def settle(self, estimated: int, used: int | None) -> None:
        """Debit tokens a reply used beyond its estimate (no refunds; see module docstring)."""
        if self._tokens is not None and used is not None and used > estimated:
            self._tokens.debit(float(used - estimated), self._clock())

    def hold(self, seconds: float) -> None:
        """Admit nothing for `seconds` (a 429's Retry-After applies to the whole endpoint)."""
        if seconds > 0:
            self._hold_until = max(self._hold_until, self._clock() + seconds)


class _Admission:
    """One attempt's hold on an EndpointLimiter (see EndpointLimiter.admit)."""

    __slots__ = ("limiter", "tokens")

    def __init__(self, limiter: EndpointLimiter, tokens: int) -> None:
        self.limiter = limiter
        self.tokens = tokens

    async def __aenter__(self) -> None:
        slots = self.limiter._slots
        await slots.acquire()
        try:
            await self.limiter.acquire(self.tokens)
        except BaseException:
            slots.release()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self.limiter._slots.release()


async def _admit_together(limiters: tuple[EndpointLimiter, ...], tokens: int) -> None:
    """Wait until every limiter admits the request at the same instant, then count it in all
    of them: admitted at one time, each limiter's window sees the send when it happens (the
    caller holds every limiter's turn lock; the first limiter's clock and sleep are used)."""
    clock, sleep = limiters[0]._clock, limiters[0]._sleep
    while True:
        now = clock()
        start = max(limiter._next_start(tokens, now) for limiter in limiters)
        if start <= now:
            break
        await sleep(start - now)
    for limiter in limiters:
        limiter._count(tokens, now)


class Limiter(Protocol):
    """What a client needs of its admission control (EndpointLimiter, GroupedLimiter)."""

    def admit(self, tokens: int) -> AbstractAsyncContextManager[None]: ...

    def admit_aside(self) -> AbstractAsyncContextManager[None]: ...

    def settle(self, estimated: int, used: int | None) -> None: ...

    def hold(self, seconds: float) -> None: ...


class GroupedLimiter:
    """An endpoint's own limits inside the limits of the group (key, account) it belongs to."""

    def __init__(self, own: EndpointLimiter, group: EndpointLimiter) -> None:
        self.own = own
        self.group = group

    @asynccontextmanager
    async def admit(self, tokens: int) -> AsyncIterator[None]:
        """Both slots, then one admission that both limiters grant at the same instant.

        Locks are always taken own first, group second, and nobody waits for an own lock
        while holding the group's, so members cannot deadlock.
        """
        own, group = self.own, self.group
        async with own._slots, group._slots:
            async with own._turn, group._turn:
                await _admit_together((own, group), tokens)
            yield

    @asynccontextmanager
    async def admit_aside(self) -> AsyncIterator[None]:
        """Both side pools, then one admission at the same instant (order as `admit`)."""
        own, group = self.own, self.group
        async with own._aside, group._aside:
            async with own._turn, group._turn:
                await _admit_together((own, group), 0)
            yield

    def settle(self, estimated: int, used: int | None) -> None:
        self.own.settle(estimated, used)
        self.group.settle(estimated, used)

    def hold(self, seconds: float) -> None:
        self.own.hold(seconds)
        self.group.hold(seconds)  # a refused key holds every configuration on it
