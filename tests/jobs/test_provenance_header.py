"""Every report opens with the shared provenance header, built from the manifest (issue 13)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from matplotlib.figure import Figure

from jobs import io
from jobs.figures_common import SIMULATED_MARK
from jobs.provenance_header import SIMULATED_BANNER, probe_lines, provenance
from jobs.toolout.report import render_report as render_toolout_report
from pipeline import studies
from pipeline.store import schemas
from pipeline.store.parts import write_part
from tests.jobs.jobs_testdata import analyze_and_report, row, write_manifest, write_run

SHA = "ab" * 32
PROBES = [
    {"config_id": "sim-01", "shape": "schema", "verdict": "ok", "detail": ""},
    {"config_id": "sim-00", "shape": "schema", "verdict": "ok", "detail": ""},
    {"config_id": "sim-02", "shape": "schema", "verdict": "unreachable", "detail": "refused"},
]


def carrier_manifest(**extra: Any) -> dict[str, Any]:
    return {
        "run_id": "20260101T000000-sim-small-abababab",
        "fixture_sha256": SHA,
        "git_sha": "c0ffee" * 6 + "abcd",
        "versions": {"foldsweep": "0.1.0", "python": "3.11.7"},
        "probes": PROBES,
        "config": {
            "panel": {"kind": "sim", "name": "sim"},
            "repeats": 2,
            "study": {"name": "carrier", "scenario": {"name": "small"}, "arms": {"j": {}}},
        },
        "extra": {"panel": "sim", **extra},
    }


def carrier_rows(simulated: bool) -> list[dict[str, Any]]:
    return [
        row(cfg, arm, rep, 7 + rep, simulated=simulated)
        for cfg in ("sim-00", "sim-01")
        for rep in (0, 1)
        for arm in ("j", "q")
    ]


def test_carrier_report_opens_with_simulated_then_the_provenance_of_the_run(
    tmp_path: Path,
) -> None:
    run_dir = write_run(tmp_path, carrier_rows(True), manifest=carrier_manifest(simulated=True))
    lines = analyze_and_report(run_dir).read_text(encoding="utf-8").splitlines()
    assert lines[0] == SIMULATED_BANNER
    assert lines[2] == "# foldsweep analysis"
    header = "\n".join(lines[:20])
    for fact in (
        "| run | `20260101T000000-sim-small-abababab` |",
        "| study | carrier |",
        "| simulated | **yes** |",
        "| panel | sim |",
        "| inputs | scenario `small` |",
        f"| input SHA-256 (fixture or corpus) | `{SHA}` |",
        "| repeats | 2 |",
        "| git sha | " + "c0ffee" * 6 + "abcd |",
        "| versions | foldsweep 0.1.0, python 3.11.7 |",
        "| probe verdicts (per configuration) | schema ok: sim-00, sim-01<br>"
        "schema unreachable: sim-02 |",
    ):
        assert fact in header, fact


def test_carrier_report_takes_arms_from_the_plan_and_simulated_from_the_rows(
    tmp_path: Path,
) -> None:
    manifest = carrier_manifest()
    manifest["config"]["panel"] = {"kind": "recent", "name": "recent"}
    plan = [{"config_id": "sim-00", "arm": arm, "repeat": 0} for arm in ("q", "j")]
    run_dir = write_run(tmp_path, carrier_rows(True), manifest=manifest, plan=plan)
    text = analyze_and_report(run_dir).read_text(encoding="utf-8")
    assert text.startswith(SIMULATED_BANNER)  # a simulated row is enough
    assert "| arms | `j`, `q` |" in text


def test_a_real_run_says_not_simulated_and_has_no_banner(tmp_path: Path) -> None:
    manifest = carrier_manifest()
    manifest["config"]["panel"] = {"kind": "recent", "name": "recent"}
    run_dir = write_run(tmp_path, carrier_rows(False), manifest=manifest)
    text = analyze_and_report(run_dir).read_text(encoding="utf-8")
    assert text.startswith("# foldsweep analysis")
    assert "| simulated | no |" in text and SIMULATED_MARK not in text


def test_a_run_without_a_manifest_still_gets_a_header_saying_what_is_unknown(
    tmp_path: Path,
) -> None:
    run_dir = write_run(tmp_path, carrier_rows(False))
    text = analyze_and_report(run_dir).read_text(encoding="utf-8")
    assert f"| run | `{run_dir.name}` |" in text
    assert "| git sha | — |" in text


def test_probe_lines_group_configurations_with_the_same_verdicts() -> None:
    assert probe_lines(PROBES, "sim") == (
        "schema ok: sim-00, sim-01",
        "schema unreachable: sim-02",
    )
    assert probe_lines([], "offline") == ("none: an offline panel has no endpoint to probe",)


def test_provenance_is_simulated_when_the_panel_is_sim_even_without_rows() -> None:
    facts = provenance(carrier_manifest(), [], run_id="r", rows_simulated=False)
    assert facts.simulated and facts.arms == "`j`"  # no plan: the study config's arms


def test_nothing_ran_report_carries_the_provenance_table(tmp_path: Path) -> None:
    from jobs.nothing_ran import render

    manifest = carrier_manifest()
    text = render(manifest, [{"config_id": "sim-02", "arm": "j", "repeat": 0}], tmp_path)
    assert "| probe verdicts (per configuration) |" in text
    assert f"| input SHA-256 (fixture or corpus) | `{SHA}` |" in text


# --- the tool-output study: the same header from the same call -------------------------------

TOOLOUT = studies.layout(studies.definition("toolout"))


def toolout_run(run_dir: Path, *, simulated: bool) -> Path:
    """A toolout run directory with one rows part and the analysis outputs the report reads."""
    schema = TOOLOUT.schema("rows")
    record = dict.fromkeys(schema.names)
    record.update(
        run_id="r",
        row_id="offline:x/control/g0/r0/a0",
        config_id="offline:x",
        arm="control",
        execution_group=0,
        repeat=0,
        attempt=0,
        simulated=simulated,
        valid=True,
        retryable=False,
    )
    write_part(run_dir, "rows", [record], part_name="00000000-test", layout=TOOLOUT)
    plan = dict.fromkeys(schemas.PLAN.names)
    plan.update(run_id="r", config_id="offline:x", arm="control", execution_group=0, repeat=0)
    pq.write_table(pa.Table.from_pylist([plan], schema=schemas.PLAN), run_dir / "plan.parquet")
    write_manifest(
        run_dir,
        run_id="toolout-run",
        study="toolout",
        fixture_sha256=SHA,
        config={
            "panel": {"kind": "offline", "name": "offline"},
            "repeats": 1,
            "study": {"name": "toolout", "corpora": ["swe-agent"], "policies": []},
        },
        extra={"panel": "offline", "simulated": False, "inputs": {"transcripts": 22}},
    )
    out = io.analysis_dir(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(
        {
            "config_id": ["offline:x"],
            "policy": ["deterministic"],
            "pairs": [3],
            "median_saving_usd": [0.1],
            "median_ci_lo": [0.0],
            "median_ci_hi": [0.2],
            "mean_saving_usd": [0.1],
            "mean_ci_lo": [0.0],
            "mean_ci_hi": [0.2],
            "cheaper": [2],
            "dearer": [1],
            "saving_pct_of_control": [4.0],
            "mde_mean_usd": [0.3],
            "small_sample": [True],
        }
    ).write_parquet(out / "savings.parquet")
    cache: dict[str, list[Any]] = {
        "config_id": ["offline:x"],
        "policy": ["deterministic"],
        "cache_hit_share": [0.5],
        "bytes_removed": [10],
        "applications_new": [1],
        "applications_reused": [2],
        "sessions_transformed": [1],
    }
    for cause in ("cold_start", "rewrite", "ttl_expiry", "below_minimum", "granularity"):
        cache[f"miss_{cause}_tokens"] = [0]
    pl.DataFrame(cache).write_parquet(out / "cache.parquet")
    pl.DataFrame(
        schema={"config_id": pl.String, "policy": pl.String, "asked": pl.UInt32}
    ).write_parquet(out / "gate.parquet")
    pl.DataFrame(
        {
            "config_id": ["offline:x"],
            "policy": ["deterministic"],
            "transformations": [2],
            "premium_ratio": [9.0],
            "median_d_over_r": [0.5],
            "median_n_star": [18.0],
            "median_later_requests": [4.0],
            "share_repaid": [0.5],
            "small_sample": [True],
        }
    ).write_parquet(out / "breakeven.parquet")
    pl.DataFrame(
        {
            "corpus": ["swe-agent"],
            "transcripts": [22],
            "requests": [232],
            "tool_outputs": [232],
            "large_outputs": [36],
            "tool_output_share": [0.48],
            "near_no_op": [False],
        }
    ).write_parquet(out / "corpus.parquet")
    return run_dir


def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Figure]:
    figures: dict[str, Figure] = {}
    original = io.write_png

    def keep(figure: Any, path: Path) -> Path:
        figures[path.name] = figure
        return original(figure, path)

    monkeypatch.setattr(io, "write_png", keep)
    return figures


def test_toolout_report_opens_with_the_shared_header(tmp_path: Path) -> None:
    text = render_toolout_report(toolout_run(tmp_path, simulated=False), TOOLOUT).read_text("utf-8")
    lines = text.splitlines()
    assert lines[0] == "# Tool-output compaction under prompt caching (replay)"
    for fact in (
        "| study | toolout |",
        "| inputs | corpora `swe-agent`; transcripts 22 |",
        f"| input SHA-256 (fixture or corpus) | `{SHA}` |",
        "| arms | `control` |",
        "| probe verdicts (per configuration) | none: an offline panel has no endpoint to probe |",
    ):
        assert fact in text, fact
    assert "| 3† |" in text  # savings over three pairs are flagged
    assert "small sample" in text


def test_toolout_figures_are_marked_only_when_the_run_is_simulated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = captured(monkeypatch)
    run_dir = toolout_run(tmp_path / "sim", simulated=True)
    text = render_toolout_report(run_dir, TOOLOUT).read_text("utf-8")
    assert text.startswith(SIMULATED_BANNER)
    assert set(figures) == {"savings.png", "breakeven.png"}
    for name, figure in figures.items():
        assert [t.get_text() for t in figure.texts].count(SIMULATED_MARK) == 2, name
    figures.clear()
    render_toolout_report(toolout_run(tmp_path / "real", simulated=False), TOOLOUT)
    assert figures and not any(
        SIMULATED_MARK in [t.get_text() for t in f.texts] for f in figures.values()
    )
