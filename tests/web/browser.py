"""A real headless browser for the web page's tests and benchmark: Debian's ``chromium``
with ``chromium-driver`` (``apt-get install chromium chromium-driver``), found on the PATH
and driven through selenium. Nothing here downloads a browser or a driver.

Without them the tests are skipped, saying how to install them, unless
``OPENENV_GYM_BROWSER=required`` (as ``.ci/run`` sets): then they fail.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

INSTALL = "apt-get install chromium chromium-driver"


def browser_paths() -> tuple[str, str] | None:
    """The browser and its driver, or ``None`` when either is missing."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


def require_browser() -> tuple[str, str]:
    """The browser and its driver; skips (or fails, when required) without them."""
    paths = browser_paths()
    if paths is None:
        message = f"no chromium and chromedriver on the PATH: {INSTALL}"
        if os.environ.get("OPENENV_GYM_BROWSER") == "required":
            pytest.fail(message)
        pytest.skip(message)
    return paths


@contextmanager
def chromium(paths: tuple[str, str], *, width: int = 1280, height: int = 1000) -> Iterator[Any]:
    """A headless chromium under selenium, quit at the end of the block."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = paths
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     f"--window-size={width},{height}", "--disable-extensions", "--no-first-run"):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=driver_path))
    try:
        driver.set_page_load_timeout(30)
        yield driver
    finally:
        driver.quit()


def wait_until(condition: Callable[[], Any], *, timeout: float = 20.0, what: str = "the page") -> Any:
    """Poll ``condition`` until it is true (bounded), and return its value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)
