"""The served viewer follows a run still being written (issue 35, item 4).

A run dir whose manifest and rows change after the app started, written through the store's
own writers: the overview, the units page and `/run/{i}/status` show the new counts and, once
the manifest is closed, "finished"; a run that does not change is not read again; and the
viewer writes nothing to the run dir (its bytes are the same before and after every read).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from pipeline.view import Run, build_app, open_runs
from pipeline.view.live import fingerprint
from tests.view.live_run import LAYOUT, UNITS, LiveRun, tree_digest


@pytest.fixture
def run(tmp_path: Path) -> LiveRun:
    return LiveRun.start(tmp_path / "run")


@pytest.fixture
def shown(run: LiveRun) -> Run:
    return open_runs([run.path])[0]


@pytest.fixture
async def client(shown: Run) -> AsyncIterator[TestClient]:
    async with TestClient(TestServer(build_app([shown]))) as test_client:
        yield test_client


async def _read(client: TestClient, run: LiveRun, path: str) -> str:
    """One page's text; the run dir's bytes are the same after the request as before."""
    before = tree_digest(run.path)
    response = await client.get(path)
    assert response.status == 200, await response.text()
    text = await response.text()
    assert tree_digest(run.path) == before, f"{path} changed the run dir"
    return text


async def _status(client: TestClient, run: LiveRun) -> dict[str, Any]:
    before = tree_digest(run.path)
    response = await client.get("/run/0/status")
    assert response.status == 200
    assert response.headers["Cache-Control"] == "no-store"
    body: dict[str, Any] = await response.json()
    assert tree_digest(run.path) == before
    return body


def _count(html: str, verdict: str) -> int:
    """The units the overview's counts table gives `verdict` (its no-reason line)."""
    found = re.search(
        rf'<tr class="count-{verdict}"><td>[^<]*</td>\s*<td>—</td>\s*'
        rf'<td class="num"><a [^>]*>(\d+)</a>',
        html,
    )
    assert found, f"no {verdict} line in the counts table"
    return int(found.group(1))


async def test_a_run_written_after_the_viewer_started_shows_its_new_counts_then_finished(
    client: TestClient, run: LiveRun
) -> None:
    page = await _read(client, run, "/run/0/")
    assert 'id="run-status" data-status="running">running<' in page
    assert 'data-status-url="/run/0/status"' in page
    assert (_count(page, "valid"), _count(page, "pending")) == (1, UNITS - 1)
    assert "the tables list" not in page  # a running run's counts are its tables'
    first = await _status(client, run)
    assert first["status"] == "running" and first["finished"] is False
    assert first["counts"] is None  # a running run's manifest counts nothing yet

    run.commit(1, valid=False)  # a second part, by the store's batch writer
    page = await _read(client, run, "/run/0/")
    assert (_count(page, "valid"), _count(page, "pending")) == (1, UNITS - 2)
    assert 'class="reason" href="/run/0/units?verdict=invalid&amp;reason=catch_up">catch_up' in page
    second = await _status(client, run)
    assert second["version"] != first["version"]
    assert second["finished"] is False
    units = await _read(client, run, "/run/0/units?verdict=invalid")
    assert "cfg-a/j/g0/r1/a0" in units

    run.commit(2)
    run.finish()
    page = await _read(client, run, "/run/0/")
    assert re.search(r'data-status="completed">finished: completed at \S+<', page)
    assert 'id="live-run"' not in page  # nothing to poll once finished
    assert (_count(page, "valid"), _count(page, "pending")) == (2, 0)
    last = await _status(client, run)
    assert last["finished"] is True and last["status"] == "completed"
    assert isinstance(last["finished_at"], str)
    counts = {"planned": 3, "valid": 2, "invalid": {"catch_up": 1}, "not_run": {}, "pending": 0}
    assert last["counts"] == counts
    index = await _read(client, run, "/")
    assert "<td>completed</td>" in index


async def test_an_unchanged_run_is_not_read_again(
    client: TestClient, run: LiveRun, shown: Run
) -> None:
    await _read(client, run, "/run/0/")
    held = shown._frames
    await _read(client, run, "/run/0/units")
    assert shown._frames is held  # the cached tables were kept
    assert not shown.refresh()
    run.commit(1)
    assert shown.refresh() and shown._frames == {}


def test_the_fingerprint_sees_a_part_and_a_manifest_but_not_a_temporary(run: LiveRun) -> None:
    before = fingerprint(run.path, LAYOUT.tables)
    (run.path / "rows" / ".tmp-00000009-p.parquet").write_bytes(b"half a part")
    assert fingerprint(run.path, LAYOUT.tables) == before
    (run.path / "rows" / ".tmp-00000009-p.parquet").unlink()
    run.commit(1)
    after_part = fingerprint(run.path, LAYOUT.tables)
    assert after_part != before
    run.finish()
    assert fingerprint(run.path, LAYOUT.tables) != after_part


async def test_the_status_poll_reads_no_table(client: TestClient, run: LiveRun, shown: Run) -> None:
    await _read(client, run, "/run/0/")
    run.commit(1)
    body = await _status(client, run)
    assert body["version"] == shown.version and body["status"] == "running"
    assert shown._frames == {} and "final" not in shown.__dict__  # dropped, not read again
