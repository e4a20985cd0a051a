"""The carrier unit page: the fold chain with catch-up and clipping marks, planted values
marked, and the checks as the table holds them."""

from __future__ import annotations

from pathlib import Path

from pipeline.view import export_html, open_runs, pages
from pipeline.view.links import Links
from tests.view.rundirs import CARRIER_ROW, carrier_run


def test_carrier_unit_marks_catch_up_clipping_and_planted_values(tmp_path: Path) -> None:
    (run,) = open_runs([carrier_run(tmp_path / "run")])
    html = str(pages.unit(run, Links(), CARRIER_ROW, {}).content)
    assert html.count('<div class="fold"') == 2
    assert '<span class="flag">catch-up</span><span class="flag">clipped</span>' in html
    assert (
        '<mark class="graded">23857</mark>' in html and '<mark class="planted">TN-1</mark>' in html
    )
    assert "state path /srv/x.lock" in html  # fold 1's input chunk, from the fixture
    assert "<td><code>/srv/x.lock</code></td><td>unknown</td>" in html
    assert '<td class="fail">false</td>' in html and "abstention" in html
    assert 'class="pass">valid</span>' in html


def test_carrier_export_shows_the_chunks_once_and_links_them(tmp_path: Path) -> None:
    (run,) = open_runs([carrier_run(tmp_path / "run")])
    html = export_html(run)
    assert '<section class="page" id="chunks">' in html and 'href="#chunks"' in html
    assert html.count("state path /srv/x.lock") == 1
