"""Report figures, built as matplotlib Figure objects (Agg; no pyplot global state).

Each builder is a pure function of analysis tables; jobs.figures_common.save_figure saves them
(marking every figure of a simulated run SIMULATED, with a tight bounding box so labels are
never clipped). Every figure states its denominators: the forest plot's labels carry each
configuration's pairs and its title the panel's, the heatmap's title the per-cell range of
valid rows, the fill scatter's title its configurations. Margins are set from the label
lengths instead of tight_layout, and heatmap cells carry text only while there are few of
them: both keep a 50-configuration report fast to draw.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import polars as pl
from matplotlib.figure import Figure

from jobs.small_sample import SMALL_SAMPLE_MARK, small_cell

MAX_ANNOTATED_CELLS = 120


def _label_inches(labels: list[str]) -> float:
    """Width of the longest y label (about 0.055 inch per character at 7 pt)."""
    return 0.3 + 0.055 * max((len(label) for label in labels), default=0)


def _fit_margins(figure: Figure, labels: list[str], right_inches: float = 0.4) -> None:
    width = figure.get_figwidth()
    left = min(0.6, _label_inches(labels) / width)
    figure.subplots_adjust(left=left, right=1.0 - right_inches / width, top=0.9, bottom=0.15)


def forest_plot(
    contrast: str,
    paired: pl.DataFrame,
    panel_mean: float | None,
    interval: list[float] | None,
    interval_label: str,
) -> Figure | None:
    """Configuration effects (one dot each, sized by pairs, with its 95% t interval over its
    pairs where it has two or more) and the panel mean and interval. A configuration resting
    on a small sample carries the small-sample mark in its label."""
    rows = paired.filter(pl.col("pairs") >= 1).sort("paired_mean", "config_id")
    if rows.is_empty():
        return None
    small = (
        rows.get_column("small_sample").to_list()
        if "small_sample" in rows.columns
        else [False] * rows.height
    )
    labels = [
        f"{c} (n={n}){SMALL_SAMPLE_MARK if flagged else ''}"
        for c, n, flagged in zip(rows["config_id"], rows["pairs"], small, strict=True)
    ]
    effects = rows.get_column("paired_mean").to_list()
    height = max(2.5, 0.32 * len(labels) + 1.5)
    figure = Figure(figsize=(8.0, height))
    axes = figure.subplots()
    positions = list(range(len(labels)))
    sizes = [18.0 + 8.0 * float(n) for n in rows.get_column("pairs").to_list()]
    if "effect_ci_lo" in rows.columns:
        spans = [
            (p, lo, hi)
            for p, lo, hi in zip(positions, rows["effect_ci_lo"], rows["effect_ci_hi"], strict=True)
            if lo is not None and hi is not None
        ]
        if spans:
            axes.hlines(
                [p for p, _, _ in spans],
                [max(-1.05, lo) for _, lo, _ in spans],
                [min(1.05, hi) for _, _, hi in spans],
                color="tab:blue",
                linewidth=1.0,
                alpha=0.6,
                label="configuration 95% t interval",
            )
    axes.scatter(effects, positions, s=sizes, color="tab:blue", zorder=3)
    axes.axvline(0.0, color="grey", linewidth=0.8)
    if panel_mean is not None:
        axes.axvline(
            panel_mean, color="tab:red", linewidth=1.2, label=f"panel mean {panel_mean:+.3f}"
        )
    if interval is not None:
        axes.axvspan(interval[0], interval[1], color="tab:red", alpha=0.12, label=interval_label)
    axes.set_yticks(positions, labels, fontsize=7)
    axes.set_xlabel(f"paired recall effect ({contrast.replace('_vs_', ' − ')})")
    axes.set_xlim(-1.05, 1.05)
    axes.legend(loc="lower right", fontsize=7)
    total = int(rows.get_column("pairs").sum())
    axes.set_title(
        f"{contrast}: configuration effects (n = {len(labels)} configurations, "
        f"{total} complete pairs; n per label = pairs)",
        fontsize=9,
    )
    _fit_margins(figure, labels)
    return figure


def recall_heatmap(recall: pl.DataFrame) -> Figure | None:
    """Mean recall of valid final rows by configuration (rows) and arm (columns)."""
    if recall.is_empty():
        return None
    configs = sorted(recall.get_column("config_id").unique().to_list())
    arms = sorted(recall.get_column("arm").unique().to_list())
    lookup = {
        (c, a): (m, n)
        for c, a, m, n in recall.select("config_id", "arm", "mean_recall", "valid_rows").iter_rows()
    }
    grid = [[_cell_value(lookup.get((c, a))) for a in arms] for c in configs]
    width = _label_inches(configs) + 0.7 * len(arms) + 1.6
    figure = Figure(figsize=(width, max(2.5, 0.3 * len(configs) + 1.5)))
    axes = figure.subplots()
    image = axes.imshow(grid, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    for i, config in enumerate(configs):
        for j, arm in enumerate(arms):
            cell = lookup.get((config, arm))
            if cell is not None and cell[1] and len(configs) * len(arms) <= MAX_ANNOTATED_CELLS:
                axes.text(
                    j,
                    i,
                    f"{cell[0]:.2f}\nn={cell[1]}{SMALL_SAMPLE_MARK if small_cell(cell[1]) else ''}",
                    ha="center",
                    va="center",
                    fontsize=5,
                    color="white" if cell[0] < 0.6 else "black",
                )
    axes.set_xticks(range(len(arms)), arms)
    axes.set_yticks(range(len(configs)), configs, fontsize=7)
    counts = [n for _, n in lookup.values() if n]
    span = f"{min(counts)}–{max(counts)}" if counts else "0"
    axes.set_title(f"mean recall (valid final rows; n = {span} per cell)", fontsize=9)
    figure.colorbar(image, ax=axes, fraction=0.04)
    _fit_margins(figure, configs, right_inches=1.2)
    return figure


def _cell_value(cell: tuple[float | None, int] | None) -> float:
    if cell is None or cell[0] is None:
        return float("nan")
    return float(cell[0])


def fill_scatter(contrast: str, fill: pl.DataFrame) -> Figure | None:
    """a-arm fill against the paired effect, one point per configuration."""
    usable = fill.drop_nulls(["fill_a", "effect"])
    if usable.is_empty():
        return None
    figure = Figure(figsize=(5.5, 4.0))
    axes = figure.subplots()
    axes.scatter(
        usable.get_column("fill_a").to_list(),
        usable.get_column("effect").to_list(),
        color="tab:purple",
    )
    axes.axhline(0.0, color="grey", linewidth=0.8)
    arm_a = contrast.split("_vs_")[1]
    axes.set_xlabel(f"mean fill of arm {arm_a} (carried chars / declared capacity)")
    axes.set_ylabel("paired effect")
    axes.set_title(
        f"{contrast}: fill vs effect (exploratory; n = {usable.height} configs)", fontsize=9
    )
    figure.subplots_adjust(left=0.15, bottom=0.15)
    return figure
