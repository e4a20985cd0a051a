"""Issue 32 §17: the tool-output report leads with the mean paired saving and its interval.

On the shipped corpus 50 of 55 (configuration, policy) cells printed a median CI of
[+0.000000, +0.000000] (most transcripts are near no-op) while the mean's interval was
informative (gpt-5 `swe_agent_last_5`: −$0.0038, CI [−0.0049, −0.0029]) and sat only in
savings.parquet. The viewer's overview also flagged every toolout cell "(n=1)", counting units
where each unit pairs every transcript of the corpus.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from jobs import io
from jobs.toolout.report import render_report
from pipeline.view.overview import small_sample
from tests.jobs.test_provenance_header import TOOLOUT, toolout_run


def savings_lines(text: str) -> list[str]:
    start = text.index("## Paired savings against control")
    block = text[start:].split("\n\n## ", 1)[0]
    return [line for line in block.splitlines() if line.startswith("|")]


def test_the_savings_table_leads_with_the_mean_and_its_ci_the_median_after(
    tmp_path: Path,
) -> None:
    run_dir = toolout_run(tmp_path, simulated=False)
    path = io.analysis_dir(run_dir) / "savings.parquet"
    pl.read_parquet(path).with_columns(
        pl.lit(-0.0038).alias("mean_saving_usd"),
        pl.lit(-0.0049).alias("mean_ci_lo"),
        pl.lit(-0.0029).alias("mean_ci_hi"),
        pl.lit(0.0).alias("median_saving_usd"),
        pl.lit(0.0).alias("median_ci_lo"),
        pl.lit(0.0).alias("median_ci_hi"),
    ).write_parquet(path)
    header, _, row = savings_lines(render_report(run_dir, TOOLOUT).read_text("utf-8"))
    titles = [cell.strip() for cell in header.strip("|").split("|")]
    assert titles[:5] == ["configuration", "policy", "n", "mean", "mean 95% CI"]
    assert titles.index("median") > titles.index("mean 95% CI")
    assert "median 95% CI" not in titles  # the uninformative [0, 0] interval is not a headline
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[3:5] == ["-0.003800", "[-0.004900, -0.002900]"]


def test_the_overview_counts_a_toolout_cells_pairs_not_its_one_unit() -> None:
    units = pl.DataFrame(
        {
            "config_id": ["gpt-5", "gpt-5", "tiny"],
            "arm": ["control", "swe_agent_last_5", "control"],
            "verdict": ["valid", "valid", "valid"],
            "transcripts": [233, 233, 2],
        }
    )
    small, _ = small_sample(units)
    assert small == ["tiny × control (n=2)"]  # 233 pairs are no small sample


def test_the_overview_still_counts_valid_units_where_a_unit_is_one_observation() -> None:
    units = pl.DataFrame(
        {
            "config_id": ["c", "c", "c"],
            "arm": ["j", "j", "q"],
            "verdict": ["valid", "invalid", "valid"],
        }
    )
    assert small_sample(units)[0] == ["c × j (n=1)", "c × q (n=1)"]
