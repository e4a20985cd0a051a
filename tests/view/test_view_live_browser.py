"""A run finished after the viewer started shows as finished within one refresh (issue 35, in
Chromium): `python -m pipeline view` on a run still being written, its overview open; the
store's writers commit the remaining units and close the manifest; the open page reloads
itself at its next poll and says finished, with the final counts. The run dir's bytes are the
same after every read as before it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.view.browser import chromium, console_errors, viewer
from tests.view.live_run import LiveRun, tree_digest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

POLL_S = 3.0  # view.js LIVE_POLL_MS
RENDER_S = 4.0  # one reload of the overview on this loaded 2-core machine, with margin


@pytest.fixture
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


def _status_text(driver: Any) -> str:
    from selenium.webdriver.common.by import By

    return str(driver.find_element(By.ID, "run-status").text)


def _wait_for(driver: Any, predicate: Any, within_s: float) -> float:
    """Seconds until `predicate(driver)` held; fails after `within_s`."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException

    started = time.monotonic()
    while time.monotonic() - started < within_s:
        try:
            if predicate(driver):
                return time.monotonic() - started
        except (NoSuchElementException, StaleElementReferenceException):
            pass  # the page is mid-reload: ask again
        time.sleep(0.1)
    pytest.fail(f"not within {within_s} s; the page shows {driver.page_source[:2000]}")


def test_a_run_finished_after_the_viewer_started_shows_as_finished_within_one_refresh(
    tmp_path: Path, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    run = LiveRun.start(tmp_path / "run")
    with viewer(run.path) as url:
        before = tree_digest(run.path)
        browser.get(f"{url}/run/0/")
        assert _status_text(browser) == "running"
        live = browser.find_element(By.ID, "live-run")
        assert live.get_attribute("data-status-url") == "/run/0/status"
        time.sleep(POLL_S + 0.5)  # an unchanged run: the page stays, no reload
        assert browser.find_element(By.ID, "live-run") == live
        assert tree_digest(run.path) == before

        run.commit(1, valid=False)
        run.commit(2)
        run.finish()
        written = tree_digest(run.path)
        took = _wait_for(
            browser, lambda d: _status_text(d).startswith("finished"), POLL_S + RENDER_S
        )
        assert _status_text(browser).startswith("finished: completed at ")
        assert not browser.find_elements(By.ID, "live-run")  # nothing polls a finished run
        counts = browser.find_element(By.ID, "counts").text
        assert "valid — 2" in counts and "catch_up 1" in counts and "pending — 0" in counts
        browser.save_screenshot(str(tmp_path / "finished.png"))
        assert console_errors(browser) == []
        assert tree_digest(run.path) == written, "the viewer changed the run dir"
    print(f"finished shown {took:.1f} s after the manifest was closed")
