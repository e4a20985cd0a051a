"""Rate-limit fidelity against the simulated server that enforces the limit.

The client paces 600 requests/min; the server enforces 11 requests per 1-second sliding
window, stricter than the 60-second window of the configured limit. An evenly paced client
never trips it; a bursting one would at once. Marked slow: it runs for about six seconds.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from pipeline.carrier.sim_model import CarrierSimModel, profiles_for
from pipeline.chat.messages import ChatMessage, ChatRequest
from pipeline.config import EndpointConfig, Limits, RetryConfig, TimeoutConfig
from pipeline.endpoints.client import open_client
from pipeline.endpoints.sim import SimOptions, SimServer

pytestmark = pytest.mark.slow


async def test_paced_client_never_draws_a_429_and_achieves_the_configured_rate() -> None:
    profile = profiles_for(1, 7)[0]
    server = SimServer(CarrierSimModel(profile), SimOptions(rpm_limit=660, rpm_window_s=1.0))
    base_url = await server.start()
    endpoint = EndpointConfig(
        config_id=profile.config_id,
        model=profile.served_model,
        family="sim",
        base_url=base_url,
        limits=Limits(rpm=600, concurrency=32),
    )
    request = ChatRequest(messages=(ChatMessage("user", "hello"),), max_tokens=8)
    try:
        async with open_client(
            endpoint, retry=RetryConfig(request_attempts=1), timeouts=TimeoutConfig()
        ) as client:
            started = time.monotonic()
            await asyncio.gather(*(client.complete(request) for _ in range(60)))
            elapsed = time.monotonic() - started
    finally:
        await server.stop()
    counters = server.counters()
    assert counters.rate_limited_429 == 0
    assert counters.served_ok == 60
    # 60 requests at 10/s: the first is immediate, so ~5.9 s; within 2% of the configured rate
    assert 59 / elapsed == pytest.approx(10.0, rel=0.02)
