"""The bloat scan of seed 002: how long are a user's reasoning traces, and where is the bloat?

The seed scanned 1,380 sessions (227,499 tool-call traces, 450 million characters): median
775 characters, p99 17,282, the largest over 255,000. `scan(items)` gives the same reading of
any traces (`TraceItem`s, as the corpus readers of `compression.items` make them) plus the
quality shares of `quality`. Pure. Decisions (docs/traces.md, "Reasoning traces: the scan"):

- Lengths are characters (as the seed's); `bytes` are UTF-8 bytes (reasoning per session).
- Percentiles are nearest-rank (the smallest length with at least p% of traces at or below
  it), so every reported length is a real trace's length.
- "Share above an edge" is the share of traces of at least that many characters, matching the
  bands (an edge belongs to the band above it).
- A trace's session is its id up to the last `/` (a SWE-agent or OpenHands file, one record of
  an OpenHands JSONL; a user JSONL's ids `session/turn` name their session; an id without `/`
  is its own file's session, `source:<file>`).
- Repeated texts are removed first (`compression.items.dedupe`) and counted.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from pipeline.traces.compression.bands import DEFAULT_EDGES, band_index, labels
from pipeline.traces.compression.items import TraceItem, dedupe
from pipeline.traces.scan.quality import quality

PERCENTILES = (50, 90, 99)
QUALITIES = ("self_correction", "hedging", "repetition")


@dataclass(frozen=True)
class TraceRecord:
    """One scanned trace, without its text."""

    id: str
    session: str
    source: str
    chars: int
    bytes: int
    band: str
    self_correction: bool
    hedging: bool
    repetition: bool


@dataclass(frozen=True)
class BandRow:
    band: str
    traces: int
    share: float
    self_correction: float | None
    hedging: float | None
    repetition: float | None


@dataclass(frozen=True)
class ScanResult:
    records: tuple[TraceRecord, ...]
    duplicates_removed: int
    edges: tuple[int, ...]

    @property
    def count(self) -> int:
        return len(self.records)

    @property
    def lengths(self) -> list[int]:
        return sorted(r.chars for r in self.records)

    def percentile(self, p: float) -> int | None:
        return nearest_rank(self.lengths, p)

    def share_at_least(self, edge: int) -> float | None:
        n = self.count
        return sum(r.chars >= edge for r in self.records) / n if n else None

    def quality_share(self, name: str) -> float | None:
        n = self.count
        return sum(bool(getattr(r, name)) for r in self.records) / n if n else None

    def sessions(self) -> dict[str, int]:
        """Session -> UTF-8 bytes of reasoning in it."""
        found: dict[str, int] = defaultdict(int)
        for r in self.records:
            found[r.session] += r.bytes
        return dict(sorted(found.items()))

    def by_band(self) -> list[BandRow]:
        rows = []
        for band in labels(self.edges):
            mine = [r for r in self.records if r.band == band]
            n = len(mine)

            def share(name: str, members: Sequence[TraceRecord] = mine) -> float | None:
                return (
                    sum(bool(getattr(r, name)) for r in members) / len(members) if members else None
                )

            rows.append(
                BandRow(
                    band,
                    n,
                    n / self.count if self.count else 0.0,
                    share("self_correction"),
                    share("hedging"),
                    share("repetition"),
                )
            )
        return rows

    def summary(self) -> dict[str, object]:
        """The scan as one JSON-able object (what `traces scan --json` prints)."""
        lengths = self.lengths
        per_session = list(self.sessions().values())
        return {
            "traces": self.count,
            "duplicates_removed": self.duplicates_removed,
            "sessions": len(per_session),
            "chars_total": sum(lengths),
            "bytes_total": sum(r.bytes for r in self.records),
            "median_chars": self.percentile(50),
            "p90_chars": self.percentile(90),
            "p99_chars": self.percentile(99),
            "max_chars": lengths[-1] if lengths else None,
            "share_at_least": {str(e): self.share_at_least(e) for e in self.edges},
            "bytes_per_session": {
                "median": statistics.median(per_session) if per_session else None,
                "mean": statistics.fmean(per_session) if per_session else None,
                "max": max(per_session) if per_session else None,
            },
            "quality": {name: self.quality_share(name) for name in QUALITIES},
            "by_band": [vars(row) for row in self.by_band()],
            "sources": dict(sorted(Counter(r.source for r in self.records).items())),
        }


def nearest_rank(sorted_values: Sequence[int], p: float) -> int | None:
    """The nearest-rank p-th percentile of already sorted values (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def session_of(item: TraceItem) -> str:
    head, sep, _ = item.id.rpartition("/")
    if sep:
        return head
    return f"{item.source}:{item.provenance.rsplit('#', 1)[0]}"


def scan(items: Iterable[TraceItem], edges: Sequence[int] = DEFAULT_EDGES) -> ScanResult:
    """Scan the traces (repeats removed first); see the module docstring."""
    kept, removed = dedupe(items)
    names = labels(edges)
    records = []
    for item in kept:
        q = quality(item.text)
        records.append(
            TraceRecord(
                id=item.id,
                session=session_of(item),
                source=item.source,
                chars=len(item.text),
                bytes=len(item.text.encode("utf-8")),
                band=names[band_index(len(item.text), edges)],
                self_correction=q.self_correction,
                hedging=q.hedging,
                repetition=q.repetition,
            )
        )
    return ScanResult(tuple(records), removed, tuple(edges))
