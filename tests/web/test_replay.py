"""The replay on the watch page: a race over before the page came is replayed at once
(here one the server has already forgotten, answered with its result alone); one watched
to its end, on a click. Play, pause, step forward and back, speed, the ends."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from protocol import RaceFinished, Role, Spectate, Standing
from server.config import ServerConfig
from tests.conftest import LiveServer, fast_config
from tests.server.wire_client import WireClient
from tests.web.conftest import Screenshot
from tests.web.racing import open_bot_race

#: Seconds a finished race stays in the server's memory here.
LINGER = 0.1


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    """Finished races are forgotten at once (their results stay in the journal)."""
    return dataclasses.replace(fast_config(tmp_path / "foursquare.db"), finished_linger=LINGER)


async def forgotten_race(live: LiveServer) -> tuple[str, tuple[Standing, ...]]:
    """Two bots race to the end; returns the race once the server answers ``spectate``
    with its stored result alone, and its standings."""
    race = await open_bot_race(live.url, 2, pace=0.01, countdown=0)
    await race.join(live.url, 1, pace=0.01)
    await race.results()
    eve = await WireClient.connect(live.url, "eve", role=Role.SPECTATOR)
    while True:
        request = eve.next_id()
        await eve.send(Spectate(race=race.code, id=request))
        answer = await eve.receive()
        if isinstance(answer, RaceFinished):
            await eve.close()
            return race.code, answer.standings
        await asyncio.sleep(LINGER)  # still kept: ask again once it may be forgotten


async def shown_per_tile(page: Page) -> list[int]:
    boards = page.locator("#boards .tile .board")
    return [int(await board.get_attribute("data-shown") or "-1") for board in await boards.all()]


async def test_a_race_over_is_replayed_by_keys_and_buttons(
    page: Page, live_server: LiveServer, screenshot: Screenshot
) -> None:
    race, standings = await forgotten_race(live_server)
    total = sum(len(standing.moves) for standing in standings)
    where = page.locator("#replay-where")
    await page.goto(f"{live_server.http_url}/watch/{race}")
    await expect(page.locator("#phase")).to_contain_text("Finished")
    await expect(page.locator(".verify")).to_contain_text("✓ verified")
    await expect(where).to_contain_text(f"of {total}")
    await expect(page.locator("#boards .tile")).to_have_count(2)
    await page.keyboard.press(" ")  # it played at once: pause it
    await expect(where).to_contain_text("paused")
    await page.locator("button[title='start']").click()
    await expect(where).to_contain_text(f"move 0 of {total}")
    assert await shown_per_tile(page) == [0, 0]
    for _ in range(3):
        await page.keyboard.press("ArrowRight")
    await expect(where).to_contain_text(f"move 3 of {total}")
    assert sum(await shown_per_tile(page)) == 3
    await expect(page.locator("#boards .spot.last")).to_have_count(1)  # the card just placed
    await screenshot(page, "replay")
    await page.keyboard.press("ArrowLeft")
    await expect(where).to_contain_text(f"move 2 of {total}")
    assert sum(await shown_per_tile(page)) == 2
    await page.keyboard.press("+")
    await expect(where).to_contain_text("paused x2")
    await page.keyboard.press(" ")
    await expect(where).to_contain_text("playing x2")
    await page.locator("button[title='end']").click()
    await expect(where).to_contain_text(f"paused x2 · move {total} of {total}")
    # The last frame is the result: every racer's board with all its moves.
    assert await shown_per_tile(page) == [standing.cards_played for standing in standings]
    await expect(page.locator("#leaderboard tbody tr")).to_have_count(2)
    await expect(page.locator("#replay")).to_contain_text("Nothing is hidden in a replay")


async def test_a_race_watched_to_its_end_is_replayed_on_a_click(
    page: Page, live_server: LiveServer
) -> None:
    race = await open_bot_race(live_server.url, 2, pace=0.02)
    try:
        await page.goto(f"{live_server.http_url}/watch/{race.code}")
        await expect(page.locator("#phase")).to_contain_text("Waiting for racers")
        await race.join(live_server.url, 1, pace=0.02)
        await race.results()
        button = page.locator("button.open-replay")
        await expect(button).to_be_visible()
        assert await page.locator("#replay-where").count() == 0  # not unasked
        await button.click()
        await expect(page.locator("#replay-where")).to_contain_text("move")
        await page.locator("button[title='end']").click()
        await expect(page.locator("#replay-where")).to_contain_text("paused")
    finally:
        race.cancel()
