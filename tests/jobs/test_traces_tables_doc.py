"""docs/tables.md documents every column of the reasoning-trace study's tables and outputs.

Parsed, not grepped (as tests/toolout/test_tables_doc.py): a column counts as documented only
when it is a name in the first cell of a table row under its own table's `###` heading. The
analysis outputs are checked against the columns the jobs really write, over a tiny run.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from jobs.traces.run_all import OUTPUTS, analyze
from pipeline.config.schema import AnalysisConfig, BootstrapConfig
from pipeline.store.schemas import ROW_KEY, ROW_OUTCOME
from pipeline.traces.records import COMPRESSIONS, RECITALS, ROW_COLUMNS, TEMPLATE_PROBES
from tests.jobs.traces_rundir import LAYOUT, write_run

DOC = Path(__file__).resolve().parents[2] / "docs" / "tables.md"
SECTION = "## Reasoning-trace study tables (study=traces)"
STUDY_TABLE_HEAD = ("run_id", "row_id")
SAME_AS_PROBES = "template_matrix"  # documented as template_probes' columns, not row by row


def _section() -> str:
    text = DOC.read_text(encoding="utf-8")
    assert SECTION in text, f"docs/tables.md has no section {SECTION!r}"
    body = text.split(SECTION, 1)[1]
    following = re.search(r"^## ", body, flags=re.MULTILINE)
    return body[: following.start()] if following else body


def _documented(table: str) -> set[str]:
    """Column names in the first cells of the table rows under `### <table> ...`."""
    parts = re.split(r"^### ", _section(), flags=re.MULTILINE)
    found = [p for p in parts if p.split(" ", 1)[0].strip("`").split("/")[-1] == table]
    assert len(found) == 1, f"expected one '### {table} ...' subsection, found {len(found)}"
    names: set[str] = set()
    for line in found[0].splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        first = line.strip("|").split("|", 1)[0]
        names.update(n.strip().strip("`") for n in first.split(","))
    names.discard("column")
    return names


SCHEMAS = {
    "rows": [name for name, _ in (*ROW_KEY, *ROW_OUTCOME)] + [c.name for c in ROW_COLUMNS],
    "template_probes": [c.name for c in TEMPLATE_PROBES.columns],
    "recitals": [c.name for c in RECITALS.columns],
    "compressions": [c.name for c in COMPRESSIONS.columns],
}


def test_every_traces_table_column_is_documented() -> None:
    missing = {t: [n for n in names if n not in _documented(t)] for t, names in SCHEMAS.items()}
    assert not any(missing.values()), f"undocumented in docs/tables.md: {missing}"


def test_no_documented_traces_table_column_is_stale() -> None:
    stale = {
        t: sorted(_documented(t) - set(names) - set(STUDY_TABLE_HEAD))
        for t, names in SCHEMAS.items()
    }
    assert not any(stale.values()), f"documented but not in the schema: {stale}"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    run_dir = write_run(tmp_path_factory.mktemp("doc") / "run")
    analyze(run_dir, AnalysisConfig(bootstrap=BootstrapConfig(resamples=20)), LAYOUT)
    return {
        name: pl.read_parquet(run_dir / "analysis" / f"{name}.parquet").columns for name in OUTPUTS
    }


def test_every_analysis_output_column_is_documented_and_none_is_stale(
    outputs: dict[str, list[str]],
) -> None:
    problems = {}
    for name, columns in outputs.items():
        if name == SAME_AS_PROBES:
            assert set(columns) == set(SCHEMAS["template_probes"]) - set(STUDY_TABLE_HEAD)
            continue
        documented = _documented(f"{name}.parquet")
        problems[name] = (sorted(set(columns) - documented), sorted(documented - set(columns)))
    bad = {k: v for k, v in problems.items() if v != ([], [])}
    assert not bad, f"(undocumented, stale) per output: {bad}"
