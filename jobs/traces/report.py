"""report.md of a reasoning-trace run, from the outputs in RUN_DIR/analysis/.

It opens with the shared provenance header (jobs/provenance_header.py) and the legend of its
arms (jobs/arm_legend.py), then part 1 (the class
of every template, shipped and each endpoint's under both renderers, the visibility heatmap,
where the renderers disagree, the recital verdicts per endpoint and shape, the class per switch
setting), the bloat scan of the run's real traces (lengths, quality heuristics) and part 2 (the
traces and which are synthetic, the per-band table per arm, the paired intervals against
`naive`, the frontier figure, the greedy and repeat checks). Values resting on a small sample
are marked (jobs/small_sample.py); every figure goes through jobs.figures_common.save_figure
(SIMULATED when the run is). It never analyses: a missing output is one line naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from jobs import io
from jobs.arm_legend import legend_section
from jobs.provenance_header import plan_arms, provenance_header
from jobs.traces.report_compression import part2
from jobs.traces.report_visibility import part1, switch_section
from jobs.traces.run_all import OUTPUTS
from jobs.traces.scan_report import read_scan, scan_section
from jobs.traces.tables import load, read_items
from pipeline.store import Layout

REPORT_FILE = "report.md"
TITLE = "Reasoning traces: what the template shows, and compressing it without losing facts"


def rows_simulated(run_dir: Path, layout: Layout) -> bool:
    rows = load(run_dir, "rows", layout)
    return bool(rows.height) and bool(rows["simulated"].fill_null(value=False).any())


def render_report(
    run_dir: Path, layout: Layout, descriptions: Mapping[str, str] | None = None
) -> Path:
    """Writes analysis/report.md (and its figures) from the analysis outputs; its path.
    `descriptions` (arm -> what it is, from the study's `describe`) give the arms' legend."""
    out = io.require_outputs(run_dir, OUTPUTS)
    simulated = rows_simulated(run_dir, layout)
    lines = provenance_header(run_dir, title=TITLE, rows_simulated=simulated)
    lines += legend_section("Arms", "arm", plan_arms(run_dir), descriptions)
    lines += part1(out, simulated=simulated)
    lines += switch_section(out)
    lines += scan_section(out, read_scan(run_dir), simulated=simulated)
    lines += part2(out, read_items(run_dir), simulated=simulated)
    return io.write_text("\n".join(lines) + "\n", out / REPORT_FILE)
