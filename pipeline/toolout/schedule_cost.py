"""The oracle's cost of a schedule, in the work of the requests after its first change.

The oracle's search (oracle.py) prices a few hundred schedules per transcript, each of which
shows every scheduled output's deterministic block from its first exposure on. Such a
schedule never rewrites a block an earlier request sent, so its requests are the unscheduled
replay's, with one slot per scheduled output holding the compacted block instead of the
exact one: same block counts, same unchanged blocks, same times and output tokens. Hence:

- **No replay per schedule.** Two replays per transcript (nothing scheduled, everything
  eligible scheduled) give both blocks of every slot; a schedule is those slots chosen.
- **A shared past.** The bill of request k depends only on the outputs first shown at or
  before k. The search changes one output at a time, in transcript order, so consecutive
  schedules share their requests up to the first output on which they differ. The state
  (`RunningAccount`) is kept at that request; each schedule forks it and bills only the
  requests from there. A schedule that differs earlier starts again from request 0.
- **The same number.** Every request is billed by the same code, in the same order, and the
  cost is `sum` over the same per-request floats in request order, as `SessionCost.cost_usd`
  sums them: equal to a full replay and account, bit for bit (tests/toolout/
  test_schedule_cost.py checks it on the shipped corpus under every cache model).

A schedule that shows an output from a later request than its first exposure (a rewrite;
the search never tries one) is priced by the full replay.
Pure: no I/O.
"""

from __future__ import annotations

from pipeline.toolout.accounting import RunningAccount, account_incremental
from pipeline.toolout.cache_models import CacheModel
from pipeline.toolout.ledger import Keyed
from pipeline.toolout.oracle import Schedule, ScheduledPolicy, eligible_outputs
from pipeline.toolout.replay import Estimate, replay
from pipeline.toolout.transcript import Transcript


def replayed_cost(
    transcript: Transcript,
    schedule: Schedule,
    cache_model: CacheModel,
    model: str,
    *,
    think_time_s: float,
    estimate: Estimate,
) -> float:
    """The cost of a schedule the plain way: replayed, then accounted from its first request
    (the search's cost before `ScheduleCost`, and its fallback)."""
    requests = replay(transcript, ScheduledPolicy(schedule), estimate)
    return account_incremental(requests, cache_model, model, think_time_s=think_time_s).cost_usd


class ScheduleCost:
    """`cost(schedule)` of one transcript under one cache model and priced model."""

    def __init__(
        self,
        transcript: Transcript,
        cache_model: CacheModel,
        model: str,
        *,
        think_time_s: float,
        estimate: Estimate,
    ) -> None:
        self.transcript = transcript
        self.estimate = estimate
        self.first = dict(eligible_outputs(transcript))
        self.requests = replay(transcript, ScheduledPolicy({}), estimate)
        compacted = replay(transcript, ScheduledPolicy(self.first), estimate)
        self.pricing = (cache_model, model, think_time_s)
        last_exact = self.requests[-1].slots if self.requests else ()
        last_compacted = compacted[-1].slots if compacted else ()
        self.slot = {
            b.output_index: i for i, b in enumerate(last_compacted) if b.output_index is not None
        }
        # (exact, compacted) block of each eligible output's slot
        self.blocks = {
            o: (last_exact[self.slot[o]], last_compacted[self.slot[o]]) for o in self.first
        }
        self.slots: list[Keyed] = list(last_exact)  # the blocks of the schedule last priced
        self.shown: frozenset[int] = frozenset()  # its scheduled outputs
        self._restart()

    def _restart(self) -> None:
        cache_model, model, think_time_s = self.pricing
        self.account = RunningAccount(cache_model, model, self.requests, think_time_s)
        self.cursor = 0  # the requests before it are billed in `account` and `costs`
        self.costs: list[float] = []
        self.settled: frozenset[int] = frozenset()  # scheduled outputs first shown before it

    def __call__(self, schedule: Schedule) -> float:
        first = self.first
        if any(o not in first or start > first[o] for o, start in schedule.items()):
            cache_model, model, think_time_s = self.pricing
            return replayed_cost(
                self.transcript, schedule, cache_model, model,
                think_time_s=think_time_s, estimate=self.estimate,
            )  # fmt: skip
        chosen = frozenset(schedule)
        cursor = self.cursor
        if frozenset(o for o in chosen if first[o] < cursor) != self.settled:
            self._restart()  # it differs before the kept request: bill from the start
            cursor = 0
        changed = chosen ^ self.shown
        for o in changed:
            exact, compacted = self.blocks[o]
            self.slots[self.slot[o]] = compacted if o in chosen else exact
        self.shown = chosen
        # keep the state at the first request where this schedule differs from the last one
        # (the search's next schedule differs from this one there or later)
        requests, slots, account = self.requests, self.slots, self.account
        end = len(requests)
        target = max(cursor, min((first[o] for o in changed), default=end))
        for i in range(cursor, target):
            self.costs.append(account.usd(i, requests[i], slots))
        self.cursor = target
        self.settled = frozenset(o for o in chosen if first[o] < target)
        future = account.fork()
        tail = [future.usd(i, requests[i], slots) for i in range(target, end)]
        return sum([*self.costs, *tail])  # as SessionCost.cost_usd sums: in request order
