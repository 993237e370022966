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
    page: Page, place: str, at_move: dict[int, Callable[[], Awaitable[object]]] | None = None
) -> int:
    """Place every card the page offers until the game is over; returns the moves made.
    ``place`` is "click" (the first target) or "keys" (Tab to a target, then Enter);
    ``at_move`` says what to do once a number of moves are made."""
    moves = 0
    while True:
        if at_move and moves in at_move:
            await at_move.pop(moves)()
        await page.wait_for_selector(f"{TARGET}, #my-end, .results")
        if await page.locator("#my-end, .results").count():
            return moves
        played = await page.locator("#played").text_content()
        if place == "click":
            await page.locator(TARGET).first.click()
        else:
            await page.keyboard.press("Tab")
            await page.keyboard.press("Enter")
        # The card is hidden until the server accepts the move, then the count moves on;
        # or, when that move ended the race (the others had finished), the results come.
        await page.wait_for_function(
            "played => document.querySelector('.results')"
            " || document.querySelector('#played')?.textContent !== played", arg=played)
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
        moves = await play_to_the_end(page, "click", {6: lambda: screenshot(page, "race")})
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


async def test_a_dropped_connection_and_a_reload_resume_the_race(
    page: Page, live_server: LiveServer
) -> None:
    server = live_server.server
    assert server is not None
    race = await open_bot_race(live_server.url, 2, pace=0.3)
    reconnects: list[str] = []
    page.on("websocket", lambda socket: reconnects.append(socket.url))

    async def cards_on_board() -> int:
        return int(await page.locator("#my-board .card").count())

    async def drop() -> None:
        before = await cards_on_board()
        (session,) = [s for s in server.socket_tier.sessions.connected() if s.name == "Cy"]
        assert session.connection is not None
        session.connection.transport.abort()  # the TCP connection is gone, no close frame
        await expect(page.locator(".link-status")).to_contain_text("dropped")
        await expect(page.locator(".link-status")).to_have_attribute("data-state", "online")
        await expect(page.locator("#in-hand .card")).to_be_visible()
        assert await cards_on_board() == before
        assert len(reconnects) == 2

    async def board_drawn() -> str:
        # The piles and targets as drawn, without the keyboard's cursor (a new page's own).
        return (await page.locator("#my-board").inner_html()).replace(" cursor", "")

    async def reload() -> None:
        before = await board_drawn()
        await page.reload()  # a new page: its session comes back from the tab's storage
        await expect(page.locator("#in-hand .card")).to_be_visible()
        # Rebuilt from the server's board message, which holds every pile as it was.
        assert await board_drawn() == before

    try:
        await enter_race(page, live_server, race, "Cy")
        await expect(page.locator("#in-hand .card")).to_be_visible()
        await play_to_the_end(page, "click", {3: drop, 6: reload})
        await race.results()
    finally:
        race.cancel()
    await expect(page.locator(".verify")).to_contain_text("✓ verified", timeout=30_000)
