"""Length bands of reasoning traces, and a stratified sample drawn from them.

The seed stratified its 36 traces by length and reported fidelity per band without saying
where the edges fall. Ours are configurable; the default, in characters, is <1k, 1k-4k,
4k-16k, >16k (edges `[1000, 4000, 16000]`).

Decision: a band is half-open, `[lower, upper)`. An edge belongs to the band it opens: a trace
of exactly 1,000 characters is in `1k-4k`, one of 999 in `<1k`; 16,000 is in `>=16k`.

`stratified_sample(items, n_per_band, seed)` is deterministic for a seed: the candidates of each
band are ordered by id before `random.Random(seed)` draws, so input order does not matter. A
band with fewer than `n_per_band` items gives all it has; the result reports how many each band
had and how many were taken, so a thin band is visible instead of silently smaller.
"""

from __future__ import annotations

import itertools
import random
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from pipeline.config.strict import ConfigError

DEFAULT_EDGES: tuple[int, ...] = (1000, 4000, 16000)


def check_edges(edges: Sequence[int]) -> tuple[int, ...]:
    """The edges as a tuple; a ConfigError unless they are positive and strictly increasing."""
    values = tuple(edges)
    if not values:
        raise ConfigError("band edges are empty; give at least one, e.g. [1000, 4000, 16000]")
    for edge in values:
        if isinstance(edge, bool) or not isinstance(edge, int) or edge <= 0:
            raise ConfigError(f"band edge {edge!r} must be a positive whole number of characters")
    if any(b <= a for a, b in itertools.pairwise(values)):
        raise ConfigError(f"band edges {list(values)} must be strictly increasing")
    return values


def _short(chars: int) -> str:
    return f"{chars // 1000}k" if chars % 1000 == 0 else str(chars)


def labels(edges: Sequence[int] = DEFAULT_EDGES) -> tuple[str, ...]:
    """Band names, shortest first: `<1k`, `1k-4k`, `4k-16k`, `>=16k` for the default edges."""
    values = check_edges(edges)
    names = [f"<{_short(values[0])}"]
    names += [f"{_short(a)}-{_short(b)}" for a, b in itertools.pairwise(values)]
    names.append(f">={_short(values[-1])}")
    return tuple(names)


def band_index(chars: int, edges: Sequence[int] = DEFAULT_EDGES) -> int:
    """0 for the shortest band; an edge value falls in the band above it."""
    return bisect_right(check_edges(edges), chars)


def band_of(chars: int, edges: Sequence[int] = DEFAULT_EDGES) -> str:
    return labels(edges)[band_index(chars, edges)]


class Banded(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def text(self) -> str: ...


B = TypeVar("B", bound=Banded)


@dataclass(frozen=True)
class BandCount:
    band: str
    available: int
    taken: int


@dataclass(frozen=True)
class Sample(Generic[B]):
    """The drawn items, band by band (shortest first), and per band what was there."""

    items: tuple[B, ...]
    counts: tuple[BandCount, ...]
    n_per_band: int

    def short_bands(self) -> tuple[str, ...]:
        """Bands that had fewer items than were asked for."""
        return tuple(c.band for c in self.counts if c.available < self.n_per_band)


def stratified_sample(
    items: Sequence[B], n_per_band: int, seed: int, edges: Sequence[int] = DEFAULT_EDGES
) -> Sample[B]:
    """Up to `n_per_band` items from each band, the same ones for the same seed and items."""
    if n_per_band < 0:
        raise ConfigError(f"n_per_band must be at least 0, not {n_per_band}")
    names = labels(edges)
    by_band: list[list[B]] = [[] for _ in names]
    for item in items:
        by_band[band_index(len(item.text), edges)].append(item)
    rng = random.Random(seed)
    drawn: list[B] = []
    counts: list[BandCount] = []
    for name, members in zip(names, by_band, strict=True):
        members.sort(key=lambda item: item.id)
        chosen = rng.sample(members, min(n_per_band, len(members)))
        drawn.extend(sorted(chosen, key=lambda item: item.id))
        counts.append(BandCount(name, len(members), len(chosen)))
    return Sample(tuple(drawn), tuple(counts), n_per_band)
