"""The daily deal in the page (/daily), against the real server whose clock the test moves:
today's deal raced in the page to its sealed result, the second try refused with a
sentence, and, past the reveal, yesterday's board replayed and checked in the page."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from protocol import RaceSnapshot
from protocol.daily import Daily, DailyRace
from server.config import ServerConfig
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.players.test_daily import NOON, Clock, ask_daily, race_to_the_end
from tests.players.test_players import claimed_key
from tests.web.conftest import Screenshot
from tests.web.test_play import play_to_the_end


@pytest.fixture
def clock() -> Clock:
    return Clock(NOON)


@pytest.fixture
async def live(tmp_path: Path, clock: Clock) -> AsyncIterator[LiveServer]:
    config: ServerConfig = dataclasses.replace(
        fast_config(tmp_path / "journal.db"), clock=clock, daily_countdown=1.0,
        daily_tick=0.2, par_budget=1.0, rate_per_second=1000.0,
    )
    async with start_live_server(config) as server:
        yield server


async def test_the_daily_deal_is_raced_sealed_refused_again_then_revealed_and_verified(
    page: Page, live: LiveServer, clock: Clock, screenshot: Screenshot
) -> None:
    # A claimed player races the day first, so that the board has a line to replay.
    ann, _ = await claimed_key(live.url, "Ann")
    await ann.send(DailyRace(id=10))
    room = await ann.expect(RaceSnapshot, reply_to=10)
    await race_to_the_end(ann, room.race)
    today = await ask_daily(ann)
    assert isinstance(today, Daily) and today.total == 1

    await page.goto(f"{live.http_url}/daily")
    await page.fill("#name", "Bea")
    await page.click("#name-form button")
    await expect(page.locator("#today")).to_contain_text("Ann")
    await expect(page.locator("#yesterday")).to_contain_text("no daily deal yesterday")
    await page.click("#daily-race")
    await expect(page.locator("#in-hand .card")).to_be_visible()
    moves = await play_to_the_end(page, "click")
    assert moves >= 1
    sealed = page.locator("#daily-result")
    await expect(sealed.locator("tr.you")).to_contain_text("Bea")
    await expect(sealed.locator("tr.you td").nth(3)).to_have_text(str(moves))
    await expect(sealed).to_contain_text("Sealed")
    assert await page.locator(".seed, .verify").count() == 0  # no seed before the reveal
    await expect(page.locator("#daily-you")).to_contain_text(f"{moves} played")
    await screenshot(page, "daily")

    await page.click("#daily-race")
    await expect(page.locator("#daily-refusal")).to_have_text(
        "You have raced today's deal already: one try a day. "
        "Its board is below, and tomorrow brings another deal.")

    # Past the reveal: the page sees a new day, and yesterday's seed, lines and par.
    clock.move_to(today.reveal_at / 1000)
    await page.reload()
    yesterday = page.locator("#yesterday")
    await expect(yesterday.locator(".seed")).to_be_visible()
    await expect(yesterday).to_contain_text("Ann")
    verdict = page.locator("#daily-verify .verify")
    await expect(verdict).to_contain_text("✓ verified", timeout=60_000)
    revealed = await ask_daily(ann, today.day)
    assert isinstance(revealed, Daily) and revealed.seed is not None
    await expect(yesterday.locator(".seed")).to_contain_text(revealed.seed)
    # The par is searched for after the reveal; the page asks again until it has come.
    await expect(page.locator("#daily-par")).to_contain_text("Par: ", timeout=60_000)
    await expect(page.locator("#daily-par")).not_to_contain_text("being worked out", timeout=60_000)
    await expect(verdict).to_contain_text("✓ verified")
    await screenshot(page, "daily-revealed")
    await ann.close()
