"""The study seam, proved: the example study (examples/echo) runs through `sweep` with its own
table, its own analysis and its own unit page.

Nothing under pipeline/ names it: it is registered in pyproject.toml and configured by
conf/study/echo.yaml, like the built-in studies, and `study=echo` on the command line is all
it takes; the sweep plans, probes, dispatches, stores and analyses it like the carrier study.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest

from examples.echo import EchoDefinition
from examples.echo.study import PREFIX
from pipeline import studies
from pipeline.store.manifest import load_manifest
from pipeline.store.reader import read_plan, read_table

ECHO = EchoDefinition()
STUDY = "study=echo"


@pytest.mark.slow
@pytest.mark.ray
def test_the_example_study_runs_through_sweep_with_its_own_table(tmp_path: Path) -> None:
    from pipeline.commands.start import execute_sweep

    end = execute_sweep(
        [
            STUDY,
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
    assert "every endpoint echoed: 8 units, 8 echoes recorded." in report
    assert studies.definition("echo") == ECHO


def test_unknown_key_in_the_example_study_node_is_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    from pipeline.commands.start import execute_sweep
    from pipeline.config.strict import ConfigError

    with pytest.raises(ConfigError, match=r"study\.colour"):
        execute_sweep([STUDY, "+panel=sim", "+study.colour=red", f"out_dir={tmp_path / 'runs'}"])
    assert not (tmp_path / "runs").exists()


def test_the_example_study_gets_the_shared_nothing_ran_report_with_no_code_of_its_own(
    tmp_path: Path,
) -> None:
    """Issue 18: the nothing-ran rule is the registry's (pipeline.studies), for every study."""
    from tests.jobs.test_jobs_nothing_ran import REFUSED, manifest, plan, probes, write_plan_only

    run_dir = write_plan_only(
        tmp_path,
        plan({"ep-a": "probe:unreachable"}),
        manifest(probes("ep-a", "unreachable", REFUSED)),
    )
    from pipeline.config.schema import AnalysisConfig

    report = studies.analyze_and_report(studies.definition("echo"), run_dir, AnalysisConfig())
    first = report.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("Nothing ran: 1 of 1 configuration unreachable")
    assert studies.nothing_ran_cause(run_dir) == first.removeprefix("Nothing ran: ").rstrip(".")
