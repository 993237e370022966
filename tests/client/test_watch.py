"""The watch screen behind the fog, against the real server: cards the fog hides are
drawn as fog, never as empty spots, and the note under the leaderboard reads well."""

from __future__ import annotations

import asyncio

from client.bot_runner import Bot
from client.bots import get_strategy
from client.connection import Connection
from client.network_app import NetworkApp, Plan
from client.screens.watch import WatchScreen
from client.widgets.cards import FOG
from client.widgets.grid import GridView
from protocol import QuickRace, RaceSnapshot, RaceState, Role
from tests.client.test_live import showing, wait_until
from tests.conftest import LiveServer
from tests.server.wire_client import WireClient


def running(app: NetworkApp) -> bool:
    snapshot = app.tracker.snapshot
    return snapshot is not None and snapshot.state is RaceState.RUNNING


async def test_cards_behind_the_fog_are_drawn_as_fog_and_counted(live_server: LiveServer) -> None:
    url = live_server.url
    idle = await WireClient.connect(url, "idle")  # joins and never places a card
    await idle.send(QuickRace())
    race = (await idle.expect(RaceSnapshot)).race
    fast = Bot(Connection(url, "bot-1", bot=True), QuickRace(), get_strategy("greedy"))
    fast_run = asyncio.create_task(fast.run())
    app = NetworkApp(Connection(url, "eve", role=Role.SPECTATOR), Plan.spectate(race))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: showing(app, WatchScreen), "the watch screen")
        await wait_until(pilot, lambda: running(app), "the start")
        bot_id = next(r.racer for r in app.tracker.snapshot.racers  # type: ignore[union-attr]
                      if r.name == "bot-1")
        await wait_until(pilot, lambda: (p := app.tracker.progress.get(bot_id)) is not None
                         and p.cards_played >= 3, "the bot to play three cards")
        await pilot.pause(0.3)
        assert app.tracker.fog_line == 1  # the idle racer has drawn one card
        played = app.tracker.progress[bot_id].cards_played
        tiles = {grid.board.cards_played: grid for grid in app.screen.query(GridView)}
        bot_tile = tiles[1]  # the bot's board shows its first card only
        drawing = bot_tile.render().plain.splitlines()
        assert drawing[-1] == f"{FOG} +{played - 1} in the fog"
        assert " · " not in "".join(drawing)  # no spot of a fogged board claims to be empty
        note = str(app.screen.query_one("#fog").render())
        assert note.startswith("Fog: each board shows its first card only, as far as every")
        assert "first 0" not in note and "first 1 " not in note
    await idle.close()
    fast_run.cancel()
