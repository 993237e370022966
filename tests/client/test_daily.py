"""The daily deal in the terminal client, against the real server (its clock injected so
that yesterday's deal is revealed): the boards from the lobby, yesterday's verified in the
client, a daily room raced from the lobby and its sealed result, and a second try refused."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.widgets import DataTable, Static

from client.connection import Connection
from client.network_app import NetworkApp, Plan
from client.screens.daily import DailyBoardScreen, DailyResultScreen
from client.screens.lobby import LobbyScreen
from client.screens.network_race import NetworkRaceScreen
from protocol import RaceSnapshot
from protocol.daily import DailyRace
from tests.client.test_live import QUICK_RETRY, answer, showing, wait_until
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.players.test_daily import NOON, Clock, race_to_the_end
from tests.players.test_players import claimed_key


@pytest.fixture
def clock() -> Clock:
    return Clock(NOON)


@pytest.fixture
async def live(tmp_path: Path, clock: Clock) -> AsyncIterator[LiveServer]:
    config = dataclasses.replace(
        fast_config(tmp_path / "journal.db"), clock=clock, daily_countdown=0.2,
        rate_per_second=1000.0, par_budget=0.0,
    )
    async with start_live_server(config) as server:
        yield server


def text(app: NetworkApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_the_boards_and_a_daily_room_from_the_lobby(live: LiveServer, clock: Clock) -> None:
    # Yesterday (2026-12-01): Ann raced the deal.
    ann, _ = await claimed_key(live.url, "Ann")
    await ann.send(DailyRace(id=3))
    room = await ann.expect(RaceSnapshot, reply_to=3)
    await race_to_the_end(ann, room.race)
    await ann.close()
    clock.move_to(datetime.datetime(2026, 12, 2, 9, 0, tzinfo=datetime.UTC).timestamp())

    app = NetworkApp(Connection(live.url, "bob", backoff=QUICK_RETRY), Plan())
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, LobbyScreen), "the lobby")
        await pilot.click("#daily-board")
        await wait_until(pilot, lambda: showing(app, DailyBoardScreen), "the daily boards")
        await wait_until(pilot, lambda: "verified" in text(app, "#yesterday-summary"),
                         "yesterday's board")
        yesterday = text(app, "#yesterday-summary")
        assert yesterday.startswith("2026-12-01 · 1 ranked") and "✓ verified" in yesterday
        lines = app.screen.query_one("#yesterday-lines", DataTable)
        assert lines.row_count == 1 and "Ann" in str(lines.get_row_at(0)[1])
        today = text(app, "#today-summary")
        assert today.startswith("2026-12-02 · 0 ranked")
        assert "Sealed: seed and moves revealed at 2026-12-03 00:10 UTC" in today

        await pilot.press("escape")
        await wait_until(pilot, lambda: showing(app, LobbyScreen), "the lobby again")
        await pilot.click("#daily")
        await wait_until(pilot, lambda: showing(app, NetworkRaceScreen), "the daily room")
        assert app.tracker.daily
        await answer(pilot, app, "ctrl+x", "y")  # resign: the room ends
        await wait_until(pilot, lambda: showing(app, DailyResultScreen), "the sealed result")
        assert "revealed at 2026-12-03 00:10 UTC" in text(app, "#sealed")
        assert app.screen.query_one("#standings", DataTable).row_count == 1
        assert app.tracker.finished is None  # no seed came: the day is not over

        await pilot.press("b")
        await wait_until(pilot, lambda: showing(app, DailyBoardScreen), "today's board")
        await wait_until(pilot, lambda: "You:" in text(app, "#today-summary"), "our result")
        assert "You: resigned, not ranked (a guest)" in text(app, "#today-summary")
        await pilot.press("escape")
        await wait_until(pilot, lambda: showing(app, LobbyScreen), "the lobby at last")
        await pilot.click("#daily")
        await wait_until(pilot, lambda: "already" in text(app, "#message"), "the refusal")
        assert text(app, "#message").startswith("You have raced today's daily deal already")
