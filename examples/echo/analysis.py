"""The echo study's analysis (one output) and its report (drawn from that output alone).

The registry decides when each runs (pipeline.studies): `analyze` writes the outputs, `render`
never analyzes, so `report` after `analyze` or a sweep draws without recomputing.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from pipeline.store import Layout, final_rows, read_table, scan

SUMMARY = "echo_summary.json"


def analyze(run_dir: Path, layout: Layout) -> None:
    """Counts the final units and how many echoed exactly, per arm."""
    rows = final_rows(scan(run_dir, "rows", layout))
    echoes = read_table(run_dir, "echoes", layout)
    by_arm = (
        rows.group_by("arm")
        .agg(
            units=pl.len(),
            valid=pl.col("valid").sum(),
            echoed=pl.col("echo_matches").fill_null(value=False).sum(),
        )
        .sort("arm")
    )
    summary = {
        "units": rows.height,
        "echoes": echoes.num_rows,
        "all_echoed": bool(rows["echo_matches"].fill_null(value=False).all()),
        "by_arm": {r.pop("arm"): r for r in by_arm.to_dicts()},
    }
    out = run_dir / "analysis"
    out.mkdir(exist_ok=True)
    (out / SUMMARY).write_text(json.dumps(summary, indent=1, sort_keys=True), encoding="utf-8")


def render(run_dir: Path) -> Path:
    """analysis/report.md from the summary: what to conclude first, then the table."""
    out = run_dir / "analysis"
    summary = json.loads((out / SUMMARY).read_text(encoding="utf-8"))
    verdict = "every endpoint echoed" if summary["all_echoed"] else "some endpoint did not echo"
    lines = [
        "# echo study",
        "",
        f"{verdict}: {summary['units']} units, {summary['echoes']} echoes recorded.",
        "",
        "| arm | units | valid | echoed |",
        "|---|---|---|---|",
    ]
    for arm, counts in sorted(summary["by_arm"].items()):
        lines.append(f"| {arm} | {counts['units']} | {counts['valid']} | {counts['echoed']} |")
    report = out / "report.md"
    report.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return report
