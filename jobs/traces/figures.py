"""The reasoning-trace report's figures: the fidelity–compression frontier and the visibility
heatmap. Both are matplotlib `Figure`s saved through `jobs.figures_common.save_figure`, which
marks a simulated run's SIMULATED; both state their n.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from jobs.small_sample import SMALL_SAMPLE_MARK
from jobs.traces.compression import ALL_BANDS
from jobs.traces.matrix import SHIPPED, USER
from pipeline.traces.visibility.shapes import STRUCTURES

PANELS_PER_ROW = 3  # a 20-configuration panel stays readable: 7 rows of 3
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def frontier(table: pl.DataFrame) -> Figure:
    """x median compression ratio (log), y median retention: one point per (arm, band), one
    panel per configuration; each arm's overall point is the large outlined marker."""
    configs = sorted(set(table["config_id"].to_list())) or ["(no compression units)"]
    bands = [b for b in dict.fromkeys(table["band"].to_list()) if b != ALL_BANDS]
    arms = sorted(set(table["arm"].to_list()))
    columns = min(len(configs), PANELS_PER_ROW)
    rows = -(-len(configs) // columns)
    figure = Figure(figsize=(6.5 * columns, 5.0 * rows), layout="constrained")
    grid = figure.subplots(rows, columns, squeeze=False).ravel()
    for spare in grid[len(configs) :]:
        spare.set_axis_off()
    axes_list = grid[: len(configs)]
    colours = {arm: f"C{i % 10}" for i, arm in enumerate(arms)}
    for axes, config_id in zip(axes_list, configs, strict=True):
        mine = table.filter(pl.col("config_id") == config_id)
        shown = missing = 0
        for index, row in enumerate(mine.iter_rows(named=True)):
            x, y = row["median_compression_chars"], row["median_retention"]
            if x is None or y is None or not x > 0:
                missing += 1
                continue
            shown += 1
            overall = row["band"] == ALL_BANDS
            marker = "*" if overall else _MARKERS[bands.index(row["band"]) % len(_MARKERS)]
            axes.scatter(
                [x],
                [y],
                s=160 if overall else 36,
                marker=marker,
                color=colours[row["arm"]],
                edgecolors="black" if overall else "none",
                zorder=3 if overall else 2,
            )
            mark = SMALL_SAMPLE_MARK if row["small_sample"] else ""
            # the band is the marker and the arm the colour, so a label needs only n
            label = f"{row['arm']} n={row['n']}" if overall else f"n={row['n']}"
            axes.annotate(
                label + mark,
                (x, y),
                fontsize=6,
                xytext=(4, 3 - 7 * (index % 3)),  # coinciding points: labels staggered
                textcoords="offset points",
            )
        for arm in arms:
            axes.scatter([], [], color=colours[arm], label=arm)
        for i, band in enumerate(bands):
            marker = _MARKERS[i % len(_MARKERS)]
            axes.scatter([], [], color="grey", marker=marker, label=f"band {band}")
        axes.scatter([], [], color="grey", marker="*", s=80, label="all bands")
        axes.set_xscale("log")
        axes.set_ylim(-0.05, 1.05)
        axes.set_xlabel("median compression ratio (trace chars / summary chars, log)")
        axes.set_ylabel("median fact retention (paths, line refs, identifiers, numbers)")
        note = f"; {missing} without a ratio or retention" if missing else ""
        axes.set_title(f"{config_id}: {shown} points, n per point = traces{note}", fontsize=8)
        if arms:
            axes.legend(
                fontsize=6, loc="lower left", title="colour: arm; marker: band", title_fontsize=6
            )
    figure.suptitle(
        f"Fidelity–compression frontier (n = {len(configs)} configurations × {len(arms)} arms "
        f"× {len(bands)} bands)",
        fontsize=9,
    )
    return figure


def _label(row: dict[str, object]) -> str:
    if row["source"] in (SHIPPED, USER):
        return f"{row['template']} ({row['source']})"
    return f"{row['config_id']} [{row['renderer']}]: {row['template']}"


def visibility_heatmap(cells: pl.DataFrame) -> Figure:
    """Rows templates (shipped, then each endpoint's per renderer), columns the structures,
    cell = share of secrets in the rendered prompt (n in the cell; blank: nothing rendered)."""
    structures = list(STRUCTURES)
    labels = list(dict.fromkeys(_label(r) for r in cells.iter_rows(named=True)))
    grid = np.full((max(len(labels), 1), len(structures)), np.nan)
    counts = np.zeros_like(grid, dtype=int)
    for row in cells.iter_rows(named=True):
        i, j = labels.index(_label(row)), structures.index(str(row["structure"]))
        share = row["share"]
        grid[i, j] = math.nan if share is None else float(share)
        counts[i, j] = int(row["secrets"] or 0)
    figure = Figure(figsize=(9.0, 0.45 * max(len(labels), 1) + 2.2), layout="constrained")
    axes = figure.subplots()
    image = axes.imshow(
        np.ma.masked_invalid(grid), cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto"
    )
    for i in range(len(labels)):
        for j in range(len(structures)):
            if not math.isnan(grid[i, j]):
                colour = "black" if grid[i, j] > 0.6 else "white"
                axes.text(
                    j,
                    i,
                    f"{grid[i, j]:.2f}\nn={counts[i, j]}",
                    ha="center",
                    va="center",
                    fontsize=6,
                    color=colour,
                )
    axes.set_xticks(range(len(structures)), structures, rotation=30, ha="right", fontsize=7)
    axes.set_yticks(range(len(labels)), labels, fontsize=7)
    figure.colorbar(image, ax=axes, label="share of planted secrets in the rendered prompt")
    axes.set_title(
        f"Which stored reasoning the template shows (n = {len(labels)} templates)\n"
        "default switches, rendered shapes, dialects the template reads; n per cell = secrets",
        fontsize=8,
    )
    return figure
