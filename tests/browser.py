"""Headless Chromium through selenium, for tests that open report pages."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", "--window-size=1280,2000")


@contextmanager
def chromium(phone: int | None = None) -> Iterator[object]:
    """A headless Chromium webdriver (the test is skipped without one, failed on CI); with
    ``phone``, a phone ``phone`` CSS pixels wide (mobile emulation: the page's viewport meta
    decides its width, as on a phone)."""
    if not (CHROMIUM and CHROMEDRIVER):
        if os.environ.get("CI"):
            pytest.fail("CI must have Debian's chromium and chromium-driver (.ci/run installs them)")
        pytest.skip("no chromium / chromedriver here (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    if phone:
        options.add_experimental_option("mobileEmulation", {"deviceMetrics": {
            "width": phone, "height": 844, "pixelRatio": 2}})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
