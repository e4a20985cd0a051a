"""A request that generates nothing is admitted beside the generation slots, never behind them."""

from __future__ import annotations

import asyncio

from pipeline.config.schema import Limits
from pipeline.endpoints.limits import EndpointLimiter, GroupedLimiter

from .conftest import FakeClock, peak_in_flight


async def test_an_aside_request_is_admitted_while_every_generation_slot_is_held() -> None:
    lim = EndpointLimiter(Limits(concurrency=2))
    release = asyncio.Event()

    async def generation() -> None:
        async with lim.admit(100):
            await release.wait()

    held = [asyncio.create_task(generation()) for _ in range(2)]
    await asyncio.sleep(0)
    async with asyncio.timeout(1):
        async with lim.admit_aside():
            pass  # a count or a render: done while both generations still run
    assert not any(task.done() for task in held)
    release.set()
    await asyncio.gather(*held)


async def test_aside_requests_have_their_own_cap_of_concurrency() -> None:
    lim = EndpointLimiter(Limits(concurrency=3))
    assert await peak_in_flight(lim.admit_aside) == 3


async def test_aside_requests_count_against_requests_per_minute() -> None:
    clock = FakeClock()
    lim = EndpointLimiter(Limits(rpm=60), clock=clock, sleep=clock.sleep)
    async with lim.admit_aside():
        pass
    async with lim.admit(10):
        pass  # paced one second after the aside request
    assert clock.sleeps == [1.0]


async def test_a_group_admits_aside_beside_its_members_generation_slots() -> None:
    group = EndpointLimiter(Limits(concurrency=1))
    own = EndpointLimiter(Limits(concurrency=1))
    grouped = GroupedLimiter(own, group)
    release = asyncio.Event()

    async def generation() -> None:
        async with grouped.admit(5):
            await release.wait()

    held = asyncio.create_task(generation())
    await asyncio.sleep(0)
    async with asyncio.timeout(1):
        async with grouped.admit_aside():
            pass
    release.set()
    await held
