"""The page's weight: what it loads, and that its first request asks for all of it."""

from __future__ import annotations

import re

from server.http_routes import DEFAULT_WEB_ROOT

#: The issue's budget for the page's own scripts (the msgpack bundle included).
SCRIPT_BUDGET = 200 * 1024


def scripts() -> list[str]:
    """Every script of the web client, by its path under the web root."""
    return sorted(path.relative_to(DEFAULT_WEB_ROOT).as_posix()
                  for path in DEFAULT_WEB_ROOT.rglob("*") if path.suffix in (".js", ".mjs"))


def test_the_scripts_weigh_less_than_the_budget() -> None:
    total = sum((DEFAULT_WEB_ROOT / script).stat().st_size for script in scripts())
    assert 0 < total < SCRIPT_BUDGET


def test_the_page_asks_for_every_module_at_once() -> None:
    # Each file is a request of its own; one the page does not preload is fetched only
    # once the module importing it has come, a round trip later for each level.
    page = (DEFAULT_WEB_ROOT / "index.html").read_text()
    loaded = re.findall(r'(?:src|href)="/static/([^"]+\.m?js)"', page)
    assert sorted(loaded) == scripts()
