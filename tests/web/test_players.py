"""The players' pages in a real Chromium against the real server: the leaderboards (by
rating, most wins, best scores; bots marked, and left out on request) and a player's
profile (ratings by rules, the rating's history as a chart, recent races with the command
that watches each again)."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.conftest import LiveServer
from tests.players.rated import rated_race
from tests.web.conftest import Screenshot


async def test_the_leaderboards_and_a_profile_in_the_page(
    page: Page, live_server: LiveServer, screenshot: Screenshot
) -> None:
    await page.goto(f"{live_server.http_url}/leaderboard")
    await expect(page.locator("#where")).to_contain_text("Nobody on this board yet")
    race, ann_key, bob_key, ann_rating = await rated_race(live_server.url)
    # The page reads its board again by itself; a reload shows it at once.
    await page.reload()
    lines = page.locator("#board tbody tr")
    await expect(lines).to_have_count(2)
    await expect(page.locator("#where")).to_contain_text("1\u20132 of 2")  # an en dash
    bob_line = page.locator(f'#board tr[data-player="{bob_key.player}"]')
    await expect(bob_line.locator(".bot-mark")).to_have_text("bot")
    ann_line = page.locator(f'#board tr[data-player="{ann_key.player}"]')
    await expect(ann_line.locator(".bot-mark")).to_have_count(0)
    shown = f"{ann_rating.rating // 100}.{ann_rating.rating % 100:02}?"
    await expect(ann_line.locator(".rating")).to_have_text(shown)
    await expect(page.locator("#next")).to_be_disabled()  # the board ends on this page
    await screenshot(page, "leaderboard")
    await page.locator("#bots").uncheck()
    await expect(lines).to_have_count(1)
    await expect(page.locator(f'#board tr[data-player="{bob_key.player}"]')).to_have_count(0)
    await page.locator("#board-wins").click()
    await expect(page.locator("#board-wins")).to_have_attribute("aria-selected", "true")
    await expect(lines).to_have_count(1)
    await page.locator("#board-best_score").click()  # nobody won a game
    await expect(page.locator("#where")).to_contain_text("Nobody on this board yet")
    await page.locator("#board-rating").click()
    await ann_line.locator("a.player").click()

    await expect(page).to_have_url(f"{live_server.http_url}/player/{ann_key.player}")
    await expect(page.locator("#who")).to_have_text("Ann")
    await expect(page.locator("#summary")).to_contain_text(f"Rating {shown}")
    await expect(page.locator("#pools tbody tr")).to_have_count(1)
    await expect(page.locator("#pools .rating")).to_have_text(shown)
    await expect(page.locator("#chart .point")).to_have_count(1)
    await expect(page.locator("#recent tbody tr")).to_have_count(1)
    await expect(page.locator("#recent")).to_contain_text(race)
    await expect(page.locator(".watch-command")).to_have_text(f"foursquare watch {race}")
    await screenshot(page, "profile")
    await page.locator("#recent a.replay-link").click()  # the race, replayed in the page
    await expect(page).to_have_url(f"{live_server.http_url}/watch/{race}")
    await expect(page.locator("#phase")).to_contain_text("Finished")


async def test_a_profile_no_player_has_says_so(page: Page, live_server: LiveServer) -> None:
    await page.goto(f"{live_server.http_url}/player/u-nobody")
    await expect(page.locator("#summary")).to_contain_text("no claimed player has the id")
