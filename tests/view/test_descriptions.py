"""Each arm shows its description wherever the viewer names it: the overview's legend, the
report's per-arm tables, the units table, the unit header, the compare page and the export;
and each report gives the legend of its arms (issue 35 item 6)."""

from __future__ import annotations

import re
from pathlib import Path

from markupsafe import escape

from pipeline import studies
from pipeline.view import export_html, open_runs, pages
from pipeline.view.links import Links
from tests.view.rundirs import CARRIER_ROW, carrier_run

TRACES = studies.definition("traces").describe().by_name  # type: ignore[attr-defined]
CARRIER = studies.definition("carrier").describe().by_name  # type: ignore[attr-defined]
ARMS = ("extractive", "naive", "visibility")  # the traces run's (tests/jobs/traces_rundir.py)


def titled(text: str) -> str:
    return f'title="{escape(text)}"'


def test_overview_legend_lists_each_arm_of_the_run_with_its_description(
    traces_dir: Path,
) -> None:
    (run,) = open_runs([traces_dir])
    html = str(pages.overview(run, Links()).content)
    legend = html.split('id="arm-legend"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td [^>]*><a [^>]*>([^<]+)</a></td><td>([^<]*)</td></tr>", legend)
    assert [(arm, desc) for arm, desc in rows] == [(a, escape(TRACES[a])) for a in ARMS]


def test_overview_report_tables_carry_the_arm_description_as_a_tooltip(
    traces_dir: Path,
) -> None:
    (run,) = open_runs([traces_dir])
    html = str(pages.overview(run, Links()).content)
    report = html.split("<h2>Report</h2>", 1)[1]
    assert f"<td {titled(TRACES['naive'])}>" in report  # a per-arm table of part 2


def test_units_table_arm_cells_carry_the_description(traces_dir: Path) -> None:
    (run,) = open_runs([traces_dir])
    html = str(pages.units(run, Links(), {}).content)
    for arm in ARMS:
        assert re.search(
            rf'<td {re.escape(titled(TRACES[arm]))}><a class="value"[^>]*>{arm}<', html
        )


def test_unit_header_names_the_arm_with_its_description(tmp_path: Path) -> None:
    (run,) = open_runs([carrier_run(tmp_path / "run")])
    html = str(pages.unit(run, Links(), CARRIER_ROW, {}).content)
    assert titled(CARRIER["j"]) in html
    assert f'<span class="arm-description">({escape(CARRIER["j"])})</span>' in html


def test_compare_page_arm_cells_carry_the_description(traces_dir: Path) -> None:
    runs = open_runs([traces_dir, traces_dir])
    html = str(pages.compare(runs, Links(), {}).content)
    for arm in ARMS:
        assert f"<td {titled(TRACES[arm])}>{arm}</td>" in html


def test_export_keeps_the_legend_and_the_tooltips(traces_dir: Path) -> None:
    (run,) = open_runs([traces_dir])
    html = export_html(run)
    assert 'id="arm-legend"' in html
    assert f"<td {titled(TRACES['extractive'])}>extractive</td>" in html  # the static table


def test_report_gives_the_legend_of_the_arms_the_run_planned(traces_dir: Path) -> None:
    report = (traces_dir / "analysis" / "report.md").read_text(encoding="utf-8")
    section = report.split("## Arms\n\n", 1)[1].split("\n\n", 1)[0]
    assert section.splitlines() == [
        "| arm | description |",
        "|---|---|",
        *[f"| `{arm}` | {TRACES[arm]} |" for arm in ARMS],
    ]
