"""A run without a single attempt still gets a report that opens with why nothing ran; a
simulated run's figures say SIMULATED."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from matplotlib.figure import Figure

from jobs import io
from jobs.figures_common import SIMULATED_MARK
from jobs.nothing_ran import cause_line, config_causes
from pipeline import studies
from tests.jobs.jobs_testdata import (
    analyze_and_report,
    manifest_json,
    row,
    write_manifest,
    write_run,
)

URL = "http://127.0.0.1:9/v1"
REFUSED = f"connection refused at {URL} (transport: ClientConnectorError: Cannot connect)"


def probes(config_id: str, verdict: str, detail: str) -> list[dict[str, str]]:
    return [
        {"config_id": config_id, "shape": "plain", "verdict": verdict, "detail": detail},
        {
            "config_id": config_id,
            "shape": "context_length",
            "verdict": verdict,
            "detail": f"not attempted: {verdict} on plain",
        },
    ]


def plan(
    reasons: dict[str, str | None], arms: tuple[str, ...] = ("j", "q")
) -> list[dict[str, Any]]:
    return [
        {
            "config_id": config_id,
            "arm": arm,
            "repeat": 0,
            "status": "not_run" if reason else "done",
            "not_run_reason": reason,
        }
        for config_id, reason in reasons.items()
        for arm in arms
    ]


def manifest(verdicts: list[dict[str, str]], **extra: Any) -> dict[str, Any]:
    return manifest_json(
        status="nothing_ran",
        probes=verdicts,
        counts={
            "planned": 4,
            "valid": 0,
            "invalid": {},
            "not_run": {"probe:unreachable": 4},
            "pending": 0,
        },
        extra={"overrides": ["+panel=endpoint", f"endpoint.base_url={URL}", "out_dir=x"]} | extra,
    )


def write_plan_only(run_dir: Path, records: list[dict[str, Any]], man: dict[str, Any]) -> Path:
    """A run directory as a sweep leaves it when nothing ran: manifest and plan, no rows/."""
    from pipeline.store import schemas

    defaults = {"run_id": "run-test", "execution_group": 0, "schedule_position": 0}
    columns = {n: [r.get(n, defaults.get(n)) for r in records] for n in schemas.PLAN.names}
    pq.write_table(pa.Table.from_pydict(columns, schema=schemas.PLAN), run_dir / "plan.parquet")
    (run_dir / "manifest.json").write_text(json.dumps(man), encoding="utf-8")
    return run_dir


def test_report_of_a_run_where_nothing_ran_opens_with_why_per_configuration(
    tmp_path: Path,
) -> None:
    man = manifest(probes("ep-a", "unreachable", REFUSED) + probes("ep-b", "unreachable", REFUSED))
    run_dir = write_plan_only(
        tmp_path, plan({"ep-a": "probe:unreachable", "ep-b": "probe:unreachable"}), man
    )
    report = studies.report(studies.definition("carrier"), run_dir)  # as `pipeline report RUN`
    assert report == run_dir / "analysis" / "report.md"
    lines = report.read_text(encoding="utf-8").splitlines()
    assert (
        lines[0] == f"Nothing ran: 2 of 2 configurations unreachable: connection refused at {URL}."
    )
    text = "\n".join(lines)
    assert f"| ep-a | 2 | probe:unreachable | plain | unreachable | {REFUSED} |" in text
    assert "not attempted: unreachable on plain" in text
    assert "Sweep status: nothing_ran." in text
    # the fix is spelled out, without the run-local overrides
    assert f"`python -m pipeline probe +panel=endpoint endpoint.base_url={URL}`" in text
    assert not (run_dir / "analysis" / "summary.json").exists()


def test_cause_line_groups_configurations_by_verdict_and_counts_panel_exclusions() -> None:
    auth = (
        "HTTP 401 at https://gw.example/v1: the key in GW_KEY was refused; check it (HTTP 401: x)"
    )
    verdicts = (
        probes("a", "unreachable", REFUSED)
        + probes("b", "unreachable", REFUSED)
        + probes("c", "auth_rejected", auth)
    )
    man = manifest(verdicts, panel_excluded=[{"config_id": "old", "model": "m", "reason": "r"}])
    records = plan({"a": "probe:unreachable", "b": "probe:unreachable", "c": "probe:auth_rejected"})
    assert cause_line(man, records) == (
        f"2 of 4 configurations unreachable: connection refused at {URL}; "
        "1 of 4 configurations auth_rejected: HTTP 401 at https://gw.example/v1: the key in "
        "GW_KEY was refused; check it; 1 excluded by the panel's rules"
    )
    causes = {c.config_id: c for c in config_causes(man, records)}
    assert causes["c"].verdict == "auth_rejected" and causes["c"].not_run == 2


def test_cause_of_a_failed_run_is_the_recorded_error_not_the_probe_verdicts() -> None:
    man = manifest(probes("a", "unreachable", REFUSED))
    man["status"] = "failed"
    man["extra"]["error"] = "local server a died from SIGILL (illegal instruction)"
    assert cause_line(man, plan({"a": "probe:unreachable"})) == man["extra"]["error"]


def sim_rows(simulated: bool) -> list[dict[str, Any]]:
    return [
        row(cfg, arm, rep, checks, simulated=simulated, fill=0.2 + 0.1 * rep)
        for cfg in ("A", "B")
        for rep in (0, 1)
        for arm, checks in (("j", 3), ("q", 9 + rep))
    ]


def captured_figures(monkeypatch: pytest.MonkeyPatch) -> dict[str, Figure]:
    figures: dict[str, Figure] = {}
    original = io.write_png

    def keep(figure: Any, path: Path) -> Path:
        figures[path.name] = figure
        return original(figure, path)

    monkeypatch.setattr(io, "write_png", keep)
    return figures


def figure_texts(figure: Figure) -> list[str]:
    return [t.get_text() for t in figure.texts]


def test_every_figure_of_a_simulated_run_carries_the_simulated_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = captured_figures(monkeypatch)
    analyze_and_report(write_run(tmp_path, sim_rows(simulated=True)))
    assert {"recall_heatmap.png", "forest_q_vs_j.png", "fill_q_vs_j.png"} <= set(figures)
    for name, figure in figures.items():
        assert figure_texts(figure).count(SIMULATED_MARK) == 2, name  # watermark + label


def test_figures_of_a_run_planned_on_sim_endpoints_are_marked_from_the_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = captured_figures(monkeypatch)
    run_dir = write_run(
        tmp_path, sim_rows(simulated=False), manifest={"extra": {"simulated": True}}
    )
    analyze_and_report(run_dir)
    assert figures and all(SIMULATED_MARK in figure_texts(f) for f in figures.values())


def test_figures_of_a_real_run_carry_no_simulated_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    figures = captured_figures(monkeypatch)
    analyze_and_report(write_run(tmp_path, sim_rows(simulated=False)))
    assert figures
    assert not any(SIMULATED_MARK in figure_texts(f) for f in figures.values())


def test_report_of_a_run_whose_server_failed_before_planning_says_why_and_how_to_go_on(
    tmp_path: Path,
) -> None:
    error = "local server a died with SIGILL: rebuild it portably: make llama-server-rebuild"
    write_manifest(tmp_path, status="failed", probes=[], extra={"error": error})
    text = studies.report(studies.definition("carrier"), tmp_path).read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"Nothing ran: {error}."
    assert "before its plan was written" in text
    assert "start a new sweep: this run has no plan to resume" in text
