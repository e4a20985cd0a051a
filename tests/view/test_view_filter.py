"""The units table's filter expressions, text search, presets and column chooser (issue 35, item 3),
on the server: the shared cases of tests/view/filter_cases.py, and the pages that use them."""

from __future__ import annotations

import html
import itertools
import re
from pathlib import Path

import polars as pl
import pytest
from aiohttp.test_utils import TestClient, TestServer

from pipeline.view import build_app, open_runs
from pipeline.view.filter_expr import FilterError, parse, to_polars
from pipeline.view.search import search
from pipeline.view.units import DEFAULT_COLUMNS, unit_frame
from tests.view.filter_cases import A_J, A_Q, B_J, B_Q, CASES, ERRORS, PLANTED, filter_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return filter_run(tmp_path_factory.mktemp("view-filter") / "run")


@pytest.fixture(scope="module")
def units(run_dir: Path) -> pl.DataFrame:
    (run,) = open_runs([run_dir])
    return unit_frame(run)


@pytest.fixture
async def client(run_dir: Path) -> TestClient:
    async with TestClient(TestServer(build_app(open_runs([run_dir])))) as c:
        yield c  # type: ignore[misc]


async def page(client: TestClient, path: str) -> str:
    response = await client.get(path)
    assert response.status == 200, (path, response.status)
    return await response.text()


UNIT_LINK = re.compile(r'class="unit-link" href="[^"]*">([^<]*)</a>')


def shown_units(text: str) -> set[str]:
    return {html.unescape(r) for r in UNIT_LINK.findall(text)}


def selected(units: pl.DataFrame, expression: str) -> set[str]:
    node = parse(expression, units.columns)
    chosen = units if node is None else units.filter(to_polars(node, units.schema))
    return set(chosen["row_id"].to_list())


@pytest.mark.parametrize(("expression", "expected"), CASES, ids=[c[0] or "empty" for c in CASES])
def test_a_filter_expression_selects_the_expected_units(
    units: pl.DataFrame, expression: str, expected: set[str]
) -> None:
    assert selected(units, expression) == expected


@pytest.mark.parametrize(("expression", "message"), ERRORS, ids=[e[0] for e in ERRORS])
def test_a_bad_filter_expression_is_one_line_naming_the_position(
    units: pl.DataFrame, expression: str, message: str
) -> None:
    with pytest.raises(FilterError) as caught:
        parse(expression, units.columns)
    assert str(caught.value) == message


async def test_the_issue_filter_gives_its_units_on_the_page(client: TestClient) -> None:
    text = await page(client, '/run/0/units?filter=recall+<+0.5+and+arm+%3D+"q"')
    assert shown_units(text) == {A_Q, B_Q}
    assert "2 of 6 units match" in text
    assert 'value="recall &lt; 0.5 and arm = &#34;q&#34;"' in text  # kept in its box


async def test_a_bad_filter_on_the_page_is_one_line_and_not_a_500(client: TestClient) -> None:
    text = await page(client, "/run/0/units?filter=recall+<")
    line = text.split('id="filter-error">')[1].split("</p>")[0]
    assert "at 9" in line and "the filter is not applied" in line and "\n" not in line
    assert "6 of 6 units match" in text


async def test_presets_link_to_their_filters(client: TestClient) -> None:
    text = await page(client, "/run/0/units")
    presets = [p.split('"')[0] for p in text.split('class="preset" href="')[1:]]
    assert len(presets) == 3
    invalid = await page(client, html.unescape(presets[0]))
    assert shown_units(invalid) == {B_J}
    below = await page(client, html.unescape(presets[1]))
    assert "3 of 6 units match" in below
    answer = await page(client, html.unescape(presets[2]))
    assert 'value="answer_text contains &#34;&#34;"' in answer  # the text to look for goes in


async def test_a_search_finds_a_planted_string_in_a_final_text_and_says_where(
    client: TestClient,
) -> None:
    text = await page(client, f"/run/0/units?q={PLANTED.lower()}")
    assert shown_units(text) == {B_Q}
    assert f"<td>final_carrier: …s state path /srv/x.lock note {PLANTED} kept</td>" in text
    assert 'id="search-stopped"' not in text


async def test_a_search_combines_with_a_filter_and_reads_error_details(client: TestClient) -> None:
    assert shown_units(await page(client, "/run/0/units?q=reply+empty")) == {B_J}
    both = await page(client, '/run/0/units?q=srv&filter=arm+%3D+"q"')
    assert shown_units(both) == {B_Q, "cfg-c/q/g0/r0/a0"}
    assert shown_units(await page(client, '/run/0/units?q=srv&filter=arm+%3D+"j"')) == set()


def test_a_search_stops_at_its_limit_and_says_so(units: pl.DataFrame) -> None:
    found = search(units, "facts", limit=2)
    assert found.frame["row_id"].to_list() == [A_J, A_Q]
    assert found.stopped == "stopped at 2 matches, having read 6 of 6 units"
    assert search(units, "facts", limit=5).stopped is None  # five units have "## Facts"


def test_a_search_stops_at_its_time_limit_and_says_how_far_it_read(units: pl.DataFrame) -> None:
    from pipeline.view import search as search_mod

    ticks = itertools.count()  # one second per look at the clock
    big = pl.concat([units] * (search_mod.CHUNK // units.height + 2))
    found = search(big, "facts", limit=big.height, seconds=1.5, clock=lambda: float(next(ticks)))
    assert found.stopped == (
        f"stopped after 1.5 s, having read {search_mod.CHUNK} of {big.height} units"
    )
    assert 0 < found.frame.height <= search_mod.CHUNK


async def test_the_table_shows_the_default_columns_and_the_chooser_changes_them(
    client: TestClient,
) -> None:
    text = await page(client, "/run/0/units")
    head = text.split("<thead>")[1].split("</thead>")[0]
    shown = [h.split('"')[0] for h in head.split('data-column="')[1:]]
    assert shown == list(DEFAULT_COLUMNS)  # the run has every one of them
    assert "answer_text" not in shown
    chosen = await page(client, "/run/0/units?cols=arm,answer_text")
    head = chosen.split("<thead>")[1].split("</thead>")[0]
    assert [h.split('"')[0] for h in head.split('data-column="')[1:]] == [
        "row_id",
        "arm",
        "answer_text",
    ]
    everything = await page(client, "/run/0/units?cols=all")
    assert everything.count("<th ") > len(DEFAULT_COLUMNS)
    assert 'href="/run/0/units?cols=arm%2Canswer_text%2Crecall&amp;page=1"' in chosen


async def test_the_old_equality_filters_still_apply_beside_an_expression(
    client: TestClient,
) -> None:
    text = await page(client, '/run/0/units?arm=j&filter=recall+>+0.5+or+verdict+%3D+"invalid"')
    assert shown_units(text) == {A_J, B_J}
    assert "<code>arm = j</code>" in text
