"""Issue 35 in Chromium: a fold's messages and reply are shown, collapsed until opened."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest

from tests.view.browser import chromium, console_errors, viewer
from tests.view.test_view_carrier_exchanges import REFUSAL, ROW, scripted_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_folds_messages_and_reply_are_shown(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    run_dir, sent = scripted_run(tmp_path / "run")
    with viewer(run_dir) as url, chromium() as browser:
        browser.get(f"{url}/run/0/unit?row={quote(ROW, safe='')}")
        folds = browser.find_elements(By.CSS_SELECTOR, "details.exchange")
        assert len(folds) == len(sent) == 4
        second = browser.find_element(By.ID, "exchange-fold-1")
        user = second.find_element(By.CSS_SELECTOR, ".message-user .text")
        assert not user.is_displayed()  # collapsed by default
        second.find_element(By.TAG_NAME, "summary").click()
        assert user.is_displayed()
        system = second.find_element(By.CSS_SELECTOR, ".message-system .text")
        roles = [r.text for r in second.find_elements(By.CSS_SELECTOR, "strong.role")]
        assert roles == ["system", "user", "response_format", "assistant"]
        request = sent[1].messages
        assert system.text == request[0].content.strip()
        assert "## Previous summary" in user.text and "## New transcript chunk" in user.text
        assert user.text.splitlines()[-1] == request[1].content.splitlines()[-1]
        assert user.find_elements(By.CSS_SELECTOR, "mark.graded")  # the carrier in is marked
        reply = second.find_element(By.CSS_SELECTOR, ".message-reply")
        assert f"refusal: {REFUSAL}" in reply.text and "(empty)" in reply.text
        assert "unusable" in second.find_element(By.TAG_NAME, "summary").text
        first_reply = browser.find_element(By.CSS_SELECTOR, "#exchange-fold-0 .message-reply")
        assert not first_reply.is_displayed()  # opening one leaves the others closed
        (tmp_path / "fold-messages.png").write_bytes(browser.get_screenshot_as_png())
        assert not console_errors(browser)
