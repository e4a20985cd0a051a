"""The request-level retry policy, with an injected sleep: no test sleeps for real."""

from __future__ import annotations

import random

import pytest

from pipeline.chat.errors import (
    EndpointError,
    HttpStatusFault,
    MalformedEnvelope,
    RequestRejected,
    TransportFault,
)
from pipeline.config.schema import RetryConfig
from pipeline.endpoints.retry import RETRY_AFTER_CEILING_S, RetryNotice, backoff_wait, build_retry

from .conftest import RecordingSleep


class Script:
    """An attempt function that raises the scripted errors in turn, then returns "done"."""

    def __init__(self, *errors: EndpointError | Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "done"


CFG = RetryConfig(request_attempts=4, initial_wait_s=0.5, max_wait_s=8.0)


async def test_429_with_retry_after_waits_that_long() -> None:
    sleep = RecordingSleep()
    policy = build_retry(CFG, sleep=sleep, rng=random.Random(1))
    attempt = Script(HttpStatusFault(429, "slow down", retry_after=17.0))
    assert await policy.call(attempt) == "done"
    assert sleep.waits == [pytest.approx(17.0)]


async def test_retry_after_beyond_the_ceiling_is_capped() -> None:
    sleep = RecordingSleep()
    policy = build_retry(CFG, sleep=sleep, rng=random.Random(1))
    await policy.call(Script(HttpStatusFault(503, "later", retry_after=3600.0)))
    assert sleep.waits == [pytest.approx(RETRY_AFTER_CEILING_S)]


async def test_short_retry_after_does_not_undercut_the_backoff_floor() -> None:
    wait = backoff_wait(CFG, failed_attempt=3, retry_after=0.0, rng=random.Random(1))
    assert wait >= 2.0 / 2  # base 2.0 at attempt 3, floor is half of it


async def test_request_rejected_is_never_retried() -> None:
    sleep = RecordingSleep()
    policy = build_retry(CFG, sleep=sleep)
    attempt = Script(RequestRejected(500, "json_schema unsupported", reason="schema_unsupported"))
    with pytest.raises(RequestRejected):
        await policy.call(attempt)
    assert attempt.calls == 1
    assert sleep.waits == []


async def test_a_bug_is_never_retried() -> None:
    policy = build_retry(CFG, sleep=RecordingSleep())
    attempt = Script(KeyError("bug"))
    with pytest.raises(KeyError):
        await policy.call(attempt)
    assert attempt.calls == 1


async def test_attempts_are_bounded_and_the_last_fault_is_reraised() -> None:
    sleep = RecordingSleep()
    policy = build_retry(CFG, sleep=sleep)
    faults = [TransportFault(f"refused {i}") for i in range(10)]
    attempt = Script(*faults)
    with pytest.raises(TransportFault) as raised:
        await policy.call(attempt)
    assert attempt.calls == CFG.request_attempts
    assert len(sleep.waits) == CFG.request_attempts - 1
    assert raised.value is faults[CFG.request_attempts - 1]


async def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    cfg = RetryConfig(request_attempts=8, initial_wait_s=1.0, max_wait_s=8.0)
    sleep = RecordingSleep()
    policy = build_retry(cfg, sleep=sleep, rng=random.Random(3))
    with pytest.raises(MalformedEnvelope):
        await policy.call(Script(*[MalformedEnvelope("cut")] * 8))
    bases = [1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0]
    assert len(sleep.waits) == len(bases)
    for wait, base in zip(sleep.waits, bases, strict=True):
        assert base / 2 <= wait <= base


async def test_jitter_differs_between_retriers() -> None:
    waits = []
    for seed in (1, 2):
        sleep = RecordingSleep()
        await build_retry(CFG, sleep=sleep, rng=random.Random(seed)).call(
            Script(TransportFault("x"))
        )
        waits.append(sleep.waits[0])
    assert waits[0] != waits[1]


async def test_on_retry_hears_each_failed_attempt_and_its_wait() -> None:
    notices: list[RetryNotice] = []
    sleep = RecordingSleep()
    policy = build_retry(CFG, sleep=sleep, on_retry=notices.append)
    first, second = TransportFault("a"), HttpStatusFault(429, "b", retry_after=5.0)
    await policy.call(Script(first, second))
    assert [(n.attempt, n.fault) for n in notices] == [(1, first), (2, second)]
    assert [n.wait_s for n in notices] == sleep.waits


def test_zero_attempts_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="request_attempts"):
        build_retry(RetryConfig(request_attempts=0))
