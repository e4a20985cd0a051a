"""Every reasoning-trace job: the study definition's `analyze` (its `render` draws the report)."""

from __future__ import annotations

from pathlib import Path

from jobs import io
from jobs.traces import compression, matrix, paired, recital, scan_report
from jobs.traces.tables import final_units, load, of_units, read_template_entries
from pipeline.config.schema import AnalysisConfig
from pipeline.store import Layout

OUTPUTS = (
    "template_matrix",
    "template_classes",
    "template_switch_classes",
    "template_cells",
    "render_disagreements",
    "render_agreement",
    "recital_verdicts",
    "compression_by_band",
    "compression_pairs",
    "compression_paired",
    "compression_decoding",
    "trace_scan",
    "trace_scan_bands",
)


def analyze(run_dir: Path, analysis: AnalysisConfig, layout: Layout) -> None:
    """Writes analysis/<output>.parquet for every output."""
    run_dir = io.require_run_dir(run_dir)
    units = final_units(load(run_dir, "rows", layout))
    probes = of_units(load(run_dir, "template_probes", layout), units)
    recitals = of_units(load(run_dir, "recitals", layout), units)
    compressions = of_units(load(run_dir, "compressions", layout), units)
    shipped = matrix.shipped_matrix(read_template_entries(run_dir))
    classes = matrix.template_classes(shipped, probes)
    differ, agree = matrix.render_disagreements(probes)
    pair_rows = paired.pairs(compressions)
    scanned, scan_bands = scan_report.scan_tables(scan_report.read_scan(run_dir))
    boot = analysis.bootstrap
    tables = {
        "template_matrix": shipped,
        "template_classes": classes,
        "template_switch_classes": matrix.switch_classes(shipped, probes),
        "template_cells": matrix.visibility_cells(shipped, probes, classes),
        "render_disagreements": differ,
        "render_agreement": agree,
        "recital_verdicts": recital.recital_verdicts(recitals),
        "compression_by_band": compression.by_band(compressions),
        "compression_pairs": pair_rows,
        "compression_paired": paired.paired_table(
            pair_rows, seed=boot.seed, resamples=boot.resamples
        ),
        "compression_decoding": compression.decoding_table(compressions),
        "trace_scan": scanned,
        "trace_scan_bands": scan_bands,
    }
    out = io.analysis_dir(run_dir)
    for name in OUTPUTS:
        io.write_parquet(tables[name], out / f"{name}.parquet")
