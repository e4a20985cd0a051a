"""report.md and its PNG figures, built from the outputs in RUN_DIR/analysis/.

`render_report` reads what `jobs.carrier.run_all.analyze` wrote (summary.json first) and
never analyzes; when to analyse first, and the nothing-ran report of a run without a single
row, are the registry's rule for every study (pipeline.studies).
The report opens with the shared provenance header (jobs/provenance_header.py):
its first line is `SIMULATED ...` when any row of the run is simulated or the run was planned
on simulated endpoints, and every figure of such a run carries a SIMULATED mark
(jobs/figures_common.py). After the headline and the run's status comes the legend of its arms
(jobs/arm_legend.py). When recall is near zero everywhere, the floor warning (naming the
models and their size) comes right under the title, before provenance and requests (issue 32).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from jobs import io
from jobs.arm_legend import legend_section
from jobs.carrier import report_sections as sections
from jobs.carrier.run_all import SUMMARY_FILE
from jobs.provenance_header import plan_arms, provenance_header, run_is_simulated
from pipeline.store import RunDirError

REPORT_FILE = "report.md"


def is_simulated(summary: dict[str, Any] | None, manifest: dict[str, Any] | None) -> bool:
    """Any row simulated (summary.json) or the run planned on simulated endpoints (manifest)."""
    return run_is_simulated(manifest, rows_simulated=bool((summary or {}).get("simulated")))


def _save(figure: Any, path: Path, simulated: bool) -> Path:
    from jobs.figures_common import save_figure

    return save_figure(figure, path, simulated=simulated)


def _contrast_block(out: Path, name: str, simulated: bool) -> list[str]:
    from jobs.carrier import figures  # matplotlib loads only when a report is drawn

    paired = io.read_parquet(out / f"paired_{name}.parquet")
    panel: dict[str, Any] | None = io.read_json(out / f"panel_{name}.json")
    thresholds = io.read_parquet(out / f"threshold_{name}.parquet")
    if paired is None or panel is None or thresholds is None:
        return [f"## Contrast {name}", "", "Outputs missing; re-run `analyze`.", ""]
    fill_all: dict[str, Any] = io.read_json(out / "fill.json") or {}
    fill_table = io.read_parquet(out / "fill.parquet")
    written = []
    interval_label = "t interval"
    forest = figures.forest_plot(
        name,
        paired,
        panel["mean"],
        panel["t_interval"] or panel["bootstrap_interval"],
        interval_label if panel["t_interval"] else "bootstrap interval",
    )
    if forest is not None:
        written.append(_save(forest, out / f"forest_{name}.png", simulated).name)
    if fill_table is not None:
        scatter = figures.fill_scatter(name, fill_table.filter(pl.col("contrast") == name))
        if scatter is not None:
            written.append(_save(scatter, out / f"fill_{name}.png", simulated).name)
    return sections.contrast_section(
        name,
        paired=paired,
        panel=panel,
        thresholds=thresholds,
        fill=fill_all.get(name),
        figures=written,
    )


def render_report(run_dir: Path, descriptions: Mapping[str, str] | None = None) -> Path:
    """Writes analysis/report.md (and figures) from the analysis outputs; returns its path.
    `descriptions` (arm -> what it is, from the study's `describe`) give the arms' legend."""
    out = io.analysis_dir(io.require_run_dir(run_dir))
    summary: dict[str, Any] | None = io.read_json(out / SUMMARY_FILE)
    if summary is None:
        raise RunDirError(f"{out} has no {SUMMARY_FILE}; run `python -m pipeline analyze` first")
    recall = io.read_parquet(out / "recall_by_config_arm.parquet")
    if recall is None:
        raise RunDirError(f"{out} lacks recall_by_config_arm.parquet; re-run analyze")
    from jobs.carrier import figures  # matplotlib loads only when a report is drawn

    manifest = io.read_manifest(run_dir)
    simulated = is_simulated(summary, manifest)
    lines = provenance_header(
        run_dir,
        title=sections.TITLE,
        rows_simulated=simulated,
        lead=sections.near_zero_note(recall),  # first: tiny models recall almost nothing
    )
    lines += sections.headline(summary) + sections.run_status(manifest)
    lines += legend_section("Arms", "arm", plan_arms(run_dir), descriptions)
    heatmap = figures.recall_heatmap(recall)
    if heatmap is not None:
        _save(heatmap, out / "recall_heatmap.png", simulated)
    lines += sections.recall_section(recall)
    for name in summary["contrasts"]:
        lines += _contrast_block(out, name, simulated)
    lines += sections.skipped_section(summary["skipped"])
    lines += sections.dependence_section(io.read_json(out / "dependence.json") or {})
    headings = io.read_json(out / "headings.json")
    if headings is not None:
        lines += sections.headings_section(headings)
    kept = io.read_parquet(out / "carrier_retention.parquet")
    if kept is not None:
        lines += sections.retention_section(kept)
    audit = io.read_parquet(out / "carrier_audit.parquet")
    if audit is not None:
        lines += sections.audit_section(audit)
    answers = io.read_parquet(out / "answers.parquet")
    if answers is not None:
        lines += sections.answers_section(answers)
    lines.append(
        f"Bootstrap: percentile interval of the panel mean over configurations, seed "
        f"{summary['bootstrap_seed']}, {summary['bootstrap_resamples']} resamples."
    )
    return io.write_text("\n".join(lines) + "\n", out / REPORT_FILE)
