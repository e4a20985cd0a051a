"""Issue 20 defect 3 and the seed's no-op arm: the toolout report names what it read."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from jobs import io
from jobs.toolout.report import render_report
from tests.jobs.test_provenance_header import toolout_run


def _report(run_dir: Path) -> str:
    return render_report(run_dir).read_text(encoding="utf-8")


def test_provenance_names_the_transcripts_dir_read_not_the_default_corpora(tmp_path: Path) -> None:
    run_dir = toolout_run(tmp_path, simulated=False)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    manifest["config"]["study"].update(
        corpora=["swe-agent", "mini-swe-agent", "openhands", "tau-bench"],
        transcripts_dir="/data/my-agent-logs",
    )
    (run_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    inputs = next(line for line in _report(run_dir).splitlines() if line.startswith("| inputs"))
    assert "transcripts_dir `/data/my-agent-logs`" in inputs
    assert "tau-bench" not in inputs and "swe-agent" not in inputs


def test_the_first_lines_say_the_seeds_deterministic_arm_transformed_nothing(
    tmp_path: Path,
) -> None:
    run_dir = toolout_run(tmp_path, simulated=False)
    path = io.analysis_dir(run_dir) / "cache.parquet"
    pl.read_parquet(path).with_columns(
        pl.lit(0).alias("applications_new"), pl.lit(0).alias("applications_reused")
    ).write_parquet(path)
    text = _report(run_dir)
    before_corpus = text.split("## Corpus")[0]
    assert "policy `deterministic`) transforms nothing on this corpus" in before_corpus
    assert "0 applications under every configuration" in before_corpus


def test_no_such_line_when_the_seeds_arm_applied_something(tmp_path: Path) -> None:
    run_dir = toolout_run(tmp_path, simulated=False)  # 1 new + 2 reused applications
    assert "transforms nothing" not in _report(run_dir)
