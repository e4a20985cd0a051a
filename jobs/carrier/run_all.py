"""Runs every carrier job on a run directory and writes RUN_DIR/analysis/.

The final attempts are computed once and shared; checks are folded to one row per graded row
once. Contrasts come from the argument, else the manifest's config.analysis.contrasts, else
the defaults; a contrast whose arm has no rows is skipped and recorded in summary.json (the
report says so).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from jobs import io
from jobs.carrier import answers, audit, dependence, fill, headings, panel, paired, planned
from jobs.carrier import recall as recall_job
from jobs.carrier import report as report_job
from jobs.carrier import row_checks, thresholds
from jobs.carrier.columns import CHECK_COLUMNS, PLAN_COLUMNS, REQUIRED_ROW_COLUMNS, ROW_COLUMNS


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
    report: Path | None = None

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


def contrasts_from_manifest(manifest: dict[str, Any] | None) -> tuple[str, ...] | None:
    """config.analysis.contrasts of a manifest, if it records them."""
    config = (manifest or {}).get("config")
    analysis = config.get("analysis") if isinstance(config, dict) else None
    names = analysis.get("contrasts") if isinstance(analysis, dict) else None
    if isinstance(names, list) and all(isinstance(n, str) for n in names):
        return tuple(names)
    return None


def _load_final(run_dir: Path) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    rows = io.scan_table(run_dir, "rows", ROW_COLUMNS, required=REQUIRED_ROW_COLUMNS)
    if rows is None:
        raise io.RunDirError(f"{run_dir} has no rows/ parts: nothing to analyze")
    final = recall_job.final_attempts(rows).collect().lazy()
    return rows, final


def analyze(
    run_dir: Path,
    *,
    contrasts: Sequence[str] | None = None,
    bootstrap_seed: int = 166,
    bootstrap_resamples: int = 10_000,
) -> AnalysisSummary:
    """Every job, then the report. Returns what was run, skipped and written."""
    run_dir = io.require_run_dir(Path(run_dir))
    names = tuple(contrasts or contrasts_from_manifest(io.read_manifest(run_dir)) or paired.DEFAULT_CONTRASTS)
    parsed = [paired.parse_contrast(name) for name in names]
    rows, final = _load_final(run_dir)
    out = io.analysis_dir(run_dir)
    written: list[Path] = []

    recall_table = recall_job.recall_by_config_arm(final)
    written.append(io.write_parquet(recall_table, out / "recall_by_config_arm.parquet"))
    present = recall_job.arms_present(final)
    plan = io.scan_plan(run_dir, PLAN_COLUMNS)
    checks = io.scan_table(run_dir, "checks", CHECK_COLUMNS)

    run: list[str] = []
    skipped: list[SkippedContrast] = []
    fill_tables: list[pl.DataFrame] = []
    fill_json: dict[str, object] = {}
    for contrast in parsed:
        missing = [arm for arm in (contrast.b, contrast.a) if arm not in present]
        if missing:
            skipped.append(SkippedContrast(contrast.name, f"no rows for arm(s) {', '.join(missing)}"))
            continue
        run.append(contrast.name)
        paired_table = paired.paired_by_config(final, contrast)
        written.append(io.write_parquet(paired_table, out / f"paired_{contrast.name}.parquet"))
        threshold_table = thresholds.threshold_table(paired.complete_pairs(final, contrast))
        written.append(io.write_parquet(threshold_table, out / f"threshold_{contrast.name}.parquet"))
        summary = panel.panel_summary(
            paired_table,
            planned_bounds=planned.planned_bounds(plan, final, contrast),
            bootstrap_seed=bootstrap_seed,
            bootstrap_resamples=bootstrap_resamples,
        )
        written.append(io.write_json(summary.to_json(), out / f"panel_{contrast.name}.json"))
        fill_table = fill.fill_against_effect(final, paired_table, contrast)
        fill_tables.append(fill_table)
        fill_json[contrast.name] = fill.fill_correlation(fill_table).to_json()

    fill_all = pl.concat(fill_tables) if fill_tables else fill.empty_fill_table()
    written.append(io.write_parquet(fill_all, out / "fill.parquet"))
    written.append(io.write_json(fill_json, out / "fill.json"))
    written.append(io.write_json(headings.headings_summary(final), out / "headings.json"))

    with_checks = row_checks.valid_rows_with_checks(final, checks)
    written.append(
        io.write_json(
            dependence.within_row_dependence(with_checks).to_json(), out / "dependence.json"
        )
    )
    written.append(io.write_parquet(audit.carrier_audit(with_checks), out / "carrier_audit.parquet"))
    written.append(io.write_parquet(answers.answers_by_arm(with_checks), out / "answers.parquet"))

    counts = final.select(pl.len().alias("final"), pl.col("valid").sum().alias("valid")).collect()
    attempts = rows.select(pl.len()).collect().item()
    absent = [t for t in ("checks", "folds", "events") if not io.table_parts(run_dir, t)]
    absent += [name for name in ("plan.parquet", "manifest.json") if not (run_dir / name).is_file()]
    result = AnalysisSummary(
        run_dir=run_dir,
        analysis_dir=out,
        simulated=recall_job.simulated_any(rows),
        attempts=int(attempts),
        final_rows=int(counts.item(0, "final")),
        valid_rows=int(counts.item(0, "valid")),
        contrasts=tuple(run),
        skipped=tuple(skipped),
        absent_tables=tuple(absent),
        bootstrap_seed=bootstrap_seed,
        bootstrap_resamples=bootstrap_resamples,
        outputs=tuple(path.name for path in written),
    )
    io.write_json(result.to_json(), out / report_job.SUMMARY_FILE)
    report_path = report_job.render_report(run_dir)
    return dataclasses.replace(result, report=report_path)
