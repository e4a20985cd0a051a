"""`sweep study=traces` end to end on real llama-servers: templates, recital, compression."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline import studies
from pipeline.store.reader import read_table
from tests.reliability.harness import SweepHarness

pytestmark = [pytest.mark.local_model, pytest.mark.ray, pytest.mark.slow]

QWEN3 = "local-smollm2-135m-q4_1-qwen3-template"
KIMI = "local-smollm2-135m-q4_1-kimi-template"


def table(run_dir: Path, name: str) -> pl.DataFrame:
    frame = pl.from_arrow(read_table(run_dir, name, studies.layout(studies.definition("traces"))))
    assert isinstance(frame, pl.DataFrame)
    return frame


def test_traces_sweep_pins_the_templates_through_llama_cpp_and_scores_summaries(
    harness: SweepHarness, tmp_path: Path
) -> None:
    result = harness.run(
        [
            "study=traces",
            "+panel=local-templates",
            "study.arms=[visibility,extractive,naive]",
            "study.compression.real_per_band=1",
            "study.compression.synthetic_per_band=0",
            f"out_dir={tmp_path}",
        ],
        timeout_s=900,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    run_dir = result.run_dir
    assert run_dir is not None
    rows = table(run_dir, "rows")
    assert rows.height == 4 * 3 and rows["valid"].all() and not rows["simulated"].any()
    probes = table(run_dir, "template_probes").join(rows.select("row_id", "config_id"), on="row_id")
    live = probes.filter(
        (pl.col("renderer") == "llama-server") & (pl.col("secret_field") == "reasoning_content")
    )

    def kept(config_id: str, structure: str) -> bool:
        cell = live.filter((pl.col("config_id") == config_id) & (pl.col("structure") == structure))
        assert cell.height > 0
        return bool(cell["in_rendered"].all())

    # llama.cpp's own engine, as the seed found on its live server: Qwen3 keeps a tool-call
    # turn's reasoning while the loop is open and drops it after a new user turn; Kimi keeps it.
    assert kept(QWEN3, "tool1_open") and not kept(QWEN3, "tool1_user")
    assert kept(KIMI, "tool1_user") and not kept(QWEN3, "plain_user")
    recitals = table(run_dir, "recitals")
    assert recitals.height > 0 and recitals["recited"].is_not_null().all()
    compressions = table(run_dir, "compressions").join(rows.select("row_id", "arm"), on="row_id")
    naive = compressions.filter(pl.col("arm") == "naive")
    assert naive.height > 0
    assert (naive["sent_temperature"] == 0.0).all() and naive["greedy"].all()
    assert (naive["sent_enable_thinking"] == False).all()  # noqa: E712 - a column, not a bool
    extractive = compressions.filter((pl.col("arm") == "extractive") & (pl.col("facts_total") > 0))
    assert (extractive["retention"] == 1.0).all()
    # issue 21: local llama-servers count tokens with the model's vocabulary (/tokenize)
    assert (compressions["token_counter"] == "llama-server /tokenize").all()
    assert (compressions["trace_tokens"] > 0).all()
    counted = compressions.filter(pl.col("summary_tokens") > 0)
    assert counted.height > 0 and counted["compression_tokens"].is_not_null().all()
    analysis = run_dir / "analysis"
    report = (analysis / "report.md").read_text()
    assert "## Part 1" in report and "## Part 2" in report
    assert "## The traces themselves" in report and "### Token ratios" in report
    assert (analysis / "trace_lengths.png").is_file() and (analysis / "trace_quality.png").is_file()
    assert (analysis / "frontier.png").is_file() and (analysis / "visibility.png").is_file()
