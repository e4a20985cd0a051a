"""report.md of a reasoning-trace run, from the outputs in RUN_DIR/analysis/.

It opens with the shared provenance header (jobs/provenance_header.py), then part 1 (the class
of every template, shipped and each endpoint's under both renderers, the visibility heatmap,
where the renderers disagree, the recital verdicts per endpoint and shape, the class per switch
setting), the bloat scan of the run's real traces (lengths, quality heuristics) and part 2 (the
traces and which are synthetic, the per-band table per arm, the paired intervals against
`naive`, the frontier figure, the greedy and repeat checks). Values resting on a small sample
are marked (jobs/small_sample.py); every figure goes through jobs.figures_common.save_figure
(SIMULATED when the run is). Missing outputs are computed first, as toolout's report does.
"""

from __future__ import annotations

from pathlib import Path

from jobs import io
from jobs.provenance_header import provenance_header
from jobs.traces.report_compression import part2
from jobs.traces.report_visibility import part1, switch_section
from jobs.traces.scan_report import read_scan, scan_section
from jobs.traces.tables import load, read_items

REPORT_FILE = "report.md"
TITLE = "Reasoning traces: what the template shows, and compressing it without losing facts"


def rows_simulated(run_dir: Path) -> bool:
    rows = load(run_dir, "rows")
    return bool(rows.height) and bool(rows["simulated"].fill_null(value=False).any())


def render_report(run_dir: Path) -> Path:
    from jobs.traces.run_all import OUTPUTS

    out = io.analysis_dir(run_dir)
    if not all((out / f"{name}.parquet").is_file() for name in OUTPUTS):
        from jobs.traces.run_all import analyze

        return analyze(run_dir, io.manifest_analysis(run_dir))
    simulated = rows_simulated(run_dir)
    lines = provenance_header(run_dir, title=TITLE, rows_simulated=simulated)
    lines += part1(out, simulated=simulated)
    lines += switch_section(out)
    lines += scan_section(out, read_scan(run_dir), simulated=simulated)
    lines += part2(out, read_items(run_dir), simulated=simulated)
    return io.write_text("\n".join(lines) + "\n", out / REPORT_FILE)
