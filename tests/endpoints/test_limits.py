"""Per-endpoint admission with a fake clock: limits never exceeded, rate achieved, FIFO."""

from __future__ import annotations

import asyncio
import itertools
import random

import pytest

from pipeline.config.schema import Limits
from pipeline.endpoints.limits import WINDOW_S, EndpointLimiter

from .conftest import FakeClock, peak_in_flight


def limiter(clock: FakeClock, **limits: float | int | None) -> EndpointLimiter:
    return EndpointLimiter(Limits(**limits), clock=clock, sleep=clock.sleep)  # type: ignore[arg-type]


async def admit_all(
    lim: EndpointLimiter, clock: FakeClock, costs: list[int], workers: int = 8
) -> list[tuple[float, int]]:
    """Acquire every cost from `workers` concurrent tasks; (admitted_at, cost) in order."""
    queue = list(costs)
    admitted: list[tuple[float, int]] = []

    async def worker() -> None:
        while queue:
            cost = queue.pop(0)
            await lim.acquire(cost)
            admitted.append((clock(), cost))

    await asyncio.gather(*(worker() for _ in range(workers)))
    return admitted


def max_in_any_window(admitted: list[tuple[float, int]]) -> float:
    """The largest total cost inside any window [t, t + 60) that starts at an admission."""
    times = [t for t, _ in admitted]
    return max(sum(c for t2, c in admitted if t <= t2 < t + WINDOW_S) for t in times)


async def test_requests_per_minute_never_exceeded_in_any_window() -> None:
    clock = FakeClock()
    admitted = await admit_all(limiter(clock, rpm=30), clock, [1] * 200)
    assert max_in_any_window([(t, 1) for t, _ in admitted]) <= 30


async def test_requests_per_minute_rate_is_achieved_in_steady_state() -> None:
    clock = FakeClock()
    admitted = await admit_all(limiter(clock, rpm=30), clock, [1] * 301)
    span = admitted[-1][0] - admitted[0][0]
    achieved = (len(admitted) - 1) / span * 60
    assert achieved >= 0.98 * 30


async def test_no_initial_burst_requests_are_paced() -> None:
    clock = FakeClock()
    admitted = await admit_all(limiter(clock, rpm=60), clock, [1] * 5)
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(admitted)]
    assert gaps == [pytest.approx(1.0)] * 4


async def test_tokens_per_minute_never_exceeded_with_varied_sizes() -> None:
    clock = FakeClock()
    rng = random.Random(5)
    costs = [rng.randint(100, 400) for _ in range(600)]
    admitted = await admit_all(limiter(clock, tpm=20_000), clock, costs)
    assert max_in_any_window(admitted) <= 20_000


async def test_tokens_per_minute_rate_is_achieved_in_steady_state() -> None:
    clock = FakeClock()
    rng = random.Random(6)
    costs = [rng.randint(100, 400) for _ in range(1200)]
    admitted = await admit_all(limiter(clock, tpm=20_000), clock, costs)
    start = admitted[0][0]
    minutes = int((admitted[-1][0] - start) // WINDOW_S)
    assert minutes >= 5
    tokens = sum(c for t, c in admitted if t < start + minutes * WINDOW_S)
    assert tokens / minutes >= 0.98 * 20_000


async def test_both_axes_bind_together() -> None:
    clock = FakeClock()
    admitted = await admit_all(limiter(clock, rpm=10, tpm=1000), clock, [200] * 30)
    assert max_in_any_window(admitted) <= 1000
    assert max_in_any_window([(t, 1) for t, _ in admitted]) <= 10


async def test_tpm_accounting_paces_by_request_size() -> None:
    clock = FakeClock()
    lim = limiter(clock, tpm=10_000)
    start = clock()
    await lim.acquire(5000)
    await lim.acquire(5000)
    assert clock() - start == pytest.approx(30.0)
    await lim.acquire(100)
    assert clock() - start == pytest.approx(60.0)


async def test_request_larger_than_tpm_is_admitted_alone_instead_of_deadlocking() -> None:
    clock = FakeClock()
    lim = limiter(clock, tpm=1000)
    await lim.acquire(10)
    await asyncio.wait_for(lim.acquire(50_000), timeout=1.0)
    assert clock.now >= 1000.0 + WINDOW_S - 1e-9  # waited for the small one to leave the window


async def test_settle_debits_tokens_used_beyond_the_estimate() -> None:
    clock = FakeClock()
    lim = limiter(clock, tpm=6000)
    await lim.acquire(1000)
    lim.settle(estimated=1000, used=3000)
    start = clock()
    await lim.acquire(1000)
    assert clock() - start == pytest.approx(30.0)  # (1000 + 2000) * 60 / 6000


async def test_settle_never_refunds() -> None:
    clock = FakeClock()
    lim = limiter(clock, tpm=6000)
    await lim.acquire(3000)
    lim.settle(estimated=3000, used=10)
    start = clock()
    await lim.acquire(10)
    assert clock() - start == pytest.approx(30.0)


async def test_hold_pauses_every_admission() -> None:
    clock = FakeClock()
    lim = limiter(clock)
    lim.hold(12.5)
    start = clock()
    await lim.acquire(1)
    assert clock() - start == pytest.approx(12.5)


async def test_unlimited_endpoint_never_waits() -> None:
    clock = FakeClock()
    await admit_all(limiter(clock), clock, [10_000] * 50)
    assert clock.sleeps == []


async def test_waiters_are_admitted_first_come_first_served() -> None:
    clock = FakeClock()
    lim = limiter(clock, rpm=60)
    order: list[int] = []

    async def request(i: int) -> None:
        await lim.acquire(1)
        order.append(i)

    await asyncio.gather(*(request(i) for i in range(20)))
    assert order == list(range(20))


async def test_large_request_at_the_head_is_not_starved_by_small_ones() -> None:
    clock = FakeClock()
    lim = limiter(clock, tpm=1000)
    await lim.acquire(900)
    order: list[str] = []

    async def request(name: str, cost: int) -> None:
        await lim.acquire(cost)
        order.append(name)

    await asyncio.gather(request("big", 900), *(request(f"small{i}", 10) for i in range(5)))
    assert order[0] == "big"


async def test_concurrency_slots_cap_requests_in_flight() -> None:
    lim = EndpointLimiter(Limits(concurrency=3))
    assert await peak_in_flight(lambda: lim.admit(1)) == 3


def test_state_lives_in_each_limiter_not_in_the_module() -> None:
    clock = FakeClock()
    a, b = limiter(clock, rpm=1), limiter(clock, rpm=1)

    async def both() -> None:
        await a.acquire(1)
        await b.acquire(1)

    asyncio.run(both())
    assert clock.sleeps == []


def test_nonpositive_limits_are_rejected() -> None:
    with pytest.raises(ValueError, match="positive"):
        EndpointLimiter(Limits(rpm=0))
    with pytest.raises(ValueError, match="concurrency"):
        EndpointLimiter(Limits(concurrency=0))


async def test_zero_token_requests_are_not_paced_on_the_token_axis() -> None:
    clock = FakeClock()
    lim = limiter(clock, tpm=1000)
    await lim.acquire(1000)
    await lim.acquire(0)
    assert clock.sleeps == []


async def test_headroom_paces_just_under_the_limit() -> None:
    clock = FakeClock()
    lim = EndpointLimiter(Limits(rpm=60), clock=clock, sleep=clock.sleep, headroom=0.01)
    admitted = await admit_all(lim, clock, [1] * 6, workers=1)
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(admitted)]
    assert gaps == pytest.approx([60 / 59.4] * 5)


class LateClock(FakeClock):
    """Every sleep overshoots by `late` seconds, like an event loop under load."""

    def __init__(self, late: float) -> None:
        super().__init__()
        self.late = late

    async def sleep(self, seconds: float) -> None:
        await super().sleep(seconds + self.late)


async def test_late_wake_ups_keep_the_pacing_schedule() -> None:
    clock = LateClock(late=0.05)
    lim = EndpointLimiter(Limits(rpm=60), clock=clock, sleep=clock.sleep)
    admitted = await admit_all(lim, clock, [1] * 21, workers=1)
    span = admitted[-1][0] - admitted[0][0]
    # lag does not accumulate: 20 intervals of 1 s, not 20 x 1.05 s
    assert span == pytest.approx(20.0, abs=0.1)
    assert max_in_any_window(admitted) <= 60
