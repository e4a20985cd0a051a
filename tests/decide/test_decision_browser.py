"""The decision page in a real browser (Debian Chromium), over a simulated carrier sweep, the
shipped toolout corpus replayed offline and a traces run analysed by the real jobs.

Every number a piece of evidence shows sits in a `<data>` element that says how it follows
from the cited rows; here each one is recomputed from the table on disk and must equal what
the page shows, and no other number may sit in an evidence value. The cited-table links lead
to the cited rows, in the served viewer and in the exported file opened from disk offline.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from jobs.decision.recompute import agrees, numbers_in, recompute
from jobs.io import manifest_analysis
from pipeline.decision import Number
from tests.view.browser import chromium, console_errors, viewer
from tests.view.rundirs import CARRIER, sweep_run, traces_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHIPPED_TOOLOUT = ["study=toolout"]  # the default corpora, replayed offline
CONSTANTS = ("95%", "2,000-byte", "(W−C)/C = 0")  # a level, a floor, a formula: not cited


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("decision-sweeps")
    return [
        sweep_run(out / "carrier", CARRIER),
        sweep_run(out / "toolout", SHIPPED_TOOLOUT),
        traces_run(out / "traces"),
    ]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def _number(data: Any) -> Number:
    raw = json.loads(data.get_attribute("data-number"))
    for key in ("where", "versus"):
        raw[key] = tuple(tuple(pair) for pair in raw[key])
    return Number(**raw)


def _check_evidence(driver: Any, runs: list[Path]) -> int:
    """Every evidence row's numbers against its table; returns how many were checked."""
    from selenium.webdriver.common.by import By

    checked = 0
    for section in driver.find_elements(By.CSS_SELECTOR, "section.decision-run"):
        run_dir = runs[int(section.get_attribute("data-run"))]
        boot = manifest_analysis(run_dir).bootstrap
        for row in section.find_elements(By.CSS_SELECTOR, "table.evidence tbody tr"):
            source = row.get_attribute("data-source")
            where = tuple(tuple(p) for p in json.loads(row.get_attribute("data-where")))
            value = row.find_element(By.CSS_SELECTOR, "td.value")
            rest = value.text
            for constant in CONSTANTS:
                rest = rest.replace(constant, "")
            for data in value.find_elements(By.CSS_SELECTOR, "data.cited"):
                table = pl.read_parquet(run_dir / source)
                number = _number(data)
                got = recompute(table, where, number, (boot.seed, boot.resamples))
                assert agrees(data.text, got), (source, where, number, got)
                rest = rest.replace(data.text, "", 1)
                checked += 1
            if source.startswith("analysis/"):  # (the risk is counted from the events)
                assert not numbers_in(rest), (source, value.text, numbers_in(rest))
    return checked


def test_every_number_on_the_decision_page_equals_the_table_it_cites(
    runs: list[Path], browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    with viewer(*runs) as url:
        browser.get(f"{url}/")
        browser.find_element(By.CSS_SELECTOR, "#decision-link a").click()
        assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Decision")
        lead = browser.find_element(By.ID, "what-to-do")
        assert lead.location["y"] < browser.find_elements(By.TAG_NAME, "h2")[1].location["y"]
        studies = {
            s.find_element(By.TAG_NAME, "h3").text.split(":")[0]
            for s in browser.find_elements(By.CSS_SELECTOR, "section.decision-run")
        }
        assert studies == {"carrier", "toolout", "traces"}
        assert _check_evidence(browser, runs) >= 30
        # the simulated runs never recommend: only the toolout replay is in "What to do"
        paragraphs = browser.find_elements(By.CSS_SELECTOR, "section.paragraph")
        real = [p for p in paragraphs if "simulated-row" not in (p.get_attribute("class") or "")]
        assert real and all("**" not in p.text for p in real)
        assert all("toolout" in p.text and "carrier" not in p.text.split(":")[0] for p in real)
        # a cited table's link shows the cited rows
        link = browser.find_element(By.CSS_SELECTOR, "section.decision-run a.cites")
        link.click()
        rows = browser.find_elements(By.CSS_SELECTOR, "table.cited-table tbody tr")
        assert rows and "The rows where" in browser.find_element(By.TAG_NAME, "main").text
        assert not console_errors(browser)


def test_the_export_of_several_runs_opens_on_the_decision_offline(
    runs: list[Path], tmp_path: Path
) -> None:
    import subprocess
    import sys

    from selenium.webdriver.common.by import By

    from tests.view.rundirs import ROOT

    out = tmp_path / "decision.html"
    subprocess.run(
        [sys.executable, "-m", "pipeline", "view", "--export", str(out), *map(str, runs)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    with chromium(blocked=True) as offline:
        offline.get(out.as_uri())
        shown = offline.find_element(By.CSS_SELECTOR, "section.page.shown")
        assert shown.get_attribute("id") == "decision"
        assert _check_evidence(offline, runs) >= 30
        link = shown.find_element(By.CSS_SELECTOR, "a.cites[href*='policy=']")
        href = link.get_attribute("href").split("#", 1)[1]
        policy = href.split("policy=", 1)[1].split("&")[0]
        link.click()
        table = offline.find_element(By.CSS_SELECTOR, "section.page.shown table.cited-table")
        visible = [r for r in table.find_elements(By.CSS_SELECTOR, "tbody tr") if r.is_displayed()]
        assert visible and all(policy in r.text for r in visible)
        assert not console_errors(offline)
