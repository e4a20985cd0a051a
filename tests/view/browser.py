"""Debian's Chromium driven by selenium, headless, offline-safe; and the viewer as a user runs it.

The driver is /usr/bin/chromedriver, given explicitly through `Service`, so selenium-manager
never runs and no browser is downloaded (`.ci/run` installs Debian's `chromium` and
`chromium-driver`). Every launch gets a fresh profile and the flags that stop Chromium from
calling home. `blocked=True` also sends every hostname and proxy to nowhere, for the export
test that must work with no network.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,1600",
)
NO_NETWORK = ("--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND")


def require_chromium() -> None:
    if not (CHROMIUM.is_file() and CHROMEDRIVER.is_file()):
        pytest.fail(
            "browser tests need Debian's chromium and chromium-driver (.ci/run installs them)"
        )


@contextmanager
def chromium(*, blocked: bool = False, resolve: dict[str, str] | None = None) -> Iterator[Any]:
    """`resolve` maps host names to addresses inside this browser only (a rebound name)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    require_chromium()
    profile = tempfile.mkdtemp(prefix="view-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, *(NO_NETWORK if blocked else ())):
        options.add_argument(flag)
    if resolve:
        rules = ", ".join(f"MAP {name} {address}" for name, address in resolve.items())
        options.add_argument(f"--host-resolver-rules={rules}")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def console_errors(driver: Any) -> list[dict[str, Any]]:
    """Everything of level SEVERE the page logged since the last call (JS errors, failed loads)."""
    return [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]


@contextmanager
def viewer(*run_dirs: Path) -> Iterator[str]:
    """`python -m pipeline view RUN_DIR ... --port 0` in a subprocess; yields its URL."""
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    process = subprocess.Popen(
        [sys.executable, "-m", "pipeline", "view", *map(str, run_dirs), "--port", "0"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "http://127.0.0.1:" in line, (line, process.stderr.read() if process.stderr else "")
        yield line.split(" at ", 1)[1].split(" ", 1)[0].rstrip("/")
    finally:
        process.terminate()
        process.wait(timeout=30)
