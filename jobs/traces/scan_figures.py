"""The scan's figures: trace lengths on a log axis, and the quality shares per length band.

Both take the scan's per-trace records as a Polars frame (`chars`, `band`, the three quality
booleans) so the sweep's report and `traces scan --figures DIR` draw the same pictures; both
state their n and band edges, and go through `jobs.figures_common.save_figure`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from pipeline.traces.scan import QUALITIES

SCAN_SCHEMA = {
    "id": pl.String,
    "session": pl.String,
    "source": pl.String,
    "chars": pl.Int64,
    "bytes": pl.Int64,
    "band": pl.String,
    "self_correction": pl.Boolean,
    "hedging": pl.Boolean,
    "repetition": pl.Boolean,
}


def length_histogram(records: pl.DataFrame, edges: Sequence[int]) -> Figure:
    """Trace lengths in characters, log-spaced bins on a log x axis, band edges dashed."""
    figure = Figure(figsize=(6.4, 3.6))
    axes = figure.add_subplot()
    lengths = np.asarray(records["chars"].to_list() or [1], dtype=float)
    top = max(float(lengths.max()), float(max(edges)) * 1.5)
    bins = [float(b) for b in np.logspace(0, np.log10(top), 40)]
    axes.hist(lengths if records.height else [], bins=bins, color="#4c72b0")
    axes.set_xscale("log")
    for edge in edges:
        axes.axvline(edge, color="0.4", linestyle="--", linewidth=0.8)
        axes.annotate(f"{edge:,}", (edge, 1), xycoords=("data", "axes fraction"),
                      fontsize=6, ha="left", va="top")  # fmt: skip
    axes.set_xlabel("trace length (characters, log scale)")
    axes.set_ylabel("traces")
    axes.set_title(f"Reasoning-trace lengths (n = {records.height})", fontsize=9)
    return figure


def _mean(column: pl.Series) -> float:
    return sum(bool(v) for v in column.to_list()) / column.len() if column.len() else 0.0


def quality_by_band(records: pl.DataFrame, bands: Sequence[str]) -> Figure:
    """Per band, the share of traces each heuristic detector flags (n above each group)."""
    figure = Figure(figsize=(6.4, 3.6))
    axes = figure.add_subplot()
    width = 0.8 / len(QUALITIES)
    x = np.arange(len(bands))
    counts = [records.filter(pl.col("band") == b).height for b in bands]
    for i, name in enumerate(QUALITIES):
        shares = [
            _mean(records.filter(pl.col("band") == b)[name]) if n else 0.0
            for b, n in zip(bands, counts, strict=True)
        ]
        axes.bar(x + (i - 1) * width, shares, width, label=name.replace("_", "-"))
    for xi, n in zip(x, counts, strict=True):
        axes.annotate(f"n={n}", (xi, 1.0), xycoords=("data", "axes fraction"), fontsize=6,
                      ha="center", va="bottom")  # fmt: skip
    axes.set_xticks(x, list(bands))
    axes.set_ylim(0, 1)
    axes.set_ylabel("share of traces (heuristic)")
    axes.set_xlabel("length band (characters)")
    axes.legend(fontsize=7)
    axes.set_title("Trace quality per length band (pattern heuristics)", fontsize=9, pad=14)
    return figure
