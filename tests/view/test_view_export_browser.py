"""An export of two runs opens offline with both (issue 35, item 8): from `file://` with the
network blocked, the file shows the runs' index, the compare page, each run's overview and
units, and a unit of each, including a toolout transcript kept past the default one. The
screenshots go to SHOTS (outside the repository; the closing note cites them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.view.browser import chromium, console_errors
from tests.view.rundirs import CARRIER, ROOT, TOOLOUT, sweep_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = Path("/tmp/shots")


def test_an_export_of_two_runs_opens_offline_with_both(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    carrier = sweep_run(tmp_path / "carrier", CARRIER)
    toolout = sweep_run(tmp_path / "toolout", TOOLOUT)
    out = tmp_path / "two.html"
    export = ["view", "--export", str(out), str(carrier), str(toolout)]
    subprocess.run(
        [sys.executable, "-m", "pipeline", *export, "--transcripts-per-unit", "3"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chromium(blocked=True) as offline:
        offline.get(out.as_uri() + "#index")

        def shown() -> Any:
            return offline.find_element(By.CSS_SELECTOR, "section.page.shown")

        index = shown()
        assert index.get_attribute("id") == "index"
        names = [a.text for a in index.find_elements(By.CSS_SELECTOR, "tbody td:first-child a")]
        assert names == [carrier.name, toolout.name]
        offline.save_screenshot(str(SHOTS / "export-multi.png"))

        offline.find_element(By.LINK_TEXT, "compare").click()
        compare = shown()
        assert compare.get_attribute("id") == "compare"
        assert compare.find_element(By.TAG_NAME, "h1").text == "Compare 2 runs"
        offline.save_screenshot(str(SHOTS / "export-compare.png"))

        for n, run_dir in enumerate((carrier, toolout)):
            offline.get(out.as_uri() + "#index")
            offline.find_element(By.LINK_TEXT, run_dir.name).click()
            assert shown().get_attribute("id") == f"r{n}-overview"
            offline.find_element(By.CSS_SELECTOR, f"#r{n}-overview tr.count-valid a").click()
            units = shown()
            assert units.get_attribute("id") == f"r{n}-units"
            visible = [
                r for r in units.find_elements(By.CSS_SELECTOR, "tbody tr") if r.is_displayed()
            ]
            assert visible
            assert units.find_element(By.ID, f"r{n}-units-shown").text == str(len(visible))
            visible[0].find_element(By.CSS_SELECTOR, "a.unit-link").click()
            unit = shown()
            assert unit.get_attribute("id").startswith(f"r{n}-u")
            assert unit.find_element(By.TAG_NAME, "h1").text.startswith("Unit ")
        # the toolout unit links its kept transcripts, each its own section
        cap = unit.find_element(By.CSS_SELECTOR, "p.export-cap").text
        assert "the export keeps at most 3 per unit" in cap
        links = unit.find_elements(By.CSS_SELECTOR, "table[id$='-sessions'] a")
        assert 1 <= len(links) <= 3
        chosen = links[-1].text
        links[-1].click()
        view = shown()
        assert "-v" in view.get_attribute("id")
        assert view.find_element(By.CSS_SELECTOR, "code[id$='-transcript']").text == chosen
        assert not console_errors(offline)
