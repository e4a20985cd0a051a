"""Markdown helpers of the reasoning-trace report: tables, numbers, small-sample marks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import polars as pl

from jobs.small_sample import footnote, marked

Column = tuple[str, str, Callable[[Any], str] | None]


def cell(value: Any) -> str:
    text = "–" if value is None or value == "" else str(value)
    return text.replace("|", "/").replace("\n", " ")


def pct(value: Any) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def ratio(value: Any) -> str:
    return "–" if value is None else f"{value:.2f}×"


def signed(value: Any) -> str:
    return "–" if value is None else f"{value:+.2f}"


def table(frame: pl.DataFrame, columns: Sequence[Column]) -> list[str]:
    lines = ["| " + " | ".join(title for title, _, _ in columns) + " |"]
    lines.append("|" + "---|" * len(columns))
    for row in frame.iter_rows(named=True):
        cells = [fmt(row[name]) if fmt else cell(row[name]) for _, name, fmt in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def mark_small(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """`column` as text with the small-sample mark where the row's `small_sample` is true."""
    texts = [
        marked(cell(value), small)
        for value, small in frame.select(column, "small_sample").iter_rows()
    ]
    return frame.with_columns(pl.Series(column, texts, dtype=pl.String))


def small_footnote(frame: pl.DataFrame, what: str, threshold: int) -> list[str]:
    flagged = "small_sample" in frame.columns and bool(frame["small_sample"].any())
    return ["", footnote(what, threshold)] if flagged else []


def names(values: Sequence[object]) -> str:
    return ", ".join(f"`{v}`" for v in values) or "none"
