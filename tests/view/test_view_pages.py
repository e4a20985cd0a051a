"""The viewer's pages over a small traces run: what each page says, checked against the tables."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from aiohttp.test_utils import TestClient, TestServer

from pipeline import studies
from pipeline.store import read_table
from pipeline.view import build_app, export_html, open_runs
from pipeline.view.guard import PathRefused
from pipeline.view.markdown import render
from pipeline.view.units import UnitQuery, query_units, unit_frame
from tests.view.rundirs import ROOT

LAYOUT = studies.layout(studies.definition("traces"))


def table(run_dir: Path, name: str) -> pl.DataFrame:
    frame = pl.from_arrow(read_table(run_dir, name, LAYOUT))
    assert isinstance(frame, pl.DataFrame)
    return frame


@pytest.fixture
async def client(traces_dir: Path) -> TestClient:
    async with TestClient(TestServer(build_app(open_runs([traces_dir, traces_dir])))) as c:
        yield c  # type: ignore[misc]


async def text(client: TestClient, path: str) -> str:
    response = await client.get(path)
    assert response.status == 200, (path, response.status)
    return await response.text()


async def test_every_page_of_a_simulated_run_says_simulated(client: TestClient) -> None:
    pages = [
        "/",
        "/compare",
        "/run/0/",
        "/run/0/units",
        "/run/0/unit?row=local-a/naive/g0/r0/a0",
        "/run/0/unit?row=local-b/visibility/g0/r0/a0",
    ]
    for path in pages:
        assert 'id="simulated-banner"' in await text(client, path), path


async def test_overview_counts_add_up_and_link_to_their_units(
    client: TestClient, traces_dir: Path
) -> None:
    html = await text(client, "/run/0/")
    assert "planned = valid + invalid by reason + not run by reason + pending" in html
    rows = table(traces_dir, "rows")
    assert f'/run/0/units">{rows.height}</a>' in html
    assert "/run/0/units?verdict=valid" in html
    assert "Part 1" in html  # the report's sections
    assert 'src="/run/0/figure/visibility.png"' in html
    assert "small sample" in html  # two configurations, one unit per cell


async def test_units_filter_by_a_study_column_and_page_on_the_server(client: TestClient) -> None:
    html = await text(client, "/run/0/units?part=compression&per=2&sort=arm")
    assert "4 of 6 units match" in html and "Page 1 of 2" in html
    assert html.count('class="unit-link"') == 2
    second = await text(client, "/run/0/units?part=compression&per=2&sort=arm&page=2")
    assert second.count('class="unit-link"') == 2 and "naive" in second


def test_unit_query_sorts_descending_and_clamps_the_page(traces_dir: Path) -> None:
    (run,) = open_runs([traces_dir])
    frame = unit_frame(run)
    query = UnitQuery.parse({"sort": "arm", "desc": "1", "page": "99"}, frame.columns)
    page = query_units(frame, query, ["row_id", "arm"])
    assert page.query.page == 1 and page.rows[0]["arm"] == "visibility"


async def test_visibility_unit_marks_secrets_and_shows_the_renderers_disagreement(
    client: TestClient, traces_dir: Path
) -> None:
    html = await text(client, "/run/0/unit?row=local-b/visibility/g0/r0/a0")
    probes = table(traces_dir, "template_probes").filter(
        pl.col("row_id") == "local-b/visibility/g0/r0/a0"
    )
    shapes = probes["shape"].unique().to_list()
    assert all(shape in html for shape in shapes)
    assert '<mark class="secret">ZQX-8842</mark>' in html
    assert 'id="render-diff"' in html  # local-b's server keeps every reasoning


async def test_compression_unit_marks_facts_kept_lost_and_matches_the_table(
    client: TestClient, traces_dir: Path
) -> None:
    html = await text(client, "/run/0/unit?row=local-a/naive/g0/r0/a0")
    rows = table(traces_dir, "compressions").filter(pl.col("row_id") == "local-a/naive/g0/r0/a0")
    for item in rows.to_dicts():
        assert (
            item["item_id"] in html
            and f"{item['retained_total']} of {item['facts_total']} facts" in html
        )
    assert '<mark class="lost">' in html  # naive keeps no fact


async def test_unknown_unit_is_a_404_with_one_line(client: TestClient) -> None:
    response = await client.get("/run/0/unit?row=nope")
    assert response.status == 404 and "no unit row 'nope'" in await response.text()


def test_export_inlines_figures_and_has_every_unit(traces_dir: Path) -> None:
    (run,) = open_runs([traces_dir])
    html = export_html(run)
    assert "data:image/png;base64," in html and 'src="/run' not in html
    assert len(re.findall(r'<section class="page" id="u\d+"', html)) == 6
    assert not re.search(r'(src|href)="(https?:)?//', html)  # nothing from the network
    assert 'id="simulated-banner"' in html


def test_report_markdown_never_links_a_figure_the_guard_refuses() -> None:
    def src(name: str) -> str | None:
        if ".." in name:
            raise PathRefused(name)
        return f"/f/{name}"

    html = render("![ok](a.png)\n\n| a | b |\n|---|---|\n| `x` | <script> |", src)
    assert '<img class="figure" alt="ok" src="/f/a.png">' in html
    assert "&lt;script&gt;" in html and "<script>" not in html


def test_view_export_command_writes_one_file_and_a_bad_dir_is_one_line(
    traces_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "run.html"
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "view", "--export", str(out), str(traces_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert out.is_file() and str(out) in done.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "pipeline", "view", str(tmp_path / "missing")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: run directory not found")
    assert len(bad.stderr.strip().splitlines()) == 1


async def test_units_form_filters_by_any_column_named_in_it(client: TestClient) -> None:
    html = await text(client, "/run/0/units?col=part&val=visibility")
    assert "2 of 6 units match <code>part = visibility</code>" in html


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_view_prints_its_url_and_stops_cleanly_on_a_signal(traces_dir: Path, signum: int) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "view", str(traces_dir), "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    line = process.stdout.readline()
    assert re.match(r"viewing 1 run\(s\) at http://127\.0\.0\.1:\d+/ \(Ctrl-C stops\)", line)
    process.send_signal(signum)
    assert process.wait(timeout=30) == 0
    assert "viewer stopped" in process.stdout.read() and "Traceback" not in process.stderr.read()
