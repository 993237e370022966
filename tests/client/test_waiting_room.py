"""The waiting room of a quick race with a long countdown, on the real server."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from client.connection import Connection, LinkState
from client.network_app import NetworkApp, Plan
from client.screens.waiting import WaitingScreen
from server.config import ServerConfig
from tests.client.test_live import QUICK_RETRY, showing, start_bot, wait_until
from tests.conftest import LiveServer, fast_config


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    """Quick races count down for a minute, so the test can see the countdown."""
    return replace(fast_config(tmp_path / "foursquare.db"), quick_countdown=60.0)


def text_of(app: NetworkApp, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


async def test_the_waiting_room_lists_the_racers_and_counts_down(live_server: LiveServer) -> None:
    app = NetworkApp(Connection(live_server.url, "ann"), Plan.quick())
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, WaitingScreen), "the waiting room")
        assert len(app.screen_stack) == 2  # the lobby was replaced, not stacked under
        assert "1 of 8 racers in; it counts down as soon as 2 are in" in text_of(app, "#countdown")
        bot = start_bot(live_server.url, "bot-1")
        await wait_until(pilot, lambda: "Starting in" in text_of(app, "#countdown"),
                         "the countdown")
        seconds = int(text_of(app, "#countdown").split()[2])
        assert 0 < seconds <= 60
        code = app.tracker.code
        assert code is not None and f"Code {code}" in text_of(app, "#race-info")
        bot.cancel()


async def test_a_racer_dropped_in_the_waiting_room_takes_its_seat_again(
    live_server: LiveServer,
) -> None:
    server = live_server.server
    assert server is not None
    app = NetworkApp(Connection(live_server.url, "ann", backoff=QUICK_RETRY), Plan.quick())
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, WaitingScreen), "the waiting room")
        bot = start_bot(live_server.url, "bot-1")
        await wait_until(pilot, lambda: len(app.tracker.names()) == 2, "the bot in the room")
        port = app.connection.local_port
        # Only ann's connection fails; the server gives up her seat, as a lobby must.
        for connection in list(server.socket_tier.connections):
            if connection.remote_address[1] == port:
                connection.transport.abort()
        await wait_until(pilot, lambda: app.connection.reconnects == 1, "a reconnection")
        await wait_until(pilot, lambda: app.connection.state is LinkState.ONLINE, "the resume")
        race, ann = app.tracker.race, app.tracker.you
        assert race is not None and ann is not None
        hosts = server.race_tier.hosts
        await wait_until(pilot, lambda: hosts[race].race.has_racer(ann), "ann's seat again")
        assert set(app.tracker.names().values()) == {"ann", "bot-1"}
        assert showing(app, WaitingScreen)
        bot.cancel()

