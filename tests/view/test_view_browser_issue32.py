"""Issue 32 in a real browser (Debian Chromium + selenium): on the runs list and compare of a
simulated run beside a real one, the page carries no SIMULATED banner and the simulated run's
row carries a visible mark; a request the browser addresses by a foreign name gets 421."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.view.browser import chromium, console_errors, viewer
from tests.view.rundirs import carrier_run, toolout_run

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    out = tmp_path_factory.mktemp("issue32-browser")
    with viewer(carrier_run(out / "carrier"), toolout_run(out / "toolout")) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@pytest.mark.parametrize("page", ["/", "/compare"])
def test_issue32_mixed_runs_mark_the_simulated_row_not_the_page_in_a_browser(
    served: str, browser: Any, page: str
) -> None:
    from selenium.webdriver.common.by import By

    console_errors(browser)
    browser.get(served + page)
    assert not browser.find_elements(By.ID, "simulated-banner")
    marks = browser.find_elements(By.CSS_SELECTOR, ".simulated-run")
    assert marks and all(m.is_displayed() and m.text == "SIMULATED" for m in marks)
    assert {m.get_attribute("data-run") for m in marks} == {"0"}
    rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr" if page == "/" else "ol li")
    by_run = {r.find_element(By.TAG_NAME, "a").text: r for r in rows}
    assert by_run["carrier"].find_elements(By.CSS_SELECTOR, ".simulated-run")
    assert not by_run["toolout"].find_elements(By.CSS_SELECTOR, ".simulated-run")
    assert not console_errors(browser)


def test_issue32_a_single_simulated_run_keeps_its_page_banner_in_a_browser(
    served: str, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{served}/run/0/")
    assert browser.find_element(By.ID, "simulated-banner").is_displayed()
    browser.get(f"{served}/run/1/")
    assert not browser.find_elements(By.ID, "simulated-banner")


def test_issue32_the_browser_reaching_the_viewer_by_another_name_gets_421(
    served: str, browser: Any
) -> None:
    """What a rebound name looks like to the viewer: Chromium maps `evil.test` to 127.0.0.1."""
    from selenium.webdriver.common.by import By

    port = served.rsplit(":", 1)[1]
    with chromium(resolve={"evil.test": "127.0.0.1"}) as rebound:
        rebound.get(f"http://evil.test:{port}/")
        body = rebound.find_element(By.TAG_NAME, "body").text
    assert "refused Host 'evil.test:" in body and "carrier" not in body
    browser.get(f"http://localhost:{port}/")
    assert browser.find_elements(By.CSS_SELECTOR, ".simulated-run")
