"""Issue 35 in Chromium: the lineage row of a planted value lost at fold 2 says fold 2, the fold
chain flags that fold, and the overview counts it under its arm and fold index."""

from __future__ import annotations

import hashlib
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.view.browser import chromium, console_errors, viewer
from tests.view.test_view_lineage import LOST_ROW, lineage_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _digest(run_dir: Path) -> dict[str, str]:
    return {
        str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(run_dir.rglob("*"))
        if p.is_file()
    }


def test_the_lineage_row_of_a_value_lost_at_fold_2_says_fold_2(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run_dir = lineage_run(tmp_path / "run")
    before = _digest(run_dir)
    with viewer(run_dir) as url, chromium() as browser:
        browser.get(f"{url}/run/0/unit?row={quote(LOST_ROW, safe='')}")
        row = browser.find_element(By.CSS_SELECTOR, 'tr.lineage-row[data-label="ingress port"]')
        assert row.find_element(By.CSS_SELECTOR, "td.first-lost").text == "fold 2"
        cells = row.find_elements(By.CSS_SELECTOR, ".lineage-cell")
        assert [c.text for c in cells] == ["0✓", "1✓", "2✗", "3✗"]
        present, lost = cells[0].value_of_css_property("background-color"), cells[2]
        assert lost.value_of_css_property("background-color") != present  # coloured apart
        flag = browser.find_element(By.CSS_SELECTOR, "#fold-2 .flag.lineage-lost")
        assert flag.text == "✗ lost 1" and "ingress port (23857)" in flag.get_attribute("title")
        assert not browser.find_elements(By.CSS_SELECTOR, "#fold-1 .flag.lineage-lost")
        assert not console_errors(browser)

        browser.get(f"{url}/run/0/")
        arm_j = browser.find_element(By.CSS_SELECTOR, '#facts-lost-table tr[data-arm="j"]')
        assert arm_j.find_element(By.CSS_SELECTOR, 'td[data-fold="2"]').text == "1"
        assert "ingress port" in arm_j.text
        assert not console_errors(browser)
    assert _digest(run_dir) == before  # the viewer wrote nothing into the run
