"""The server dies mid-race and comes back: the client retries, resumes, and races on."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path

from client.connection import LinkState
from client.screens.network_race import NetworkRaceScreen
from client.screens.results import ResultsScreen
from tests.client.test_live import (
    my_standing,
    play_out_by_keys,
    player_app,
    showing,
    start_bot,
    wait_until,
)
from tests.conftest import run_server_process


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_a_server_killed_and_restarted_is_reconnected_to_and_the_race_goes_on(
    tmp_path: Path,
) -> None:
    db, port = tmp_path / "journal.db", free_port()
    url = f"ws://127.0.0.1:{port}"
    app = player_app(url)
    with contextlib.ExitStack() as servers:
        first = servers.enter_context(run_server_process(db, "--port", str(port)))
        async with app.run_test(size=(100, 32)) as pilot:
            await wait_until(pilot, lambda: app.tracker.race is not None, "joining a race")
            bot = start_bot(url, "bot-1")
            await wait_until(pilot, lambda: showing(app, NetworkRaceScreen), "the start")
            await play_out_by_keys(pilot, app, moves=3)
            first.kill()
            await wait_until(pilot, lambda: app.connection.state is LinkState.RECONNECTING,
                             "the client to notice")
            link = str(app.screen.query_one("#link").render())
            assert link.startswith("Connection lost; trying again in")
            servers.enter_context(run_server_process(db, "--port", str(port)))
            await wait_until(pilot, lambda: app.connection.state is LinkState.ONLINE, "a resume")
            await play_out_by_keys(pilot, app)
            await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
            assert len(my_standing(app).moves) > 3
            assert app.tracker.verify().ok
            await asyncio.wait_for(bot, 30)
