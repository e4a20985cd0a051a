"""Runs every carrier job on a run directory and writes RUN_DIR/analysis/ and summary.json.

The final attempts are computed once and shared; checks are folded to one row per graded row
once. The settings (contrasts, bootstrap) are the `AnalysisConfig` given, else the run
manifest's `config.analysis` (jobs.io.manifest_analysis); a contrast whose arm has no rows is
skipped and recorded in summary.json (the report says so). The report is not drawn here:
`jobs.carrier.report` renders it from these outputs, once (the registry, pipeline.studies,
runs the study's `analyze`, then its `render`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from jobs import io
from jobs.carrier import (
    answers,
    audit,
    dependence,
    fill,
    headings,
    paired,
    panel,
    planned,
    retention,
    row_checks,
    thresholds,
)
from jobs.carrier import recall as recall_job
from jobs.carrier.columns import CHECK_COLUMNS, PLAN_COLUMNS, ROW_COLUMNS
from pipeline.config.schema import AnalysisConfig
from pipeline.store import Layout, RunDirError, final_rows, part_paths

SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class SkippedContrast:
    contrast: str
    reason: str


@dataclass(frozen=True)
class AnalysisSummary:
    run_dir: Path
    analysis_dir: Path
    simulated: bool
    attempts: int
    final_rows: int
    valid_rows: int
    contrasts: tuple[str, ...]
    skipped: tuple[SkippedContrast, ...]
    absent_tables: tuple[str, ...]
    bootstrap_seed: int
    bootstrap_resamples: int
    outputs: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {
            "simulated": self.simulated,
            "attempts": self.attempts,
            "final_rows": self.final_rows,
            "valid_rows": self.valid_rows,
            "contrasts": list(self.contrasts),
            "skipped": [{"contrast": s.contrast, "reason": s.reason} for s in self.skipped],
            "absent_tables": list(self.absent_tables),
            "bootstrap_seed": self.bootstrap_seed,
            "bootstrap_resamples": self.bootstrap_resamples,
            "outputs": list(self.outputs),
        }


def carrier_layout() -> Layout:
    """The carrier study's run-directory layout, for callers that hand none down (scripts and
    tests calling the jobs directly); the study's definition always passes its own."""
    from pipeline.carrier.records import ROW_COLUMNS as STUDY_COLUMNS
    from pipeline.carrier.records import TABLES
    from pipeline.store.layout import layout_for

    return layout_for(STUDY_COLUMNS, TABLES)


def _load_final(run_dir: Path, layout: Layout) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    rows = io.scan_table(run_dir, "rows", ROW_COLUMNS, layout)
    if rows is None:
        raise RunDirError(f"{run_dir} has no rows/ parts: nothing to analyze")
    return rows, final_rows(rows).lazy()


@dataclass(frozen=True)
class _ContrastOutputs:
    paths: tuple[Path, ...]
    fill_table: pl.DataFrame
    fill_correlation: dict[str, object]


def _run_contrast(
    final: pl.LazyFrame,
    plan: pl.LazyFrame | None,
    contrast: paired.Contrast,
    out: Path,
    *,
    bootstrap_seed: int,
    bootstrap_resamples: int,
) -> _ContrastOutputs:
    """paired_, threshold_ and panel_ outputs of one contrast, plus its fill rows."""
    paired_table = paired.paired_by_config(final, contrast)
    threshold_table = thresholds.threshold_table(paired.complete_pairs(final, contrast))
    summary = panel.panel_summary(
        paired_table,
        planned_bounds=planned.planned_bounds(plan, final, contrast),
        bootstrap_seed=bootstrap_seed,
        bootstrap_resamples=bootstrap_resamples,
    )
    fill_table = fill.fill_against_effect(final, paired_table, contrast)
    return _ContrastOutputs(
        paths=(
            io.write_parquet(paired_table, out / f"paired_{contrast.name}.parquet"),
            io.write_parquet(threshold_table, out / f"threshold_{contrast.name}.parquet"),
            io.write_json(summary.to_json(), out / f"panel_{contrast.name}.json"),
        ),
        fill_table=fill_table,
        fill_correlation=fill.fill_correlation(fill_table).to_json(),
    )


def _run_check_jobs(final: pl.LazyFrame, checks: pl.LazyFrame | None, out: Path) -> list[Path]:
    """dependence, carrier audit and answers: one pass over checks, shared."""
    with_checks = row_checks.valid_rows_with_checks(final, checks)
    dependence_json = dependence.within_row_dependence(with_checks).to_json()
    return [
        io.write_json(dependence_json, out / "dependence.json"),
        io.write_parquet(audit.carrier_audit(with_checks), out / "carrier_audit.parquet"),
        io.write_parquet(
            retention.carrier_retention(with_checks), out / "carrier_retention.parquet"
        ),
        io.write_parquet(answers.answers_by_arm(with_checks), out / "answers.parquet"),
    ]


def _absent_inputs(run_dir: Path, layout: Layout) -> tuple[str, ...]:
    absent = [t for t in layout.tables if t != "rows" and not part_paths(run_dir, t, layout)]
    absent += [name for name in ("plan.parquet", "manifest.json") if not (run_dir / name).is_file()]
    return tuple(absent)


def analyze(
    run_dir: Path, analysis: AnalysisConfig | None = None, *, layout: Layout | None = None
) -> AnalysisSummary:
    """Every job; writes the outputs and summary.json. Returns what was run, skipped, written.

    `analysis` None: the manifest's settings (the defaults for a run without a manifest).
    `layout` None: the carrier's. A run without rows is a RunDirError.
    """
    run_dir = io.require_run_dir(Path(run_dir))
    layout = layout or carrier_layout()
    analysis = analysis or io.manifest_analysis(run_dir)
    bootstrap_seed = analysis.bootstrap.seed
    bootstrap_resamples = analysis.bootstrap.resamples
    parsed = [paired.parse_contrast(name) for name in analysis.contrasts]
    rows, final = _load_final(run_dir, layout)
    out = io.analysis_dir(run_dir)
    written = [
        io.write_parquet(
            recall_job.recall_by_config_arm(final), out / "recall_by_config_arm.parquet"
        )
    ]
    present = recall_job.arms_present(final)
    plan = io.scan_plan(run_dir, PLAN_COLUMNS)

    run: list[str] = []
    skipped: list[SkippedContrast] = []
    fill_tables: list[pl.DataFrame] = []
    fill_json: dict[str, object] = {}
    for contrast in parsed:
        missing = [arm for arm in (contrast.b, contrast.a) if arm not in present]
        if missing:
            reason = f"no rows for arm(s) {', '.join(missing)}"
            skipped.append(SkippedContrast(contrast.name, reason))
            continue
        outputs = _run_contrast(
            final,
            plan,
            contrast,
            out,
            bootstrap_seed=bootstrap_seed,
            bootstrap_resamples=bootstrap_resamples,
        )
        run.append(contrast.name)
        written += outputs.paths
        fill_tables.append(outputs.fill_table)
        fill_json[contrast.name] = outputs.fill_correlation

    fill_all = pl.concat(fill_tables) if fill_tables else fill.empty_fill_table()
    written.append(io.write_parquet(fill_all, out / "fill.parquet"))
    written.append(io.write_json(fill_json, out / "fill.json"))
    written.append(io.write_json(headings.headings_summary(final), out / "headings.json"))
    checks = io.scan_table(run_dir, "checks", CHECK_COLUMNS, layout)
    written += _run_check_jobs(final, checks, out)
    io.remove_stale_contrast_outputs(out, keep=run)

    counts = final.select(pl.len().alias("final"), pl.col("valid").sum().alias("valid")).collect()
    result = AnalysisSummary(
        run_dir=run_dir,
        analysis_dir=out,
        simulated=recall_job.simulated_any(rows),
        attempts=int(rows.select(pl.len()).collect().item()),
        final_rows=int(counts.item(0, "final")),
        valid_rows=int(counts.item(0, "valid")),
        contrasts=tuple(run),
        skipped=tuple(skipped),
        absent_tables=_absent_inputs(run_dir, layout),
        bootstrap_seed=bootstrap_seed,
        bootstrap_resamples=bootstrap_resamples,
        outputs=tuple(path.name for path in written),
    )
    io.write_json(result.to_json(), out / SUMMARY_FILE)
    return result
