"""Text search over the units table: every text column a study's units have, read-only, bounded.

The columns are found, not named: every string column of the units frame (a study's answers,
final texts and error details among them). The search ignores case and reads the units in
blocks of CHUNK rows; it stops at `limit` matches or once `seconds` have passed, and says so,
so one search over a large run never holds the server. Each match says where it was found,
with a few characters either side (the evidence, not just a yes).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

LIMIT = 200
SECONDS = 2.0
CHUNK = 2_000
AROUND = 30  # characters shown either side of a match
FOUND = "found in"  # the column a search adds to the table


@dataclass(frozen=True)
class Found:
    """The matching units (the frame's rows, in order, with a FOUND column), and why the search
    stopped before the end of the table (None: it read every unit)."""

    frame: pl.DataFrame
    stopped: str | None


def text_columns(frame: pl.DataFrame) -> list[str]:
    return [name for name, dtype in frame.schema.items() if dtype == pl.String]


def search(
    frame: pl.DataFrame,
    needle: str,
    *,
    limit: int = LIMIT,
    seconds: float = SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> Found:
    """The units whose text columns contain `needle` (ignoring case), at most `limit` of them."""
    columns = text_columns(frame)
    lowered = needle.lower()
    hit = pl.any_horizontal(
        [pl.col(c).str.to_lowercase().str.contains(lowered, literal=True) for c in columns]
    ).fill_null(False)
    start, kept, read = clock(), [], 0
    stopped = None
    while read < frame.height:
        if clock() - start > seconds:
            stopped = f"stopped after {seconds:g} s, having read {read} of {frame.height} units"
            break
        block = frame.slice(read, CHUNK)
        read += block.height
        kept.append(block.filter(hit) if columns else block.clear())
        if sum(f.height for f in kept) >= limit:
            break
    matched = pl.concat(kept) if kept else frame.clear()
    if stopped is None and (matched.height > limit or read < frame.height):
        stopped = f"stopped at {limit} matches, having read {read} of {frame.height} units"
    matched = matched.head(limit)
    where = [_where(row, columns, lowered) for row in matched.select(columns).iter_rows()]
    return Found(matched.with_columns(pl.Series(FOUND, where, dtype=pl.String)), stopped)


def _where(values: tuple[object, ...], columns: list[str], lowered: str) -> str:
    """`column: …text around the match…` for the first column that has it; the others' names."""
    pairs = zip(columns, values, strict=True)
    names = [c for c, v in pairs if isinstance(v, str) and lowered in v.lower()]
    if not names:  # polars and Python lower-case a few characters differently
        return ", ".join(columns)
    first = str(values[columns.index(names[0])])
    at = first.lower().index(lowered)
    left, right = max(0, at - AROUND), min(len(first), at + len(lowered) + AROUND)
    snippet = ("…" if left else "") + first[left:right] + ("…" if right < len(first) else "")
    others = f" (also {', '.join(names[1:])})" if len(names) > 1 else ""
    return f"{names[0]}: {' '.join(snippet.split())}{others}"
