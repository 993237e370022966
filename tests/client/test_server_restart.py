"""The server dies mid-race and comes back: the client retries, resumes, and races on."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from pathlib import Path

from client.connection import Backoff, Connection, LinkState
from client.network_app import NetworkApp, Plan
from client.screens.network_race import NetworkRaceScreen
from client.screens.results import ResultsScreen
from client.screens.watch import WatchScreen
from protocol import Ok, RaceState, Resign, Role
from tests.client.test_live import (
    my_standing,
    play_out_by_keys,
    player_app,
    showing,
    start_bot,
    wait_until,
)
from tests.conftest import run_server_process
from tests.server.test_durability import open_duel
from tests.server.wire_client import WireClient


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


async def test_a_spectator_follows_its_race_across_restarts_to_its_result(
    tmp_path: Path,
) -> None:
    """``foursquare watch``: the server is killed and comes back, and the watch screen shows
    the race again; the race then finishes while the watcher cannot reach the server, and
    when it can again it shows the result."""
    db, port = tmp_path / "journal.db", free_port()
    url = f"ws://127.0.0.1:{port}"
    with contextlib.ExitStack() as servers:
        first = servers.enter_context(run_server_process(db, "--port", str(port)))
        ann, bob, race = await open_duel(first.url)
        patient = Backoff(first=0.05, ceiling=0.2, attempts=1000)
        app = NetworkApp(Connection(url, "eve", role=Role.SPECTATOR, backoff=patient),
                         Plan.spectate(race))
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_until(pilot, lambda: app.tracker.snapshot is not None, "the race")
            first.kill()
            await wait_until(pilot, lambda: app.connection.state is LinkState.RECONNECTING,
                             "the client to notice")
            before = app.tracker.snapshot
            second = servers.enter_context(run_server_process(db, "--port", str(port)))
            await wait_until(pilot, lambda: app.tracker.snapshot is not before, "the race again")
            assert app.tracker.snapshot is not None
            assert app.tracker.snapshot.state is RaceState.RUNNING
            second.kill()
            # Elsewhere (another port), the racers come back and the race ends.
            with run_server_process(db) as third:
                for racer in (ann, bob):
                    back = await WireClient.connect(
                        third.url, racer.welcome.name, resume=racer.welcome.resume
                    )
                    await back.send(Resign(race=race, id=back.next_id()))
                    await back.expect(Ok, in_reply_to="resign")
                    await back.close()
                assert third.terminate() == 0
            assert app.tracker.finished is None
            servers.enter_context(run_server_process(db, "--port", str(port)))
            await wait_until(pilot, lambda: app.tracker.finished is not None, "the result")
            await pilot.pause()
            assert showing(app, WatchScreen)
            title = str(app.screen.query_one("#title").render())
            assert f"Watching race {race} · finished" in title
            assert "✓ verified" in str(app.screen.query_one("#verified").render())
