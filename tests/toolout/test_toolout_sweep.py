"""`python -m pipeline sweep study=toolout` end to end: offline, no key, real transcripts."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline import studies
from pipeline.store.manifest import load_manifest
from pipeline.store.reader import read_table
from tests.reliability.harness import SweepHarness

pytestmark = [pytest.mark.slow, pytest.mark.ray]

CORPORA = "study.corpora=[swe-agent,mini-swe-agent]"
POLICIES = "study.policies=[control,deterministic_first_pass,swe_agent_last_5]"


def test_toolout_sweep_writes_its_tables_and_report_offline(
    harness: SweepHarness, tmp_path: Path
) -> None:
    result = harness.run(
        [
            "study=toolout",
            "study.corpora=[swe-agent,mini-swe-agent]",
            POLICIES,
            f"out_dir={tmp_path}",
        ],
        timeout_s=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = result.run_dir
    assert run_dir is not None
    layout = studies.layout(studies.definition("toolout"))
    rows = pl.from_arrow(read_table(run_dir, "rows", layout))
    assert isinstance(rows, pl.DataFrame)
    # 5 priced configurations x (3 policies + the oracle)
    assert rows.height == 5 * 4 and rows["valid"].all()
    assert (rows["requests"] == 0).all() and (rows["cost_usd"] == 0).all()  # nothing sent
    sessions = read_table(run_dir, "sessions", layout)
    assert sessions.num_rows == 20 * 24  # units x transcripts (22 SWE-agent + 2 mini-swe-agent)
    manifest = load_manifest(run_dir)
    assert manifest.study == "toolout" and manifest.probes == []
    assert manifest.extra["inputs"]["transcripts"] == 24
    savings = pl.read_parquet(run_dir / "analysis" / "savings.parquet")
    window = savings.filter(pl.col("policy") == "swe_agent_last_5")
    by_config = dict(zip(window["config_id"], window["mean_saving_usd"], strict=True))
    assert by_config["deepseek:deepseek-v4-pro"] < 0 < by_config["no-cache:deepseek-v4-pro"]
    # the oracle bounds the deterministic kind of rewrite (a moving window that drops every old
    # output, safety floor or not, can save more where nothing is cached)
    first_pass = savings.filter(pl.col("policy") == "deterministic_first_pass").select(
        "config_id", pl.col("mean_saving_usd").alias("first_pass")
    )
    oracle = savings.filter(pl.col("policy") == "oracle").join(first_pass, on="config_id")
    assert oracle.height == 5
    assert (oracle["mean_saving_usd"] >= oracle["first_pass"] - 1e-12).all()
    report = (run_dir / "analysis" / "report.md").read_text(encoding="utf-8")
    assert "mini-swe-agent" in report and "near no-op" in report
    assert (run_dir / "analysis" / "breakeven.png").is_file()
    assert "warning: schedule" not in result.stderr  # a replay's order does not matter


def test_toolout_refuses_a_simulated_panel_before_anything_starts(
    harness: SweepHarness, tmp_path: Path
) -> None:
    result = harness.run(["study=toolout", "+panel=sim", f"out_dir={tmp_path}"], timeout_s=120)
    assert result.returncode == 2
    # the simulator has no prompt cache to measure: only offline and served panels
    assert "runs on panel kinds endpoint, hosted, local, offline, not sim" in result.stderr
    assert not any(tmp_path.iterdir())
