"""The viewer's decision page and the tables it cites, in-process: the same answers as
`decide`, nothing analysed or written by the viewer, the cited rows shown, and one line for a
table or a column that is not there."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from pipeline.view import build_app, open_runs


def _digest(run_dir: Path) -> str:
    found = hashlib.sha256()
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file()):
        found.update(str(path.relative_to(run_dir)).encode())
        found.update(path.read_bytes())
    return found.hexdigest()


@pytest.fixture
def unanalysed(traces_dir: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "unanalysed"
    shutil.copytree(traces_dir, copy)
    (copy / "analysis" / "inputs.json").unlink()
    return copy


@pytest.fixture
async def client(traces_dir: Path, unanalysed: Path) -> AsyncIterator[TestClient]:
    async with TestClient(TestServer(build_app(open_runs([traces_dir, unanalysed])))) as found:
        yield found


async def test_the_index_links_the_decision_and_the_page_shows_each_answer(
    client: TestClient, traces_dir: Path, unanalysed: Path
) -> None:
    before = (_digest(traces_dir), _digest(unanalysed))
    index = await (await client.get("/")).text()
    assert 'id="decision-link"' in index and 'href="/decision"' in index
    response = await client.get("/decision")
    page = await response.text()
    assert response.status == 200
    assert "<h1>Decision: how to compact this agent's context</h1>" in page
    # the simulated traces run never recommends: its answers sit under the banner
    assert "No real run is on this page, so nothing is recommended" in page
    assert "SIMULATED: what this page would say if these rows were real" in page
    assert 'data-source="analysis/template_classes.parquet"' in page
    assert 'href="/run/0/table/analysis/template_classes.parquet?template=' in page
    # the run never analysed is named with the command that analyses it, and left alone
    assert f"Not on this page: {unanalysed} is not analysed yet" in page
    assert (_digest(traces_dir), _digest(unanalysed)) == before
    assert not (unanalysed / "analysis" / "inputs.json").exists()


async def test_a_cited_table_shows_the_cited_rows(client: TestClient) -> None:
    every = await (await client.get("/run/0/table/analysis/template_classes.parquet")).text()
    assert "Every row:" in every
    first = every.split("<tbody>")[1].split("<td>")[1].split("</td>")[0]
    response = await client.get(f"/run/0/table/analysis/template_classes.parquet?template={first}")
    page = await response.text()
    assert response.status == 200 and f"The rows where template={first}:" in page
    assert page.split("<tbody>")[1].count("<tr>") == int(
        page.split(f"template={first}: ")[1].split(" ")[0]
    )


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("/run/0/table/analysis/nothing.parquet", "has no table analysis/nothing.parquet"),
        ("/run/0/table/analysis/template_classes.parquet?no_column=x", "has no such column"),
        ("/run/0/table/analysis/report.md", "is not a table"),
    ],
)
async def test_a_table_or_column_that_is_not_there_is_one_line(
    client: TestClient, path: str, line: str
) -> None:
    response = await client.get(path)
    assert response.status == 404 and line in await response.text()
