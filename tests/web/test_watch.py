"""Watching a race in the page: boards, leaderboard, clock, the fog, and the check of the result."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.conftest import LiveServer
from tests.web.conftest import Screenshot
from tests.web.racing import open_bot_race


async def test_a_race_of_bots_watched_to_the_end_is_verified_in_the_page(
    page: Page, live_server: LiveServer, screenshot: Screenshot
) -> None:
    race = await open_bot_race(live_server.url, 3, pace=0.08)
    try:
        await page.goto(f"{live_server.http_url}/watch/{race.code}")
        await expect(page.locator("#phase")).to_contain_text("Waiting for racers")
        await race.join(live_server.url, 2, pace=0.08)
        await expect(page.locator(".tile")).to_have_count(3)
        await expect(page.locator("#phase")).to_contain_text("Racing")
        await expect(page.locator(".tile .card").first).to_be_visible()
        await screenshot(page, "watch")
        await race.results()
        await expect(page.locator(".verify")).to_contain_text("✓ verified")
        standings = page.locator(".standings tbody tr")
        await expect(standings).to_have_count(3)
        await screenshot(page, "watch-finished")
        # Once over, every board is shown whole: each tile's cards are all its racer's.
        for tile in await page.locator(".tile").all():
            assert await tile.locator(".card").count() > 0
    finally:
        race.cancel()
