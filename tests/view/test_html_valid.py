"""The viewer's own HTML parses with no error under html5lib's strict parser (the WHATWG
parsing rules, failing on the first parse error): the served index, a unit page and the
compare page, and the exported file of one run and of two (issue 35, item 8)."""

from __future__ import annotations

from pathlib import Path

import html5lib  # type: ignore[import-untyped]  # no stubs; a dev dependency of the tests
import pytest
from html5lib.html5parser import ParseError  # type: ignore[import-untyped]

from pipeline.view import export, open_runs, pages
from pipeline.view.links import Links
from tests.view.rundirs import carrier_run, toolout_run


def assert_valid(html: str) -> None:
    parser = html5lib.HTMLParser(strict=True)
    try:
        parser.parse(html)
    except ParseError:
        (position, code, data), *_ = parser.errors
        line, column = position
        context = html.splitlines()[line - 1][max(0, column - 80) : column + 40]
        pytest.fail(f"{code} {data} at line {line}, column {column}: {context!r}")


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("html-valid")
    return [carrier_run(out / "carrier"), toolout_run(out / "toolout")]


def test_the_strict_parser_fails_on_a_parse_error() -> None:
    with pytest.raises(pytest.fail.Exception, match="unexpected-end-tag"):
        assert_valid("<!doctype html><html><head><title>t</title></head><body></p></body></html>")


def test_the_served_index_unit_and_compare_pages_are_valid(run_dirs: list[Path]) -> None:
    runs = open_runs(run_dirs)
    links = Links()
    assert_valid(pages.document(pages.index(runs, links), links))
    assert_valid(pages.document(pages.compare(runs, links, {}), links))
    for run in runs:
        assert_valid(pages.document(pages.overview(run, links), links))
        assert_valid(pages.document(pages.units(run, links, {}), links))
        row_id = pages.units_of(run)["row_id"][0]
        assert_valid(pages.document(pages.unit(run, links, row_id, {}), links))


def test_the_export_of_one_run_is_valid(run_dirs: list[Path]) -> None:
    for run in open_runs(run_dirs):
        assert_valid(export.export_html(run))


def test_the_export_of_two_runs_is_valid(run_dirs: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "two.html"
    export.write_export(open_runs(run_dirs), out)
    assert_valid(out.read_text(encoding="utf-8"))
