"""Real headless Chromium for the page tests (Debian's ``chromium``; ``.ci/run`` installs it).

``browser`` is a pytest fixture (one Chromium per test module), made available to every test in
tests/integration by its conftest.py. Screenshots go under ``test-artifacts/`` (or
``$NCUROOF_ARTIFACTS``).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("NCUROOF_ARTIFACTS", ROOT / "test-artifacts"))
CHROMIUM = (
    os.environ.get("NCUROOF_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
)
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--enable-unsafe-swiftshader",
]


@pytest.fixture(scope="module")
def browser():
    """A Chromium driven by playwright; skips when playwright or Chromium is absent."""
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (pip install -e '.[test]')"
    )
    if CHROMIUM is None:
        pytest.skip(
            "Chromium not found: install Debian's chromium (.ci/run does) or set NCUROOF_CHROMIUM"
        )
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def open_page(browser, path: Path, chart: str = "document.getElementById('roofline')"):
    """The page at ``path`` in Chromium once the plotly chart (the JS expression ``chart``) is laid
    out, and the list its console errors and page errors are appended to."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.resolve().as_uri())
    page.wait_for_function(f"{chart} && {chart}._fullLayout")
    page.wait_for_timeout(300)
    return page, errors
