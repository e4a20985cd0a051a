"""A replayed transcript's requests in time: seconds since its first request and the gap
before each, so a TTL miss shows beside the wait that caused it (issue 35).

`turns.time_s` is the transcript's own clock (epoch seconds where it was recorded, else
think time from 0), which the page printed as `1.746e+09` on every row: the differences are
what a reader needs, and what the cache models' TTLs are measured against.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Timing:
    """One request's place in time; None where the request has no time."""

    since_first_s: float | None
    gap_s: float | None  # since the previous request with a time; None for the first


def timings(times: Sequence[float | None]) -> list[Timing]:
    """Relative times of requests in order; a request without a time gets none, and the next
    one's gap is measured from the last request that had one."""
    first = next((t for t in times if t is not None), None)
    out: list[Timing] = []
    previous: float | None = None
    for t in times:
        if t is None or first is None:
            out.append(Timing(None, None))
            continue
        out.append(Timing(t - first, None if previous is None else t - previous))
        previous = t
    return out


def shown_seconds(seconds: float | None, sign: str = "") -> str:
    """`+312.4 s` style: one decimal under 100 s, whole seconds above."""
    if seconds is None:
        return "no time recorded"
    return sign + (f"{seconds:.1f} s" if abs(seconds) < 100 else f"{seconds:,.0f} s")
