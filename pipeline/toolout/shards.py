"""Shards of the corpus: consecutive transcripts, one offline unit each (issue 20, P8b).

A unit that replays the whole corpus holds the whole corpus's records (its turns and, for a
model policy, a decision per output per request) until the engine writes them, so its memory
grows with the corpus: about 2 GiB in an actor at 200 generated transcripts. Split into shards
of at most `study.requests_per_unit` requests, a unit's memory is bounded by its shard. A
shard is never empty and never splits a transcript: one longer than the budget is a shard of
its own. The budget counts requests (assistant turns) because a unit's records grow with its
requests, not with its transcripts. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

Shard = tuple[int, int]  # [start, stop) in the corpus's transcript order


def plan_shards(requests: Sequence[int], budget: int) -> tuple[Shard, ...]:
    """Consecutive shards of the transcripts whose request counts are `requests`, each within
    `budget` requests unless one transcript alone exceeds it."""
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    shards: list[Shard] = []
    start, held = 0, 0
    for index, count in enumerate(requests):
        if index > start and held + count > budget:
            shards.append((start, index))
            start, held = index, 0
        held += count
    if len(requests) > start:
        shards.append((start, len(requests)))
    return tuple(shards)
