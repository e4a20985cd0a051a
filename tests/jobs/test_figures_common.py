"""Every figure of a simulated run says SIMULATED, every figure states its n, and no label is
clipped (issue 13). Checked on Figure objects and PNG metadata, never on pixels."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from PIL import Image

from jobs.carrier.figures import fill_scatter, forest_plot, recall_heatmap
from jobs.figures_common import SIMULATED_MARK, mark_simulated, save_figure
from jobs.small_sample import SMALL_SAMPLE_MARK
from jobs.toolout.figures import breakeven_curves, savings_plot


def texts(figure: Figure) -> list[str]:
    """Every text artist of the figure: its own texts, titles, axis labels, tick labels."""
    found = [t.get_text() for t in figure.texts]
    for axes in figure.axes:
        found += [axes.get_title(), axes.get_xlabel(), axes.get_ylabel()]
        found += [t.get_text() for t in axes.get_yticklabels() + axes.texts]
    return found


def simple_figure() -> Figure:
    figure = Figure(figsize=(4, 3))
    figure.subplots().plot([0, 1], [0, 1])
    return figure


def test_save_figure_of_a_simulated_run_marks_texts_and_png_metadata(tmp_path: Path) -> None:
    path = save_figure(simple_figure(), tmp_path / "a.png", simulated=True)
    with Image.open(path) as image:
        assert image.info["Description"].startswith(SIMULATED_MARK)


def test_save_figure_of_a_real_run_adds_no_mark(tmp_path: Path) -> None:
    figure = simple_figure()
    path = save_figure(figure, tmp_path / "a.png", simulated=False)
    assert SIMULATED_MARK not in texts(figure)
    with Image.open(path) as image:
        assert "Description" not in image.info


def test_marking_twice_keeps_one_watermark_and_one_label() -> None:
    figure = mark_simulated(mark_simulated(simple_figure()))
    assert [t.get_text() for t in figure.texts].count(SIMULATED_MARK) == 2


LONG = "a-very-long-provider/organisation/model-name-with-version:quantization@https://base-url/v1"


def paired() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "config_id": [LONG, "b", "c"],
            "pairs": [4, 2, 1],
            "paired_mean": [0.1, -0.2, 0.3],
            "effect_ci_lo": [-0.05, -0.9, None],
            "effect_ci_hi": [0.25, 0.5, None],
            "small_sample": [False, True, True],
        }
    )


def test_forest_plot_draws_each_configurations_interval_and_states_n() -> None:
    figure = forest_plot("q_vs_j", paired(), 0.05, [-0.1, 0.2], "t interval")
    assert figure is not None
    axes = figure.axes[0]
    bars = [c for c in axes.collections if isinstance(c, LineCollection)]
    assert len(bars) == 1 and len(bars[0].get_segments()) == 2  # c has one pair: no interval
    labels = [t.get_text() for t in axes.get_yticklabels()]
    assert f"c (n=1){SMALL_SAMPLE_MARK}" in labels
    assert "n = 3 configurations, 7 complete pairs" in axes.get_title()


def test_forest_plot_labels_are_not_clipped_in_the_saved_png(tmp_path: Path) -> None:
    figure = forest_plot("q_vs_j", paired(), 0.05, None, "t interval")
    assert figure is not None
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    extents = [t.get_window_extent(renderer) for t in figure.axes[0].get_yticklabels()]
    leftmost = min(e.x0 for e in extents)
    assert leftmost < 0  # the long label starts left of the canvas: clipped without a tight box
    needed_inches = (figure.bbox.width - leftmost) / figure.dpi
    path = save_figure(figure, tmp_path / "forest.png", simulated=False)
    with Image.open(path) as image:
        assert image.width >= needed_inches * 120  # the saved box grew to hold the label (dpi 120)


def test_heatmap_and_fill_scatter_state_their_n() -> None:
    recall = pl.DataFrame(
        {
            "config_id": ["a", "a", "b"],
            "arm": ["j", "q", "j"],
            "mean_recall": [0.5, 0.25, 1.0],
            "valid_rows": [3, 1, 2],
        }
    )
    heatmap = recall_heatmap(recall)
    assert heatmap is not None
    assert "n = 1–3 per cell" in heatmap.axes[0].get_title()
    assert any(t.endswith(f"n=1{SMALL_SAMPLE_MARK}") for t in texts(heatmap))
    fill = pl.DataFrame({"fill_a": [0.2, 0.4], "effect": [0.1, None]})
    scatter = fill_scatter("q_vs_j", fill)
    assert scatter is not None
    assert "n = 1 configs" in scatter.axes[0].get_title()


def test_toolout_figures_state_their_n_and_are_marked_when_simulated(tmp_path: Path) -> None:
    savings = pl.DataFrame(
        {
            "config_id": ["x", "x"],
            "policy": ["p", "q"],
            "pairs": [12, 3],
            "saving_pct_of_control": [5.0, -1.0],
        }
    )
    bars = savings_plot(savings)
    labels = [t.get_text() for t in bars.axes[0].get_yticklabels()]
    assert labels == ["x / p (n=12)", f"x / q (n=3){SMALL_SAMPLE_MARK}"]
    assert "n = 1 configurations × 2 policies" in bars.axes[0].get_title()
    rates = pl.DataFrame({"config_id": ["x"], "premium_ratio": [9.0]})
    points = pl.DataFrame(
        {
            "policy": ["p"],
            "median_d_over_r": [0.5],
            "median_n_star": [18.0],
            "transformations": [2],
        }
    )
    curves = breakeven_curves(rates, points)
    assert f"p (n=2){SMALL_SAMPLE_MARK}" in texts(curves)
    save_figure(curves, tmp_path / "breakeven.png", simulated=True)
    assert texts(curves).count(SIMULATED_MARK) == 2
