"""The viewer in a real browser (Debian Chromium + selenium), over small runs of every study.

- every page of each run opens with no JavaScript console error;
- from a reason in the overview, a click leads to its units and on to a unit, whose page
  agrees with the Parquet tables;
- a screenshot of every unit page is not blank;
- the exported file, opened from file:// with the network blocked, shows the same unit.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl
import pytest

from pipeline import studies
from pipeline.store import read_table
from tests.view.browser import chromium, console_errors, viewer
from tests.view.rundirs import CARRIER, TOOLOUT, sweep_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def table(run_dir: Path, study: str, name: str) -> pl.DataFrame:
    frame = pl.from_arrow(read_table(run_dir, name, studies.layout(studies.definition(study))))
    assert isinstance(frame, pl.DataFrame)
    return frame


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, traces_dir: Path) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("view-sweeps")
    return {
        "carrier": sweep_run(out / "carrier", CARRIER),
        "toolout": sweep_run(out / "toolout", TOOLOUT),
        "traces": traces_dir,
    }


@pytest.fixture(scope="module")
def served(runs: dict[str, Path]) -> Iterator[str]:
    with viewer(runs["carrier"], runs["toolout"], runs["traces"]) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def not_blank(png: bytes) -> float:
    """Pixel variance of a screenshot (0 for a single-colour page)."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("L")
    pixels = list(image.getdata())
    mean = sum(pixels) / len(pixels)
    return sum((p - mean) ** 2 for p in pixels) / len(pixels)


STUDIES = ("carrier", "toolout", "traces")


@pytest.mark.parametrize("index", range(3), ids=STUDIES)
def test_every_page_of_each_study_opens_without_a_console_error(
    runs: dict[str, Path], served: str, browser: Any, index: int, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    study = STUDIES[index]
    rows = table(runs[study], study, "rows")
    base = f"{served}/run/{index}"
    pages = [
        f"{served}/",
        f"{served}/compare",
        f"{base}/",
        f"{base}/units",
        f"{base}/units?sort=row_id&desc=1",
    ]
    pages += [f"{base}/unit?row={quote(r, safe='')}" for r in rows["row_id"].to_list()]
    console_errors(browser)
    for url in pages:
        browser.get(url)
        banners = browser.find_elements(By.ID, "simulated-banner")
        if url.startswith(base):  # the runs list and compare say SIMULATED if any run is
            assert bool(banners) == (study != "toolout"), url  # toolout offline is a replay
        errors = console_errors(browser)
        assert not errors, (url, errors)
        if "/unit?" in url:
            png = browser.get_screenshot_as_png()
            (tmp_path / f"{abs(hash(url))}.png").write_bytes(png)
            assert not_blank(png) > 100, url


def test_a_reason_on_the_overview_leads_to_a_unit_that_matches_the_tables(
    runs: dict[str, Path], served: str, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    run_dir = runs["carrier"]
    browser.get(f"{served}/run/0/")
    browser.find_element(By.CSS_SELECTOR, "tr.count-valid a").click()
    assert "verdict=valid" in browser.current_url
    link = browser.find_elements(By.CSS_SELECTOR, "a.unit-link")[0]
    row_id = link.text
    link.click()
    assert browser.find_element(By.TAG_NAME, "h1").text == f"Unit {row_id}"
    rows = table(run_dir, "carrier", "rows").filter(pl.col("row_id") == row_id)
    checks = table(run_dir, "carrier", "checks").filter(pl.col("row_id") == row_id)
    folds = table(run_dir, "carrier", "folds").filter(pl.col("row_id") == row_id)
    shown = browser.find_elements(By.CSS_SELECTOR, "#checks tbody tr")
    assert len(shown) == checks.height
    by_label = {r.find_elements(By.TAG_NAME, "td")[0].text: r for r in shown}
    for check in checks.to_dicts():
        cells = [c.text for c in by_label[check["label"]].find_elements(By.TAG_NAME, "td")]
        assert cells[2] == check["expected"] and cells[4] == str(check["passed"]).lower()
    assert len(browser.find_elements(By.CSS_SELECTOR, "div.fold")) == folds.height
    carrier = browser.find_element(By.ID, "final-carrier").text
    assert carrier.strip() == (rows.item(0, "final_carrier") or "").strip()
    assert browser.find_elements(By.CSS_SELECTOR, "#final-carrier mark.graded")


def test_the_export_opens_from_disk_with_no_network_and_shows_the_same_unit(
    runs: dict[str, Path], served: str, browser: Any, tmp_path: Path
) -> None:
    import subprocess
    import sys

    from selenium.webdriver.common.by import By

    from tests.view.rundirs import ROOT

    run_dir = runs["carrier"]
    out = tmp_path / "export.html"
    subprocess.run(
        [sys.executable, "-m", "pipeline", "view", "--export", str(out), str(run_dir)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    row_id = table(run_dir, "carrier", "rows")["row_id"].sort()[0]
    browser.get(f"{served}/run/0/unit?row={quote(row_id, safe='')}")
    served_carrier = browser.find_element(By.ID, "final-carrier").text
    served_checks = browser.find_element(By.ID, "checks").text
    with chromium(blocked=True) as offline:
        offline.get(out.as_uri())
        assert offline.find_element(By.ID, "simulated-banner").is_displayed()
        offline.find_element(By.CSS_SELECTOR, "tr.count-valid a").click()
        assert offline.find_element(By.ID, "units").is_displayed()
        offline.find_element(By.LINK_TEXT, row_id).click()
        section = offline.find_element(By.CSS_SELECTOR, "section.page.shown")
        assert section.find_element(By.TAG_NAME, "h1").text == f"Unit {row_id}"
        anchor = section.get_attribute("id")  # the export's ids carry their section's anchor
        assert section.find_element(By.ID, f"{anchor}-final-carrier").text == served_carrier
        assert section.find_element(By.ID, f"{anchor}-checks").text == served_checks
        images = offline.find_elements(By.CSS_SELECTOR, "section#overview img.figure")
        assert images and all(i.get_attribute("src").startswith("data:image/png") for i in images)
        section.find_element(By.LINK_TEXT, "fixture").click()
        chunks = offline.find_element(By.CSS_SELECTOR, "section.page.shown")
        assert chunks.get_attribute("id") == "chunks" and chunks.find_elements(
            By.CSS_SELECTOR, "mark"
        )
        assert not console_errors(offline)
