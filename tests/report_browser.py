"""Headless Chromium through Selenium, with the system chromedriver (never a download)."""

from __future__ import annotations

import shutil
from pathlib import Path

CHROMEDRIVER = "/usr/bin/chromedriver"
CHROMIUM_NAMES = ("chromium", "chromium-browser")


def chromium_binary() -> str | None:
    """The Chromium executable, or None when it is not installed."""
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def headless_chromium(width: int = 1280, height: int = 1000, user_data_dir: str | None = None):
    """A headless Chromium driven by the system chromedriver, browser logs kept.

    Passing the driver's path explicitly keeps Selenium Manager from looking for (and
    downloading) one; the flags keep Chromium from reaching the network on its own.

    Args:
        user_data_dir: a fresh profile folder (default: Chromium's own temporary one).
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium_binary()
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        f"--window-size={width},{height}",
        "--allow-file-access-from-files",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
    ):
        options.add_argument(arg)
    if user_data_dir:
        options.add_argument(f"--user-data-dir={user_data_dir}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))


def file_url(path: Path) -> str:
    return Path(path).resolve().as_uri()
