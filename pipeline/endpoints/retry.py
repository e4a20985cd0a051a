"""The request-level retry policy: infrastructure faults only, jittered backoff, Retry-After.

Built once per endpoint by `build_retry`, with `sleep` and `rng` injectable so tests record the
waits instead of sleeping. Decisions the paper leaves open:

- Only `InfrastructureFault` is retried. `RequestRejected` and anything else (a bug) propagate on
  the first attempt; model behaviour never reaches here because it is returned as data.
- Backoff before retry n (n = 1, 2, ...) is "equal jitter": base = min(max_wait_s,
  initial_wait_s * 2**(n-1)), wait = base/2 + uniform(0, base/2). Half the base is a floor, so
  a burst of failures never retries instantly; the random half spreads concurrent retriers.
- A server's Retry-After is honoured: the wait is at least retry_after, but never more than
  RETRY_AFTER_CEILING_S (or max_wait_s if larger). A server asking for an hour should cost the
  unit an attempt, not stall an actor for an hour.
- After `request_attempts` attempts the last InfrastructureFault itself is re-raised (never
  tenacity.RetryError), so callers and the validity rule see the real fault type.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import tenacity

from pipeline.chat.errors import InfrastructureFault
from pipeline.config.schema import RetryConfig

T = TypeVar("T")

RETRY_AFTER_CEILING_S = 120.0

Sleep = Callable[[float], Awaitable[None]]
OnRetry = Callable[["RetryNotice"], None]


@dataclass(frozen=True)
class RetryNotice:
    """What `on_retry` hears before each backoff sleep (for the event log and progress)."""

    attempt: int  # the attempt that just failed, 1-based
    fault: InfrastructureFault
    wait_s: float


def backoff_wait(
    cfg: RetryConfig, failed_attempt: int, retry_after: float | None, rng: random.Random
) -> float:
    """Seconds to wait after `failed_attempt` failed (pure; see the module docstring)."""
    base = min(cfg.max_wait_s, cfg.initial_wait_s * 2.0 ** (failed_attempt - 1))
    wait = base / 2.0 + rng.uniform(0.0, base / 2.0)
    if retry_after is not None:
        ceiling = max(RETRY_AFTER_CEILING_S, cfg.max_wait_s)
        wait = max(wait, min(retry_after, ceiling))
    return wait


class RetryPolicy:
    """Runs an attempt function under the policy; one instance per endpoint (actor-owned)."""

    def __init__(
        self,
        cfg: RetryConfig,
        *,
        sleep: Sleep = asyncio.sleep,
        rng: random.Random | None = None,
        on_retry: OnRetry | None = None,
    ) -> None:
        if cfg.request_attempts < 1:
            raise ValueError("retry.request_attempts must be at least 1")
        self.cfg = cfg
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()  # unseeded: spread retriers
        self._on_retry = on_retry

    def _wait(self, state: tenacity.RetryCallState, done: int) -> float:
        fault = _fault_of(state)
        return backoff_wait(self.cfg, done + state.attempt_number, fault.retry_after, self._rng)

    def _before_sleep(self, state: tenacity.RetryCallState, done: int) -> None:
        if self._on_retry is not None:
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            notice = RetryNotice(done + state.attempt_number, _fault_of(state), wait)
            self._on_retry(notice)

    def _retrying(self, done: int) -> tenacity.AsyncRetrying:
        """Tenacity for attempts done+1 .. request_attempts (attempt numbers stay global)."""
        return tenacity.AsyncRetrying(
            retry=tenacity.retry_if_exception_type(InfrastructureFault),
            stop=tenacity.stop_after_attempt(self.cfg.request_attempts - done),
            wait=lambda state: self._wait(state, done),
            sleep=self._sleep,
            before_sleep=lambda state: self._before_sleep(state, done),
            reraise=True,
        )

    async def call(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Await `attempt()` until it succeeds, fails non-retryably, or attempts run out.

        The first attempt runs without tenacity (decision, docs/benchmarks.md: tenacity's
        per-call set-up cost about as much CPU as the HTTP exchange itself under sweep load);
        tenacity takes over from the second attempt, with the same waits and notices.
        """
        try:
            return await attempt()
        except InfrastructureFault as fault:
            if self.cfg.request_attempts == 1:
                raise
            first = fault
        wait = backoff_wait(self.cfg, 1, first.retry_after, self._rng)
        if self._on_retry is not None:
            self._on_retry(RetryNotice(1, first, wait))
        await self._sleep(wait)
        result: T = await self._retrying(done=1)(attempt)
        return result


def _fault_of(state: tenacity.RetryCallState) -> InfrastructureFault:
    exc = state.outcome.exception() if state.outcome is not None else None
    if not isinstance(exc, InfrastructureFault):  # the retry predicate guarantees this
        raise TypeError(f"retry wait asked about a non-infrastructure outcome: {exc!r}")
    return exc


def build_retry(
    cfg: RetryConfig,
    *,
    sleep: Sleep = asyncio.sleep,
    rng: random.Random | None = None,
    on_retry: OnRetry | None = None,
) -> RetryPolicy:
    """The one factory for the request-level retry policy (see the module docstring)."""
    return RetryPolicy(cfg, sleep=sleep, rng=rng, on_retry=on_retry)
