"""The requests every report shows: one table from the engine's `requests` table, every study.

Every request of every study is recorded by the engine's request boundary, so latency, cost
and cache hits are summarised here once, not per study. Per configuration: requests made,
sent, answered from the response cache, failed, paid (`spent_usd`) and the replies' cost,
and latency quantiles of the requests that were sent and answered. A run that sent nothing
(an offline replay) has no such table and gets no section.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipeline.store import part_paths, scan
from pipeline.store.layout import layout_for

ENGINE_TABLES = layout_for((), ())  # the requests table's schema is the engine's, any study


def request_summary(run_dir: Path) -> pl.DataFrame | None:
    """One row per configuration; None when the run recorded no request."""
    if not part_paths(run_dir, "requests", ENGINE_TABLES):
        return None
    sent = ~pl.col("cache_hit")
    answered = sent & pl.col("error").is_null()
    return (
        scan(run_dir, "requests", ENGINE_TABLES)
        .group_by("config_id")
        .agg(
            pl.len().alias("requests"),
            sent.sum().alias("sent"),
            pl.col("cache_hit").sum().alias("cache_hits"),
            pl.col("error").is_not_null().sum().alias("failed"),
            pl.col("spent_usd").sum().alias("spent_usd"),
            pl.col("cost_usd").sum().alias("cost_usd"),
            pl.col("latency_s").filter(answered).quantile(0.5).alias("latency_p50_s"),
            pl.col("latency_s").filter(answered).quantile(0.95).alias("latency_p95_s"),
        )
        .sort("config_id")
        .collect()
    )


def request_lines(run_dir: Path) -> list[str]:
    """The report's "Requests" section (empty when nothing was sent)."""
    summary = request_summary(run_dir)
    if summary is None or summary.height == 0:
        return []
    lines = [
        "## Requests",
        "",
        "Every request of the run, as the engine recorded it (`requests` table). A cache hit "
        "is a reply an earlier session paid for: it keeps its cost and is paid nothing again.",
        "",
        "| configuration | requests | sent | cache hits | failed | paid USD | cost USD "
        "| latency p50 s | latency p95 s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary.iter_rows(named=True):
        lines.append(
            f"| {r['config_id']} | {r['requests']} | {r['sent']} | {r['cache_hits']} "
            f"| {r['failed']} | {r['spent_usd']:.4f} | {r['cost_usd']:.4f} "
            f"| {_seconds(r['latency_p50_s'])} | {_seconds(r['latency_p95_s'])} |"
        )
    return [*lines, ""]


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"
