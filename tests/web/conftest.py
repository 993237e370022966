"""The browser tests: Debian's Chromium driven by Playwright, against the real server.

``browser`` launches Chromium from ``FOURSQUARE_CHROMIUM`` (``make test`` sets it; the
default is ``/usr/bin/chromium``) with a fresh profile; Playwright's own browser download
is never used. A missing Chromium fails the test with one sentence saying what to install,
never a skip. ``page`` is a fresh page in a fresh context whose uncaught errors, and
whatever its content security policy refuses, fail the test. ``screenshot(page, name)``
writes ``docs/images/web-NAME.png`` when ``FOURSQUARE_SCREENSHOTS=1`` (``make
screenshots``), and otherwise a file under the test's temporary folder, so that every run
still takes it.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright

CHROMIUM = os.environ.get("FOURSQUARE_CHROMIUM", "/usr/bin/chromium")

#: Without the background-networking flags Chromium reaches for the network at start;
#: the tests run offline, on loopback only.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

DOCS_IMAGES = Path(__file__).resolve().parent.parent.parent / "docs" / "images"

#: Long enough for a loaded 2-core machine; a hang still fails the test.
TIMEOUT_MS = 15_000

Screenshot = Callable[[Page, str], Awaitable[Path]]


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Chromium, headless, with a fresh profile (Playwright makes a new one per launch)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"the browser tests need Chromium at {CHROMIUM}: install Debian's chromium package "
            "(apt-get install chromium; `make test` does it when run as root), or set "
            "FOURSQUARE_CHROMIUM to its path",
            pytrace=False,
        )
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True
        )
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A page in a context of its own; an uncaught error in it fails the test."""
    context = await browser.new_context(viewport={"width": 1280, "height": 860})
    context.set_default_timeout(TIMEOUT_MS)
    opened = await context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    # The page's Content-Security-Policy refusing something the page does is a bug too.
    opened.on("console", lambda message: errors.append(message.text)
              if "Content Security Policy" in message.text else None)
    try:
        yield opened
    finally:
        await context.close()
    assert not errors, f"errors in the page: {sorted(set(errors))[:5]}"


@pytest.fixture
def screenshot(tmp_path: Path) -> Screenshot:
    """Take a screenshot of a page as ``web-NAME.png`` (see the module's docstring)."""

    async def take(shown: Page, name: str) -> Path:
        folder = DOCS_IMAGES if os.environ.get("FOURSQUARE_SCREENSHOTS") == "1" else tmp_path
        path = folder / f"web-{name}.png"
        await shown.screenshot(path=str(path))
        return path

    return take
