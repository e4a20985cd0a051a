"""The reasoning-trace analysis end to end over a tiny run directory written through the store."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from jobs.traces.run_all import OUTPUTS
from pipeline import studies
from pipeline.config.schema import AnalysisConfig, BootstrapConfig
from pipeline.studies.traces import DEFINITION
from tests.jobs.traces_rundir import write_run

ANALYSIS = AnalysisConfig(bootstrap=BootstrapConfig(resamples=200))


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run_dir = write_run(tmp_path_factory.mktemp("traces") / "run")
    studies.analyze_and_report(DEFINITION, run_dir, ANALYSIS)  # as `pipeline analyze RUN`
    return run_dir


def test_analyze_writes_every_output_the_figures_and_the_report(real_run: Path) -> None:
    out = real_run / "analysis"
    assert all((out / f"{name}.parquet").is_file() for name in OUTPUTS)
    assert (out / "frontier.png").stat().st_size > 0 and (out / "visibility.png").is_file()
    classes = pl.read_parquet(out / "template_classes.parquet")
    assert classes.height == 3 + 4  # three shipped, two endpoints x two renderers


def test_the_report_states_the_template_findings_plainly(real_run: Path) -> None:
    report = (real_run / "analysis" / "report.md").read_text(encoding="utf-8")
    assert "`Qwen-Qwen3-0.6B` is `after_last_user`" in report
    assert "`moonshotai-Kimi-K2-Thinking` is `until_plain_reply`" in report
    assert "`R2E-Gym-qwen3-preserve-thinking` (shipped) drops tool calls altogether" in report
    assert "Where they disagree" in report  # local-b's server renders another template
    assert (
        "![visibility matrix](visibility.png)" in report and "![frontier](frontier.png)" in report
    )


def test_the_report_names_the_synthetic_items_and_the_decoding_sent(real_run: Path) -> None:
    report = (real_run / "analysis" / "report.md").read_text(encoding="utf-8")
    assert "**Synthetic items** (1" in report and "`synthetic/s7-n5000`" in report
    assert "| local-a | naive | 2/2 | 0.0 |" in report
    assert "**Tiny models summarise poorly.**" in report  # naive kept 0%, extractive 100%


def test_report_runs_the_analysis_when_outputs_are_missing(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "run")
    report = studies.report(DEFINITION, run_dir)  # as `pipeline report RUN`
    assert report.is_file() and (run_dir / "analysis" / "compression_paired.parquet").is_file()


def test_a_simulated_run_marks_its_figures_and_report(tmp_path: Path) -> None:
    run_dir = write_run(tmp_path / "run", simulated=True)
    report = studies.analyze_and_report(DEFINITION, run_dir, ANALYSIS)
    assert report.read_text(encoding="utf-8").startswith("SIMULATED")
    for figure in ("frontier.png", "visibility.png"):
        assert b"SIMULATED" in (run_dir / "analysis" / figure).read_bytes()


def test_an_unsimulated_run_has_unmarked_figures(real_run: Path) -> None:
    assert b"SIMULATED" not in (real_run / "analysis" / "frontier.png").read_bytes()
