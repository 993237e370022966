"""Racing in the page against bots: by clicks, by keys, through a dropped connection."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from playwright.async_api import Page, expect

from tests.conftest import LiveServer
from tests.web.conftest import Screenshot
from tests.web.racing import BotRace, open_bot_race

TARGET = "#my-board .spot.target"


async def enter_race(page: Page, live: LiveServer, race: BotRace, name: str) -> None:
    """Open the race's address, give a name, and wait to be seated (in the waiting room,
    or already racing when the race filled up at once)."""
    await page.goto(f"{live.http_url}/race/{race.code}")
    await page.fill("#name", name)
    await page.click("#name-form button")
    await expect(page.locator("#racers, #leaderboard").first).to_contain_text(name)


async def play_to_the_end(
    page: Page, place: str, at_move: tuple[int, Callable[[], Awaitable[object]]] | None = None
) -> int:
    """Place every card the page offers until the game is over; returns the moves made.
    ``place`` is "click" (the first target) or "keys" (Tab to a target, then Enter);
    ``at_move`` is a number of moves and what to do once that many are made."""
    moves = 0
    while True:
        if at_move is not None and moves == at_move[0]:
            await at_move[1]()
        await page.wait_for_selector(f"{TARGET}, #my-end, .results")
        if await page.locator("#my-end, .results").count():
            return moves
        played = await page.locator("#played").text_content()
        if place == "click":
            await page.locator(TARGET).first.click()
        else:
            await page.keyboard.press("Tab")
            await page.keyboard.press("Enter")
        # The card is hidden until the server accepts the move, then the count moves on.
        await expect(page.locator("#played")).not_to_have_text(played or "")
        moves += 1


async def test_a_person_plays_a_whole_race_by_clicks(
    page: Page, live_server: LiveServer, screenshot: Screenshot
) -> None:
    race = await open_bot_race(live_server.url, 3, pace=0.15)
    try:
        await enter_race(page, live_server, race, "Ann")
        await screenshot(page, "waiting-room")
        await race.join(live_server.url, 1, pace=0.15)
        await expect(page.locator("#in-hand .card")).to_be_visible()
        moves = await play_to_the_end(page, "click", (6, lambda: screenshot(page, "race")))
        assert moves >= 1
        await expect(page.locator(".verify")).to_contain_text("✓ verified", timeout=60_000)
        ann = page.locator(".standings tr.you")
        await expect(ann).to_contain_text("Ann")
        await expect(ann.locator("td").nth(3)).to_have_text(str(moves))
        await screenshot(page, "results")
    finally:
        race.cancel()


async def test_a_person_plays_a_whole_race_by_keys(
    page: Page, live_server: LiveServer
) -> None:
    race = await open_bot_race(live_server.url, 2, pace=0.15)
    try:
        await enter_race(page, live_server, race, "Bea")
        await expect(page.locator("#in-hand .card")).to_be_visible()
        moves = await play_to_the_end(page, "keys")
        await expect(page.locator(".verify")).to_contain_text("✓ verified", timeout=60_000)
        await expect(page.locator(".standings tr.you td").nth(3)).to_have_text(str(moves))
    finally:
        race.cancel()
