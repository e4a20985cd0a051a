"""decision.png: every answer's headline estimate with its 95% interval, one panel per unit.

Why: the page says what to do; the figure shows how sure each answer is at a glance, an
interval against its reference line (0 for a difference, the retention goal for the facts a
summary keeps). A recommended answer is drawn filled, an undecided one hollow. The answers of
simulated (or replayed) runs go to their own figure, decision-simulated.png, which carries the
SIMULATED mark (jobs/figures_common.py), so a real answer is never drawn under that mark and a
simulated one never without it. No file when no answer of its kind has an estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from jobs.figures_common import save_figure
from pipeline.decision import Effect, StudyDecision

FIGURE = "decision.png"
SIMULATED_FIGURE = "decision-simulated.png"


def _points(decisions: Sequence[StudyDecision]) -> dict[str, list[tuple[str, Effect, bool]]]:
    """Per unit: (label, effect, recommended), in page order."""
    by_unit: dict[str, list[tuple[str, Effect, bool]]] = {}
    for decision in decisions:
        for answer in decision.answers:
            effect = answer.effect
            if effect is None:
                continue
            label = f"{decision.study} · {answer.subject}: {effect.label}".replace("`", "")
            recommended = answer.recommendation is not None
            by_unit.setdefault(effect.unit, []).append((label, effect, recommended))
    return by_unit


def draw(decisions: Sequence[StudyDecision]) -> Figure | None:
    by_unit = _points(decisions)
    if not by_unit:
        return None
    heights = [max(len(points), 1) for points in by_unit.values()]
    size = (9.0, 1.2 + 0.38 * sum(heights) + 0.9 * len(heights))
    figure = Figure(figsize=size, layout="constrained")
    axes = figure.subplots(len(by_unit), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, (unit, points) in zip(axes, by_unit.items(), strict=True):
        for y, (_label, effect, recommended) in enumerate(reversed(points)):
            colour = "tab:blue" if recommended else "tab:orange"
            ax.plot([effect.lo, effect.hi], [y, y], color=colour, linewidth=2)
            ax.plot(
                [effect.estimate],
                [y],
                marker="o",
                color=colour,
                markerfacecolor=colour if recommended else "white",
            )
        references = sorted({effect.reference for _, effect, _ in points})
        for reference in references:
            ax.axvline(reference, color="0.3", linewidth=0.8, linestyle="--")
        ax.set_yticks(range(len(points)), [label for label, *_ in reversed(points)], fontsize=8)
        ax.set_ylim(-0.7, len(points) - 0.3)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=5))  # USD ticks stay apart
        ax.set_xlabel(f"{unit} (point: estimate; bar: 95% interval; dashed: reference)")
    figure.suptitle(
        "Each answer's estimate: filled = recommended, hollow = no decision", fontsize=10
    )
    return figure


def write_figures(decisions: Sequence[StudyDecision], out: Path) -> list[Path]:
    """decision.png of the real runs and decision-simulated.png of the others, as drawn."""
    written = []
    for simulated, name in ((False, FIGURE), (True, SIMULATED_FIGURE)):
        figure = draw([d for d in decisions if d.simulated == simulated])
        if figure is not None:
            written.append(save_figure(figure, out / name, simulated=simulated))
    return written
