"""The bill of one attempt: what its requests used and cost, counted at the request boundary.

Every study's rows get these columns from here (pipeline/sweep/boundary.py counts each
request as it passes), so no study computes them and none can forget one. Definitions:

- `requests`: every request the unit made, failed ones and cache hits included;
- `prompt_tokens`, `completion_tokens`: sums over answered requests; None when any answered
  request did not report its count, or none was answered (a partial sum would read as a
  measurement);
- `cached_tokens`, `cache_write_tokens`, `reasoning_tokens`: the provider's reported
  prompt-cache reads and writes and reasoning tokens, summed; None when no answered request
  reported them;
- `cost_usd`: the replies' cost at the configuration's prices (an upper estimate for a reply
  without usage), a cache hit at its original cost, so the science does not change with where
  a reply came from or which provider reported a charge;
- `billed_usd`: what the providers said they charged, summed over the paid replies that said
  so; None when none did;
- `spent_usd`, `paid_requests`: what this session paid and sent (hits are free): budgets count
  these. A reply's spend is its billed charge where it states one, else its `cost_usd`
  (`spend_of`): the money is the provider's figure whenever the provider gives one;
- `usage_unreported`: answered requests whose reply lacked usage (their cost is an estimate);
- `cache_hits`: replies served from the response cache;
- `steps`: answered requests of the runner's step purpose (the progress display's steps).
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.chat.messages import ChatResponse
from pipeline.endpoints.usage import spend_of

__all__ = ["Bill", "BillCounter", "spend_of"]


@dataclass(frozen=True)
class Bill:
    requests: int = 0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = 0
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float = 0.0
    billed_usd: float | None = None
    spent_usd: float = 0.0
    usage_unreported: int = 0
    paid_requests: int = 0
    cache_hits: int = 0
    steps: int = 0
    simulated: bool = False  # a reply identified itself as foldsweep's simulator


@dataclass(slots=True)
class BillCounter:
    """The running bill of one attempt (mutable; one per attempt, one coroutine at a time)."""

    requests: int = 0
    answered: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_unreported: bool = False
    completion_unreported: bool = False
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float = 0.0
    billed_usd: float | None = None
    spent_usd: float = 0.0
    usage_unreported: int = 0
    paid_requests: int = 0
    cache_hits: int = 0
    steps: int = 0
    simulated: bool = False

    def answer(self, response: ChatResponse, *, hit: bool, step: bool) -> None:
        """Count one answered chat request."""
        self.answered += 1
        usage = response.usage
        if usage.prompt_tokens is None:
            self.prompt_unreported = True
        else:
            self.prompt_tokens += usage.prompt_tokens
        if usage.completion_tokens is None:
            self.completion_unreported = True
        else:
            self.completion_tokens += usage.completion_tokens
        if usage.cached_tokens is not None:
            self.cached_tokens = (self.cached_tokens or 0) + usage.cached_tokens
        if usage.cache_write_tokens is not None:
            self.cache_write_tokens = (self.cache_write_tokens or 0) + usage.cache_write_tokens
        if usage.reasoning_tokens is not None:
            self.reasoning_tokens = (self.reasoning_tokens or 0) + usage.reasoning_tokens
        self.usage_unreported += not usage.reported
        self.cost_usd += response.cost_usd
        if hit:
            self.cache_hits += 1
        else:
            self.spent_usd += spend_of(response)
            if response.billed_usd is not None:
                self.billed_usd = (self.billed_usd or 0.0) + response.billed_usd
        self.steps += step
        self.simulated = self.simulated or response.simulated

    def bill(self) -> Bill:
        answered = self.answered > 0
        return Bill(
            requests=self.requests,
            prompt_tokens=self.prompt_tokens if answered and not self.prompt_unreported else None,
            completion_tokens=(
                self.completion_tokens if answered and not self.completion_unreported else None
            ),
            cached_tokens=self.cached_tokens,
            cache_write_tokens=self.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens,
            cost_usd=self.cost_usd,
            billed_usd=self.billed_usd,
            spent_usd=self.spent_usd,
            usage_unreported=self.usage_unreported,
            paid_requests=self.paid_requests,
            cache_hits=self.cache_hits,
            steps=self.steps,
            simulated=self.simulated,
        )
