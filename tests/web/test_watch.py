"""Watching a race in the page: boards, leaderboard, clock, the fog, and the check of the result."""

from __future__ import annotations

import re

import msgpack
from playwright.async_api import Page, WebSocketRoute, expect

from engine import deal
from protocol import CardToPlace, JoinRace, Resign
from tests.conftest import LiveServer
from tests.server.wire_client import WireClient
from tests.web.conftest import Screenshot
from tests.web.racing import open_bot_race, wait_for


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
        await expect(page.locator("#clock")).to_contain_text("Raced in 0:0")
        standings = page.locator(".standings tbody tr")
        await expect(standings).to_have_count(3)
        await screenshot(page, "watch-finished")
        # Once over, every board is shown whole: each tile's cards are all its racer's.
        for tile in await page.locator(".tile").all():
            assert await tile.locator(".card").count() > 0
    finally:
        race.cancel()


async def test_a_tampered_result_shows_what_does_not_add_up(
    page: Page, live_server: LiveServer
) -> None:
    async def tamper(socket: WebSocketRoute) -> None:
        # Between the page and the real server: the finished message claims one card
        # more face up for the winner than its moves give.
        server = socket.connect_to_server()

        def to_page(frame: str | bytes) -> None:
            if isinstance(frame, bytes):
                message = msgpack.unpackb(frame)
                if message["type"] == "finished":
                    message["standings"][0]["face_up"] += 1
                    frame = msgpack.packb(message)
            socket.send(frame)

        server.on_message(to_page)

    await page.route_web_socket(re.compile(r"^ws://"), tamper)
    race = await open_bot_race(live_server.url, 2, pace=0.02)
    try:
        await page.goto(f"{live_server.http_url}/watch/{race.code}")
        await expect(page.locator("#phase")).to_contain_text("Waiting for racers")
        await race.join(live_server.url, 1, pace=0.02)
        finished = await race.results()
    finally:
        race.cancel()
    verdict = page.locator(".verify")
    await expect(verdict).to_contain_text("✗ does not add up")
    winner = next(r.standing for r in finished if r.standing and r.standing.place == 1)
    assert winner is not None
    await expect(verdict).to_contain_text(
        f"{winner.name} ({winner.racer}): claimed (score, played, face up, face down)")
    assert "✓" not in await verdict.inner_text()


async def test_the_fog_holds_in_the_page_and_in_every_frame_it_receives(
    page: Page, live_server: LiveServer, screenshot: Screenshot
) -> None:
    frames: list[bytes] = []
    page.on("websocket", lambda socket: socket.on(
        "framereceived", lambda payload: frames.append(payload)
        if isinstance(payload, bytes) else None))
    race = await open_bot_race(live_server.url, 3, pace=0.02)
    # A racer that draws its first card and never places it holds the fog line at 1.
    idle = await WireClient.connect(live_server.url, "idle")
    try:
        await page.goto(f"{live_server.http_url}/watch/{race.code}")
        await idle.send(JoinRace(race=race.code))
        await race.join(live_server.url, 1, pace=0.02)
        await idle.expect(CardToPlace)
        await wait_for(lambda: all(bot.tracker.mirror is not None
                                   and bot.tracker.mirror.in_hand is None for bot in race.bots),
                       "both bots to finish their games")
        await expect(page.locator(".tile .hidden").first).to_be_visible()
        await expect(page.locator("#fog")).to_have_attribute("data-fog-line", "1")
        await screenshot(page, "watch-fog")
        shown = await page.eval_on_selector_all(
            "[data-card]", "cards => cards.map(card => Number(card.dataset.card))")
        fog_tiles = await page.locator(".tile .fog").count()
        seen_before_the_end = len(frames)
        await idle.send(Resign(race=race.code))
        await expect(page.locator(".verify")).to_contain_text("✓ verified")
    finally:
        race.cancel()
        await idle.close()
    finished = next(m for m in map(msgpack.unpackb, frames) if m["type"] == "finished")
    first_card = deal(finished["seed"])[0].id
    assert shown and set(shown) == {first_card}
    assert fog_tiles > 0
    for frame in frames[:seen_before_the_end]:
        message = msgpack.unpackb(frame)
        assert message["type"] != "finished"
        cards = {card for board in message.get("boards", []) for pile in board["piles"]
                 for card in pile[3]}
        assert cards <= {first_card}, message
