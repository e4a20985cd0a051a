"""`view --export` of several runs (issue 35, item 8): each run's pages, their index and
comparison in one file; element ids unique across it; a unit's views kept up to a cap."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.commands import view as view_command
from pipeline.view import export, open_runs
from pipeline.view.anchors import prefixed
from pipeline.view.links import ExportLinks
from tests.view.rundirs import carrier_run, toolout_run


def duplicate_ids(html: str) -> dict[str, int]:
    ids = Counter(re.findall(r'\sid="([^"]*)"', html))
    return {name: n for name, n in ids.items() if n > 1}


def sections(html: str) -> list[str]:
    return re.findall(r'<section class="page" id="([^"]*)"', html)


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("export-several")
    return carrier_run(out / "carrier"), toolout_run(out / "toolout")


@pytest.fixture(scope="module")
def exported(two_runs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("export-file") / "two.html"
    export.write_export(open_runs(list(two_runs)), out)
    return out.read_text(encoding="utf-8")


def test_an_export_of_two_runs_holds_each_runs_pages_their_index_and_comparison(
    exported: str,
) -> None:
    found = sections(exported)
    for page in ("index", "compare", "r0-overview", "r0-units", "r0-u0", "r0-chunks"):
        assert page in found, page
    assert {"r1-overview", "r1-units", "r1-u0", "r1-u1"} <= set(found)
    index = exported.split('id="index"', 1)[1].split("</section>", 1)[0]
    assert 'href="#r0-overview"' in index and 'href="#r1-overview"' in index
    assert 'href="#compare"' in index
    compare = exported.split('<section class="page" id="compare"', 1)[1].split(
        "</section>", maxsplit=1
    )[0]
    assert 'href="#r0-units?config_id=' in compare or "0 (configuration, arm) cells" in compare
    # a unit page's link to its run's own page (the carrier's fixture) names that run's copy
    unit = exported.split('<section class="page" id="r0-u0"', 1)[1].split("</section>", maxsplit=1)[
        0
    ]
    assert 'href="#r0-chunks"' in unit and 'href="#chunks"' not in unit
    assert '<script type="application/json" id="r0-units-data">' in exported
    assert '<script type="application/json" id="r1-units-data">' in exported


def test_an_export_of_two_runs_repeats_no_element_id(exported: str) -> None:
    assert exported.count('id="r0-u0-verdict"') == 1
    assert duplicate_ids(exported) == {}


def test_an_export_of_one_run_repeats_no_element_id(two_runs: tuple[Path, Path]) -> None:
    (run,) = open_runs([two_runs[0]])
    html = export.export_html(run)
    assert duplicate_ids(html) == {}
    assert '<section class="page" id="units" data-ids="">' in html  # a tag, not escaped text
    assert 'id="u0-verdict"' in html and 'id="units-table"' in html  # the units keep theirs


def test_the_toolout_unit_says_how_many_transcripts_the_export_keeps(
    two_runs: tuple[Path, Path],
) -> None:
    (run,) = open_runs([two_runs[1]])
    html = export.export_html(run, views_per_unit=3)
    assert "Showing 1 of 1 transcripts of this unit: the export keeps at most 3 per unit" in html
    assert "--transcripts-per-unit N" in html
    assert '<section class="page" id="u0-v0">' in html  # the transcript's own section
    assert 'href="#u0-v0"' in html


def test_a_units_views_past_the_cap_get_no_link() -> None:
    from pipeline.view.runs import Run

    run = Run(index=0, path=Path("/nowhere"), manifest={}, study="toolout")
    links = ExportLinks(unit_ids={(0, "row"): "u4"}, cap=2)
    assert links.view(run, "row", transcript="a") == "#u4-v0"
    assert links.view(run, "row", transcript="b") == "#u4-v1"
    assert links.view(run, "row", transcript="c") is None  # past the cap
    assert links.view(run, "row", transcript="a") == "#u4-v0"  # asked again: the same
    assert links.views["u4"] == [(("transcript", "a"),), (("transcript", "b"),)]


def test_prefixed_ids_keep_a_sections_own_references_and_leave_scripts_alone() -> None:
    page = (
        '<label for="box">x</label><input id="box"><a href="#box?x=1">in</a>'
        '<a href="#chunks">run page</a><a href="#elsewhere">other</a>'
        "<script>var s = ' id=\"box\"';</script>"
    )
    out = prefixed(page, "u3-", {"chunks": "r1-chunks"})
    assert '<label for="u3-box">' in out and '<input id="u3-box">' in out
    assert 'href="#u3-box?x=1"' in out and 'href="#r1-chunks"' in out
    assert 'href="#elsewhere"' in out
    assert "var s = ' id=\"box\"';" in out


@pytest.mark.parametrize("value", ["0", "-1", "1001"])
def test_a_transcripts_cap_out_of_range_is_one_line_before_any_run_is_read(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-run"
    argv = ["view", "--export", str(tmp_path / "o.html"), str(missing)]
    assert cli.main([*argv, "--transcripts-per-unit", value]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"error: view: --transcripts-per-unit must be 1..1000, not {value}"
    assert not (tmp_path / "o.html").exists()


def test_a_transcripts_cap_without_export_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["view", str(tmp_path), "--transcripts-per-unit", "3"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: view: --transcripts-per-unit applies to --export only"
    )


def test_the_commands_defaults_are_the_exports() -> None:
    assert view_command.DEFAULT_VIEWS == export.VIEWS_PER_UNIT
    assert view_command.MAX_VIEWS == export.MAX_VIEWS_PER_UNIT
