"""The run overview: provenance header, manifest counts with links, figures, report sections.

- The provenance is the reports' own (`jobs.provenance_header.provenance`), from the manifest
  and the plan, so the viewer and report.md never disagree about what run this is.
- Counts are the manifest's (planned = valid + invalid by reason + not run by reason +
  pending), checked against the units frame: a count the frame cannot list is shown with a
  warning rather than a broken link. A manifest holds counts only once its session has ended;
  until then (a run still being written, or one killed without a word) the counts are the
  units frame's own, as of the last read (`counted_now`).
- Figures are the PNGs in `analysis/`, in name order; report sections come from
  `analysis/report.md`, its provenance block left out (the header above already shows it);
  a report or `analysis/` the guard refuses (a symlink out of the run) says "refused" instead.
- The legend names each arm (or policy) the run planned with what it is (the study's
  `describe`, through `Run.arm_descriptions`), and the report's arm and policy cells carry the
  same text as a tooltip; an arm the study does not describe says "(no description)".
- Small samples are flagged by the report's rule (`jobs.small_sample`): configuration x arm
  cells with fewer than MIN_CELL_N valid units, and panels with fewer than MIN_SPREAD_N
  configurations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from pipeline.view.guard import PathRefused
from pipeline.view.markdown import Section, sections
from pipeline.view.runs import Run

REPORT = "analysis/report.md"


@dataclass(frozen=True)
class CountLine:
    verdict: str
    reason: str | None
    count: int
    listed: int  # units the units frame has for this (verdict, reason)


@dataclass(frozen=True)
class LegendLine:
    arm: str
    description: str


@dataclass(frozen=True)
class Overview:
    provenance: object
    planned: int
    lines: list[CountLine]
    figures: list[str]
    sections: list[Section]
    small_cells: list[str]
    few_configs: int | None
    report_missing: bool
    report_refused: str | None
    legend: list[LegendLine]
    counted_now: bool  # the manifest has no counts yet: they are the tables' as of now


def _frame_counts(listed: dict[tuple[str, str | None], int]) -> dict[str, Any]:
    """The manifest's counts shape, from the units frame's (verdict, reason) counts."""
    counts: dict[str, Any] = {"planned": sum(listed.values()), "invalid": {}, "not_run": {}}
    for (verdict, reason), n in listed.items():
        if verdict in ("invalid", "not_run"):
            counts[verdict][reason] = n
        else:
            counts[verdict] = n
    return counts


def count_lines(run: Run, units: pl.DataFrame) -> tuple[int, list[CountLine]]:
    listed = {
        (r["verdict"], r["reason"]): r["len"]
        for r in units.group_by("verdict", "reason").len().to_dicts()
    }
    counts = run.manifest.get("counts") or _frame_counts(listed)
    lines = [CountLine("valid", None, int(counts.get("valid", 0)), listed.get(("valid", None), 0))]
    for key in ("invalid", "not_run"):
        for reason, n in sorted((counts.get(key) or {}).items()):
            lines.append(CountLine(key, reason, int(n), listed.get((key, reason), 0)))
    lines.append(
        CountLine("pending", None, int(counts.get("pending", 0)), listed.get(("pending", None), 0))
    )
    return int(counts.get("planned", units.height)), lines


def small_sample(units: pl.DataFrame) -> tuple[list[str], int | None]:
    from jobs.small_sample import MIN_CELL_N, MIN_SPREAD_N

    # n counts observations, not units: a unit that pairs many transcripts (one unit that
    # replays a whole corpus, each transcript a pair against control) states how many in its
    # row's `transcripts`; elsewhere a valid unit is one observation (issue 32 §17)
    each = pl.col("transcripts") if "transcripts" in units.columns else pl.lit(1)
    valid = units.filter(pl.col("verdict") == "valid").with_columns(each.fill_null(1).alias("n"))
    counts = valid.group_by("config_id", "arm").agg(pl.col("n").sum().alias("len"))
    cells = (
        units.select("config_id", "arm")
        .unique()
        .join(counts, on=["config_id", "arm"], how="left")
        .with_columns(pl.col("len").fill_null(0))
        .filter(pl.col("len") < MIN_CELL_N)
        .sort("config_id", "arm")
    )
    small = [f"{r['config_id']} × {r['arm']} (n={r['len']})" for r in cells.to_dicts()]
    configs = units["config_id"].n_unique()
    return small, configs if configs < MIN_SPREAD_N else None


def legend(run: Run, units: pl.DataFrame) -> list[LegendLine]:
    """Every arm the run planned, in name order, with its description ([] when the study
    describes none)."""
    from pipeline.config.descriptions import NO_DESCRIPTION

    if run.arm_descriptions is None:
        return []
    arms = sorted(units["arm"].drop_nulls().unique().to_list())
    return [LegendLine(a, run.arm_title(a) or NO_DESCRIPTION) for a in arms]


def report_sections(
    text: str, figure_src: Callable[[str], str | None], titles: Mapping[str, str] | None = None
) -> list[Section]:
    """The report's sections, without the banner, the title and the provenance table."""
    kept, skipping = [], False
    for line in text.splitlines():
        if line.startswith("| provenance"):
            skipping = True
        elif skipping and not line.startswith("|"):
            skipping = False
        if skipping or line.startswith("SIMULATED") or line.startswith("# "):
            continue
        kept.append(line)
    return sections("\n".join(kept), figure_src, titles)


def figure_names(run: Run) -> list[str]:
    try:
        folder = run.file("analysis")
    except PathRefused:
        return []  # an analysis/ symlinked out of the run: its report says refused below
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".png" and p.is_file())


def report_text(run: Run) -> tuple[str | None, str | None]:
    """analysis/report.md's text (None when absent or refused) and the guard's refusal."""
    try:
        report = run.file(REPORT)
    except PathRefused as exc:
        return None, str(exc)
    return (report.read_text(encoding="utf-8") if report.is_file() else None), None


def overview(run: Run, units: pl.DataFrame, figure_src: Callable[[str], str | None]) -> Overview:
    from jobs.provenance_header import plan_arms, provenance

    facts = provenance(
        run.manifest, plan_arms(run.path), run_id=run.name, rows_simulated=run.simulated
    )
    planned, lines = count_lines(run, units)
    text, refused = report_text(run)
    titles = None if run.arm_descriptions is None else run.arm_descriptions.by_name
    found = report_sections(text, figure_src, titles) if text is not None else []
    small, few = small_sample(units)
    return Overview(
        facts,
        planned,
        lines,
        figure_names(run),
        found,
        small,
        few,
        text is None and refused is None,
        refused,
        legend(run, units),
        not run.manifest.get("counts"),
    )
