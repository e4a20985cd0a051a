"""Every `pipeline query RUN_DIR "SQL"` in the README and docs/*.md runs (issue 20 defect 2).

The queries run against small hand-made run directories of the study whose tables they name
(a toolout run built from the runner's own records for a few shipped transcripts, no Ray; a
carrier run otherwise). An ambiguous column names the tables that hold it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from jobs.toolout.inputs import load_cache_models
from pipeline import studies
from pipeline.commands.query import run_query
from pipeline.endpoints.offline import OfflineClient
from pipeline.store.parts import write_part
from pipeline.study import UnitContext, UnitSpec
from pipeline.toolout.importers import import_file
from pipeline.toolout.runner import ToolOutRunner
from pipeline.usererror import UserError
from tests.jobs.jobs_testdata import row, write_manifest, write_run
from tests.toolout import read, shipped

REPO = Path(__file__).resolve().parents[2]
QUERY = re.compile(r'pipeline query RUN_DIR "([^"]+)"')
TOOLOUT_TABLES = re.compile(r"\b(sessions|turns|decisions)\b")
TOOLOUT = studies.layout(studies.definition("toolout"))
CONTROL = {"name": "control", "kind": "control"}


def documented_queries() -> list[tuple[str, str]]:
    found = []
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for sql in QUERY.findall(path.read_text(encoding="utf-8")):
            if not re.match(r"\s*(select|with)\b", sql, re.IGNORECASE):
                continue  # a placeholder ("SQL"), not a query
            found.append((path.relative_to(REPO).as_posix(), sql))
    return found


def toolout_run(run_dir: Path) -> Path:
    source = shipped("mini-swe-agent")[0]
    transcripts = import_file(read(source), source).transcripts
    runner = ToolOutRunner(
        transcripts,
        {"control": CONTROL},
        load_cache_models()["deepseek"],
        "deepseek-v4-pro",
        think_time_s=30.0,
        corpus_sha256="x",
        skipped=0,
    )
    spec = UnitSpec(
        "r", "deepseek:deepseek-v4-pro", "deepseek-v4-pro", "deepseek", "control", 0, 0, 0
    )
    result = asyncio.run(runner.run(spec, OfflineClient("c"), UnitContext(1, 0.0)))
    row_id = "deepseek:deepseek-v4-pro/control/g0/r0/a0"
    shared = {"run_id": "r", "row_id": row_id}
    rows = dict.fromkeys(TOOLOUT.schema("rows").names)
    rows.update(result.row)
    rows.update(shared, config_id=spec.config_id, arm="control", execution_group=0, repeat=0)
    rows.update(attempt=0, valid=True, retryable=False, simulated=False, cost_usd=0.0)
    write_part(run_dir, "rows", [rows], part_name="00000000-test", layout=TOOLOUT)
    for table, records in result.tables.items():
        full = [{**shared, **r} for r in records]
        write_part(run_dir, table, full, part_name="00000000-test", layout=TOOLOUT)
    write_manifest(run_dir, run_id="r", study="toolout")
    return run_dir


def carrier_run(run_dir: Path) -> Path:
    rows = [row("A", "j", 0, 7), row("A", "q", 0, 14)]
    return write_run(run_dir, rows, manifest={})


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("docs-queries")
    return {"toolout": toolout_run(base / "toolout"), "carrier": carrier_run(base / "carrier")}


def test_the_docs_hold_queries_to_check() -> None:
    assert len(documented_queries()) >= 2


@pytest.mark.parametrize(("where", "sql"), documented_queries())
def test_every_documented_query_runs(where: str, sql: str, runs: dict[str, Path]) -> None:
    study = "toolout" if TOOLOUT_TABLES.search(sql) else "carrier"
    result = run_query(runs[study], sql)
    assert result.height > 0, (where, sql)


def test_an_ambiguous_column_names_the_tables_that_hold_it(runs: dict[str, Path]) -> None:
    sql = "select arm, sum(cost_usd) from sessions join rows using (row_id) group by arm"
    with pytest.raises(UserError) as caught:
        run_query(runs["toolout"], sql)
    assert str(caught.value) == (
        "query failed: cost_usd is in sessions and rows: write sessions.cost_usd"
    )
