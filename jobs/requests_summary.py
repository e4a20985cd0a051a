"""The requests every report shows: one table from the engine's `requests` table, every study.

Every request of every study is recorded by the engine's request boundary, so latency, cost
and cache hits are summarised here once, not per study. A run that sent nothing (an offline
replay) has no such table and gets no section.

The table has one row per HTTP request actually sent (`attempt_in_request` 0, then 1, 2 ...
for each retry), one per cache hit. Per configuration:
- `requests`: the requests the study made (attempt 0), cache hits included; `sent`: HTTP
  requests sent (every attempt that was not a cache hit); `retries`: the attempts after the
  first; `cache_hits`; `failed`: requests that ended in an error after their retries (a
  request is answered, a cache hit, or failed: requests - cache hits - answered attempts);
- `spent_usd` (paid), `cost_usd` (every reply's cost, a cache hit at its original cost),
  `estimated_usd` (the paid replies at the panel's prices: `cost_usd` of every request that
  was not a cache hit), `billed_usd` (what the providers said they charged; null when no reply
  carried a charge) with `billed_replies` of `paid_replies` (answered chat requests sent);
- `no_usage`: replies whose usage was not reported (`usage_reported` false), priced at an
  upper estimate;
- latency quantiles of the attempts that were sent and answered.

Decisions:
- Stale prices are judged over the paid replies that carried a charge *and* reported their
  usage (`compared_*`), not only where every reply carried one: OpenRouter states a charge on
  each reply but another provider of the same panel may not, and one reply without a charge
  must not hide a price change. A reply without usage is left out of both sums: its estimate
  is an upper bound, not a price. The rule itself (more than 5% off, relative to billed) is
  pipeline/stale_prices.py, the one the probe applies too.
- A run directory from before issue 31 has no `attempt_in_request`, `usage_reported` or
  `billed_usd` (the store reads nulls): each of its rows is one request, and `retries`,
  `no_usage` and the billed columns are null ("—"), never a 0 that claims a count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from pipeline.stale_prices import stale_prices_line
from pipeline.store import part_paths, scan
from pipeline.store.layout import layout_for

ENGINE_TABLES = layout_for((), ())  # the requests table's schema is the engine's, any study
DASH = "—"


def request_summary(run_dir: Path) -> pl.DataFrame | None:
    """One row per configuration; None when the run recorded no request."""
    if not part_paths(run_dir, "requests", ENGINE_TABLES):
        return None
    hit = pl.col("cache_hit")
    sent = ~hit
    answered = sent & pl.col("error").is_null()
    attempt = pl.col("attempt_in_request")
    first = attempt.fill_null(0) == 0
    reply = answered & (pl.col("kind") == "chat")
    billed = reply & pl.col("billed_usd").is_not_null()
    compared = billed & pl.col("usage_reported").fill_null(False)
    return (
        scan(run_dir, "requests", ENGINE_TABLES)
        .group_by("config_id")
        .agg(
            first.sum().cast(pl.Int64).alias("requests"),
            sent.sum().cast(pl.Int64).alias("sent"),
            (attempt > 0).sum().cast(pl.Int64).alias("retries"),
            attempt.is_not_null().any().alias("attempts_recorded"),
            hit.sum().cast(pl.Int64).alias("cache_hits"),
            (first.sum().cast(pl.Int64) - hit.sum() - answered.sum()).alias("failed"),
            pl.col("spent_usd").sum().alias("spent_usd"),
            pl.col("cost_usd").sum().alias("cost_usd"),
            pl.col("cost_usd").filter(sent).sum().alias("estimated_usd"),
            pl.col("billed_usd").filter(billed).sum().alias("billed_usd"),
            billed.sum().cast(pl.Int64).alias("billed_replies"),
            reply.sum().cast(pl.Int64).alias("paid_replies"),
            (~pl.col("usage_reported")).sum().cast(pl.Int64).alias("no_usage"),
            pl.col("usage_reported").is_not_null().any().alias("usage_recorded"),
            pl.col("billed_usd").filter(compared).sum().alias("compared_billed_usd"),
            pl.col("cost_usd").filter(compared).sum().alias("compared_estimated_usd"),
            compared.sum().cast(pl.Int64).alias("compared_replies"),
            pl.col("latency_s").filter(answered).quantile(0.5).alias("latency_p50_s"),
            pl.col("latency_s").filter(answered).quantile(0.95).alias("latency_p95_s"),
        )
        .with_columns(
            pl.when(pl.col("attempts_recorded")).then(pl.col("retries")).alias("retries"),
            pl.when(pl.col("usage_recorded")).then(pl.col("no_usage")).alias("no_usage"),
            pl.when(pl.col("billed_replies") > 0).then(pl.col("billed_usd")).alias("billed_usd"),
        )
        .drop("attempts_recorded", "usage_recorded")
        .sort("config_id")
        .collect()
    )


def stale_lines(summary: pl.DataFrame) -> list[str]:
    """One flag per configuration whose compared estimate is more than 5% off its charge."""
    lines = []
    for r in summary.iter_rows(named=True):
        if r["compared_replies"]:
            line = stale_prices_line(
                r["config_id"], r["compared_billed_usd"], r["compared_estimated_usd"]
            )
            if line is not None:
                lines.append(line)
    return lines


def request_lines(run_dir: Path) -> list[str]:
    """The report's "Requests" section (empty when nothing was sent)."""
    summary = request_summary(run_dir)
    if summary is None or summary.height == 0:
        return []
    lines = [
        "## Requests",
        "",
        "Every request of the run, as the engine recorded it (`requests` table). A cache hit "
        "is a reply an earlier session paid for: it keeps its cost and is paid nothing again. "
        "Sent counts HTTP requests, retries included; estimated is the paid replies at the "
        "panel's prices, billed what the provider said it charged (replies that carried a "
        "charge, of the paid replies).",
        "",
        "| configuration | requests | sent | retries | cache hits | failed | paid USD | cost USD "
        "| estimated USD | billed USD | no usage | latency p50 s | latency p95 s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary.iter_rows(named=True):
        lines.append(
            f"| {r['config_id']} | {r['requests']} | {r['sent']} | {_count(r['retries'])} "
            f"| {r['cache_hits']} | {r['failed']} | {r['spent_usd']:.4f} | {r['cost_usd']:.4f} "
            f"| {r['estimated_usd']:.4f} | {_billed(r)} | {_count(r['no_usage'])} "
            f"| {_seconds(r['latency_p50_s'])} | {_seconds(r['latency_p95_s'])} |"
        )
    lines.append("")
    if any(summary["no_usage"].fill_null(0) > 0):
        lines += [
            "No usage: replies that did not report their usage; their cost is an upper "
            'estimate (bytes / 3 per token, docs/engine.md "Spend"), not a measurement.',
            "",
        ]
    for line in stale_lines(summary):
        lines += [line, ""]
    return lines


def _billed(r: dict[str, Any]) -> str:
    if r["billed_usd"] is None:
        return DASH
    return f"{r['billed_usd']:.4f} ({r['billed_replies']} of {r['paid_replies']})"


def _count(value: int | None) -> str:
    return DASH if value is None else str(value)


def _seconds(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}"
