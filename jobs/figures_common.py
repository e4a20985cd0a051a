"""What every study's figures share: the SIMULATED mark, the denominator label, the save.

Every figure of every report goes through `save_figure`, so a simulated run cannot produce an
unmarked PNG whichever study drew it. The mark is two figure texts (a translucent diagonal
watermark and a small red corner label), so a cropped or forwarded PNG still says so, and
the PNG's metadata says it too (`Description`). Figures are matplotlib `Figure` objects (Agg, no
pyplot global state); `jobs.io.write_png` saves them with a tight bounding box, so long axis
labels are never clipped.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from matplotlib.figure import Figure

from jobs import io

SIMULATED_MARK = "SIMULATED"
SIMULATED_DESCRIPTION = "SIMULATED: drawn from a run on simulated endpoints, not a real model"


def mark_simulated(figure: Figure) -> Figure:
    """Marks a figure of a simulated run: a large translucent diagonal watermark across the
    plot and a small red label in the bottom-left corner. Both are `figure.texts` with the
    text SIMULATED; marking twice adds nothing."""
    if any(t.get_text() == SIMULATED_MARK for t in figure.texts):
        return figure
    size = max(16.0, min(44.0, 6.0 * figure.get_figwidth()))
    figure.text(
        0.5,
        0.5,
        SIMULATED_MARK,
        ha="center",
        va="center",
        rotation=25,
        fontsize=size,
        color="tab:red",
        alpha=0.18,
        fontweight="bold",
        zorder=10,
    )
    figure.text(
        0.005,
        0.005,
        SIMULATED_MARK,
        ha="left",
        va="bottom",
        fontsize=8,
        color="tab:red",
        fontweight="bold",
    )
    return figure


def with_n(text: str, n: int, unit: str) -> str:
    """A label with its denominator, e.g. `mean recall (n = 12 valid rows)`."""
    return f"{text} (n = {n} {unit})"


def save_figure(figure: Figure, path: Path, *, simulated: bool) -> Path:
    """Marks the figure when the run is simulated, then writes the PNG atomically."""
    if simulated:
        mark_simulated(figure)
        figure.set_label(SIMULATED_DESCRIPTION)
    return io.write_png(figure, path)
