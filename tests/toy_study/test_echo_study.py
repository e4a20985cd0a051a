"""The study seam, proved: a toy study (echo.py) runs through `sweep` with its own table.

Nothing under pipeline/sweep or pipeline/store changes for it: it is registered from the test,
its config node lives in a test-local conf/ (FOLDSWEEP_CONF), and the sweep plans, probes,
dispatches, stores and analyses it like the carrier study.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow.compute as pc
import pytest

from jobs.outcome_frame import framed
from pipeline import studies
from pipeline.store.manifest import load_manifest
from pipeline.store.reader import read_plan, read_table
from tests.toy_study.echo import PREFIX, EchoDefinition

ROOT = Path(__file__).resolve().parents[2]
ECHO = EchoDefinition()


@pytest.fixture
def echo_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """conf/ with study=echo as the default and the carrier's groups left out."""
    conf = tmp_path / "conf"
    shutil.copytree(ROOT / "conf", conf)
    lines = (conf / "config.yaml").read_text(encoding="utf-8").splitlines()
    body = [line for line in lines if not line.startswith(("defaults:", "  - "))]
    head = ["defaults:", "  - study: echo", "  - _self_"]
    (conf / "config.yaml").write_text("\n".join(head + body) + "\n", encoding="utf-8")
    (conf / "study" / "echo.yaml").write_text("arms: [a, b]\n", encoding="utf-8")
    monkeypatch.setenv("FOLDSWEEP_CONF", str(conf))
    studies.register(ECHO)
    yield conf


@pytest.mark.slow
@pytest.mark.ray
def test_toy_study_runs_through_sweep_with_its_own_table(echo_conf: Path, tmp_path: Path) -> None:
    from pipeline.commands.start import execute_sweep

    end = execute_sweep(
        [
            "+panel=sim",
            "sim.configs=2",
            "repeats=2",
            f"out_dir={tmp_path / 'runs'}",
            "progress=false",
        ]
    )
    assert end.status == "completed", end.message
    layout = studies.layout(ECHO)
    rows = read_table(end.run_dir, "rows", layout)
    echoes = read_table(end.run_dir, "echoes", layout)
    plan = read_plan(end.run_dir)
    assert plan is not None and plan.num_rows == 2 * 2 * 2  # configs x arms x repeats
    assert rows.num_rows == 8 and echoes.num_rows == 8
    assert pc.all(rows.column("valid")).as_py() and pc.all(rows.column("echo_matches")).as_py()
    assert all(text.startswith(PREFIX) for text in echoes.column("echoed").to_pylist())
    assert set(echoes.column("row_id").to_pylist()) == set(rows.column("row_id").to_pylist())
    manifest = load_manifest(end.run_dir)
    assert manifest.study == "echo" and manifest.counts is not None
    assert manifest.counts.valid == 8
    assert "carrier" not in {t for t in layout.tables}
    report = (end.run_dir / "analysis" / "report.md").read_text(encoding="utf-8")
    assert '"echoes": 8' in report


def test_unknown_key_in_the_toy_study_node_is_refused_before_anything_starts(
    echo_conf: Path, tmp_path: Path
) -> None:
    from pipeline.commands.start import execute_sweep
    from pipeline.config.strict import ConfigError

    with pytest.raises(ConfigError, match=r"study\.colour"):
        execute_sweep(["+panel=sim", "+study.colour=red", f"out_dir={tmp_path / 'runs'}"])
    assert not (tmp_path / "runs").exists()


def test_the_toy_study_gets_the_shared_nothing_ran_report_with_no_code_of_its_own(
    echo_conf: Path, tmp_path: Path
) -> None:
    """Issue 18: the nothing-ran rule is the frame's (jobs.outcome_frame), for every study."""
    from tests.jobs.test_jobs_nothing_ran import REFUSED, manifest, plan, probes, write_plan_only

    run_dir = write_plan_only(
        tmp_path,
        plan({"ep-a": "probe:unreachable"}),
        manifest(probes("ep-a", "unreachable", REFUSED)),
    )
    echo = framed(studies.definition("echo"))
    report = echo.analyze(run_dir, None)
    first = report.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("Nothing ran: 1 of 1 configuration unreachable")
    assert echo.nothing_ran_cause(run_dir) == first.removeprefix("Nothing ran: ").rstrip(".")
