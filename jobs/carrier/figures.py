"""Report figures, built as matplotlib Figure objects (Agg; no pyplot global state).

Each builder is a pure function of analysis tables; jobs.io.write_png saves them.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import polars as pl  # noqa: E402  (the backend is chosen before any figure exists)
from matplotlib.figure import Figure  # noqa: E402


def forest_plot(
    contrast: str,
    paired: pl.DataFrame,
    panel_mean: float | None,
    interval: list[float] | None,
    interval_label: str,
) -> Figure | None:
    """Configuration effects (one dot each, sized by pairs) with the panel mean and interval."""
    rows = paired.filter(pl.col("pairs") >= 1).sort("paired_mean", "config_id")
    if rows.is_empty():
        return None
    labels = [f"{c} (n={n})" for c, n in zip(rows["config_id"], rows["pairs"], strict=True)]
    effects = rows.get_column("paired_mean").to_list()
    height = max(2.5, 0.32 * len(labels) + 1.5)
    figure = Figure(figsize=(8.0, height))
    axes = figure.subplots()
    positions = list(range(len(labels)))
    sizes = [18.0 + 8.0 * float(n) for n in rows.get_column("pairs").to_list()]
    axes.scatter(effects, positions, s=sizes, color="tab:blue", zorder=3)
    axes.axvline(0.0, color="grey", linewidth=0.8)
    if panel_mean is not None:
        axes.axvline(panel_mean, color="tab:red", linewidth=1.2, label=f"panel mean {panel_mean:+.3f}")
    if interval is not None:
        axes.axvspan(interval[0], interval[1], color="tab:red", alpha=0.12, label=interval_label)
    axes.set_yticks(positions, labels, fontsize=7)
    axes.set_xlabel(f"paired recall effect ({contrast.replace('_vs_', ' − ')})")
    axes.set_xlim(-1.05, 1.05)
    axes.legend(loc="lower right", fontsize=7)
    axes.set_title(f"{contrast}: configuration effects (n = complete pairs)", fontsize=9)
    figure.tight_layout()
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
    figure = Figure(figsize=(max(4.0, 0.7 * len(arms) + 3.0), max(2.5, 0.3 * len(configs) + 1.5)))
    axes = figure.subplots()
    image = axes.imshow(grid, vmin=0.0, vmax=1.0, cmap="viridis", aspect="auto")
    for i, config in enumerate(configs):
        for j, arm in enumerate(arms):
            cell = lookup.get((config, arm))
            if cell is not None and cell[1]:
                axes.text(j, i, f"{cell[0]:.2f}\nn={cell[1]}", ha="center", va="center", fontsize=5,
                          color="white" if cell[0] < 0.6 else "black")
    axes.set_xticks(range(len(arms)), arms)
    axes.set_yticks(range(len(configs)), configs, fontsize=7)
    axes.set_title("mean recall (valid final rows; n per cell)", fontsize=9)
    figure.colorbar(image, ax=axes, fraction=0.04)
    figure.tight_layout()
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
    axes.scatter(usable.get_column("fill_a").to_list(), usable.get_column("effect").to_list(),
                 color="tab:purple")
    axes.axhline(0.0, color="grey", linewidth=0.8)
    arm_a = contrast.split("_vs_")[1]
    axes.set_xlabel(f"mean fill of arm {arm_a} (carried chars / declared capacity)")
    axes.set_ylabel("paired effect")
    axes.set_title(f"{contrast}: fill vs effect (exploratory; n = {usable.height} configs)", fontsize=9)
    figure.tight_layout()
    return figure
