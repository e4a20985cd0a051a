"""What a response cache holds per configuration and model: entries, bytes, and the USD the
cached replies stand for (`python -m pipeline cache list`).

The USD is what each request was billed when its reply was stored, as the request boundary
counted it (`spend_of`: the provider's own charge where the reply stated one, else its cost at
that configuration's prices then, an upper estimate for a reply without usage). Nothing is
priced again here, so no price catalog is read and none can be stale: the cache keeps each
reply's bill. (A cache hit in a sweep is priced again at the configuration's current prices;
that is the run's `cost_usd`, a different question.) Where the bill is not known, the entry
is counted as `unpriced`, never as $0: a chat entry that holds no stored reply, or one stored
with neither usage nor a cost. Renderings (`template` entries) are free.

Entries written before they named their configuration are grouped under `origin` None
("unknown configuration"); so are records whose payload is no longer readable.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipeline.endpoints.usage import spend_of
from pipeline.sweep.boundary import reply_from_json
from pipeline.sweep.response_cache import CacheEntry, Origin, ResponseCache


@dataclass(frozen=True)
class OriginShare:
    """One configuration and model's part of a cache."""

    origin: Origin | None  # None: unknown configuration
    entries: int
    expired: int  # past the TTL, or no reply
    bytes: int  # of the stored payloads, as `CacheStats.bytes`
    usd: float  # what the priced chat entries were billed when stored
    estimated: int  # of those, replies without usage: their USD is an upper estimate
    unpriced: int  # chat entries whose bill is not known (not in `usd`)


@dataclass
class _Sums:
    entries: int = 0
    expired: int = 0
    bytes: int = 0
    usd: float = 0.0
    estimated: int = 0
    unpriced: int = 0


def census(cache: ResponseCache) -> list[OriginShare]:
    """Every indexed entry counted once, per origin; known origins sorted, unknown last."""
    sums: dict[Origin | None, _Sums] = {}
    for _key, where, entry in cache.entries():
        origin = entry.origin if entry is not None else None
        part = sums.setdefault(origin, _Sums())
        part.entries += 1
        part.expired += cache.expired(where, entry)
        part.bytes += where.length
        if entry is not None and entry.kind == "chat":
            _bill(part, entry)
    known = sorted(o for o in sums if o is not None)
    order: list[Origin | None] = [*known, *([None] if None in sums else [])]
    return [
        OriginShare(o, s.entries, s.expired, s.bytes, s.usd, s.estimated, s.unpriced)
        for o in order
        for s in (sums[o],)
    ]


def _bill(part: _Sums, entry: CacheEntry) -> None:
    reply = reply_from_json(entry.reply)
    if reply is None:
        part.unpriced += 1
        return
    spent = spend_of(reply)
    stated = reply.billed_usd is not None
    if not reply.usage.reported and not stated and spent == 0.0:
        part.unpriced += 1  # neither usage nor a cost was stored: the bill is unknown
        return
    part.usd += spent
    part.estimated += not reply.usage.reported and not stated
