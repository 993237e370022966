"""The lobby and the waiting room against the real server, and refusals shown as sentences."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from textual.app import App
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from client.bot_runner import Bot
from client.bots import get_strategy
from client.connection import Connection
from client.network_app import NetworkApp, Plan
from client.screens.failure import FailureScreen
from client.screens.lobby import LobbyScreen
from client.screens.name import NameScreen
from client.screens.network_race import NetworkRaceScreen
from client.screens.results import ResultsScreen
from client.screens.waiting import WaitingScreen
from engine import Ruleset
from protocol import (
    CreateRace,
    JoinRace,
    RaceOptions,
    RacerInfo,
    RaceSnapshot,
    RaceState,
    RaceSummary,
    Role,
    ServerMessage,
)
from tests.client.test_live import PATIENCE, QUICK_RETRY, answer, showing, start_bot, wait_until
from tests.conftest import LiveServer
from tests.server.wire_client import WireClient


def failure_text(app: NetworkApp) -> str:
    return str(app.screen.query_one("#failure").render())


def lobby_message(app: NetworkApp) -> str:
    return str(app.screen.query_one("#message").render())


@contextlib.asynccontextmanager
async def race_held_open(url: str, options: RaceOptions) -> AsyncIterator[str]:
    """A host opens a race and stays in it (reading what comes) for the block; yields its code."""
    host = Connection(url, "host")
    messages = host.messages()
    await anext(messages)  # welcome
    await host.send(CreateRace(options=options))
    async for message in messages:
        if isinstance(message, RaceSnapshot):
            code = message.code or message.race
            break
    listening = asyncio.create_task(drain(messages))
    try:
        yield code
    finally:
        await host.close()
        await listening


@contextlib.asynccontextmanager
async def in_the_lobby(url: str) -> AsyncIterator[tuple[Pilot[int], NetworkApp]]:
    """Ann's client on the lobby of the server at ``url``."""
    app = NetworkApp(Connection(url, "ann", backoff=QUICK_RETRY), Plan())
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, LobbyScreen), "the lobby")
        yield pilot, app


async def drain(messages: AsyncIterator[ServerMessage]) -> None:
    async for _ in messages:
        pass


async def test_a_client_of_another_protocol_version_is_told_so(live_server: LiveServer) -> None:
    connection = Connection(live_server.url, "ann", protocol_version=99)
    app = NetworkApp(connection, Plan.quick())
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, FailureScreen), "the failure screen")
        assert failure_text(app).startswith(
            "This client and the server speak different protocol versions"
        )
        await pilot.press("q")
    assert app.return_value == 1


async def test_a_name_another_connected_player_uses_can_be_chosen_again_on_the_spot(
    live_server: LiveServer,
) -> None:
    ann = await WireClient.connect(live_server.url, "ann")
    try:
        app = NetworkApp(Connection(live_server.url, "Ann"), Plan.quick())
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: showing(app, NameScreen), "the name screen")
            assert str(app.screen.query_one("#name-refused").render()) == (
                "That name is taken by another connected player, or claimed by a player: "
                "choose another (or play with that player's key)."
            )
            await pilot.press(*"ANN", "enter")
            assert lobby_message(app) == "Not that one: it looks like the name that was taken."
            app.screen.query_one("#name", Input).value = ""
            await pilot.press(*"ann2", "enter")
            await wait_until(pilot, lambda: showing(app, WaitingScreen), "the quick race")
            welcome = app.connection.welcome
            assert welcome is not None and welcome.name == "ann2"
    finally:
        await ann.close()


async def test_joining_a_full_race_is_refused_with_a_sentence(live_server: LiveServer) -> None:
    alone = RaceOptions(max_racers=1, min_racers=1, auto_start=False)
    async with race_held_open(live_server.url, alone) as code:
        app = NetworkApp(Connection(live_server.url, "ann"), Plan.join(code))
        async with app.run_test(size=(100, 30)) as pilot:
            await wait_until(pilot, lambda: showing(app, LobbyScreen), "the lobby")
            await wait_until(pilot, lambda: bool(lobby_message(app)), "the refusal")
            assert lobby_message(app).startswith("That race is full")


async def test_an_unknown_code_is_refused_with_a_sentence(live_server: LiveServer) -> None:
    app = NetworkApp(Connection(live_server.url, "ann"), Plan())
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, LobbyScreen), "the lobby")
        await pilot.click("#code")
        await pilot.press(*"NOSUCH", "enter")
        await wait_until(pilot, lambda: bool(lobby_message(app)), "the refusal")
        assert lobby_message(app).startswith("No race has that code")


async def test_watching_an_unknown_race_ends_with_a_sentence(live_server: LiveServer) -> None:
    spectator = Connection(live_server.url, "eve", role=Role.SPECTATOR)
    app = NetworkApp(spectator, Plan.spectate("NOSUCH"))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, FailureScreen), "the failure screen")
        assert failure_text(app).startswith("No race has that code")


async def test_a_private_race_from_the_lobby_starts_when_everyone_is_ready(
    live_server: LiveServer,
) -> None:
    async with in_the_lobby(live_server.url) as (pilot, app):
        max_racers = app.screen.query_one("#max-racers")
        await pilot.click("#max-racers")
        max_racers.value = ""  # type: ignore[attr-defined]
        await pilot.press("2")
        await pilot.click("#create")
        await wait_until(pilot, lambda: showing(app, WaitingScreen), "the waiting room")
        code = app.tracker.code
        assert code is not None
        bot = Bot(Connection(live_server.url, "bot-1", bot=True), JoinRace(race=code),
                  get_strategy("greedy"))
        bot_run = asyncio.create_task(bot.run())
        await wait_until(pilot, lambda: len(app.tracker.names()) == 2, "the bot in the room")
        snapshot = app.tracker.snapshot
        assert snapshot is not None and not snapshot.options.public
        await wait_until(
            pilot, lambda: all(r.ready for r in snapshot_racers(app) if r.name == "bot-1"),
            "the bot to be ready",
        )
        assert not showing(app, NetworkRaceScreen)  # ann is not ready yet
        await pilot.press("r")
        await wait_until(pilot, lambda: showing(app, NetworkRaceScreen), "the start")
        await answer(pilot, app, "ctrl+x", "y")
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
        await pilot.press("n")
        await wait_until(pilot, lambda: showing(app, LobbyScreen), "the lobby again")
        assert (await bot_run).standing is not None
        finished_race = app.left_races
        await pilot.click("#quick")  # the server let ann go: she may race again at once
        await wait_until(pilot, lambda: showing(app, WaitingScreen), "a new waiting room")
        assert app.tracker.race is not None and app.tracker.race not in finished_race
        assert lobby_errors(app) == []


def lobby_errors(app: NetworkApp) -> list[str]:
    """Sentences left on the message line of the current screen, if it has one."""
    found = app.screen.query("#message")
    return [str(widget.render()) for widget in found if str(widget.render())]


def snapshot_racers(app: NetworkApp) -> tuple[RacerInfo, ...]:
    snapshot = app.tracker.snapshot
    return snapshot.racers if snapshot is not None else ()


async def test_the_lobby_lists_open_races_and_joins_the_one_selected(
    live_server: LiveServer,
) -> None:
    waiting_bot = start_bot(live_server.url, "bot-1")
    async with in_the_lobby(live_server.url) as (pilot, app):
        lobby = app.screen
        assert isinstance(lobby, LobbyScreen)
        while not lobby.races:
            await pilot.press("ctrl+r")
            await pilot.pause(0.05)
        await pilot.click("#races")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.tracker.race is not None, "joining")
        assert app.tracker.race == lobby.races[0].race
        await wait_until(pilot, lambda: showing(app, NetworkRaceScreen), "the start")
        await answer(pilot, app, "ctrl+x", "y")
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
    assert (await waiting_bot).standing is not None


async def test_races_listed_before_the_lobby_is_mounted_are_shown_once_it_is() -> None:
    # The app may hand the lobby a race list before the screen has mounted its table.
    lobby = LobbyScreen("ann")
    lobby.show_races([
        RaceSummary(race="ABCD", state=RaceState.LOBBY, racers=1, max_racers=4,
                    min_racers=2, time_limit=600, ruleset=Ruleset(), spectators=True,
                    fog=False),
    ])
    app: App[None] = App()
    async with app.run_test() as pilot:
        await app.push_screen(lobby)
        await pilot.pause()
        table = lobby.query_one("#races", DataTable)
        assert [str(cell) for cell in table.get_row("ABCD")] == [
            "ABCD", "1/4", Ruleset().notation(), "10 min"
        ]


async def test_leaving_a_waiting_room_where_you_are_alone_goes_back_to_the_lobby(
    live_server: LiveServer,
) -> None:
    app = NetworkApp(Connection(live_server.url, "ann", backoff=QUICK_RETRY), Plan.create())
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, WaitingScreen), "the waiting room")
        await wait_until(pilot, lambda: app.tracker.you is not None, "ann's seat")
        race = app.tracker.race
        assert race is not None
        await pilot.press("escape")
        await wait_until(pilot, lambda: showing(app, LobbyScreen), "the lobby")
        server = live_server.server
        assert server is not None
        hosts = server.race_tier.hosts
        await wait_until(pilot, lambda: race not in hosts, "the empty race to close")
        await pilot.pause(0.2)
        assert showing(app, LobbyScreen) and lobby_errors(app) == []
        await pilot.click("#create")  # and a new race can be opened at once
        await wait_until(pilot, lambda: showing(app, WaitingScreen), "a new waiting room")
        assert app.tracker.race not in (None, race)


async def test_the_lobby_lists_a_new_race_without_being_asked_and_q_leaves_it(
    live_server: LiveServer,
) -> None:
    async with in_the_lobby(live_server.url) as (pilot, app):
        lobby = app.screen
        assert isinstance(lobby, LobbyScreen) and lobby.races == []
        waiting_bot = start_bot(live_server.url, "bot-1")
        await wait_until(pilot, lambda: bool(lobby.races), "the bot's race in the list")
        await pilot.press("q")
    assert app.return_value == 0
    waiting_bot.cancel()


async def test_the_first_connection_attempt_says_connecting() -> None:
    async def say_nothing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # a listener that never answers the websocket handshake

    listener = await asyncio.start_server(say_nothing, "127.0.0.1", 0)
    url = f"ws://127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    app = NetworkApp(Connection(url, "ann", open_timeout=PATIENCE), Plan())
    async with listener, app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, LobbyScreen), "the lobby")
        await wait_until(pilot, lambda: lobby_link(app) == f"Connecting to {url}…", "the link")
        listener.close()


def lobby_link(app: NetworkApp) -> str:
    return str(app.screen.query_one("#link").render())
