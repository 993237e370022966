"""The client against the real server: a race by key presses, watching, and a resume."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from asyncio import Task
from collections.abc import AsyncIterator, Callable, Sequence
from functools import partial
from pathlib import Path

import pytest
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import DataTable

from client.bot_runner import Bot, BotResult
from client.bots import get_strategy
from client.connection import Backoff, Connection, LinkState
from client.network_app import NetworkApp, Plan
from client.race_state import RacerMirror
from client.screens.confirm import ConfirmScreen
from client.screens.network_race import NetworkRaceScreen
from client.screens.results import ResultsScreen
from client.screens.watch import WatchScreen
from client.widgets.grid import GridView
from client.widgets.leaderboard import Leaderboard
from client.widgets.race_status import RaceStatus
from engine import Position
from protocol import JoinRace, QuickRace, RaceOptions, RacerInfo, RacerStatus, Role, Standing
from tests.client.keys import place_by_keys
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.server.known_games import WON_SEED, conformance_game

#: Long enough for a loaded machine; it only stops a hung test, it times nothing.
PATIENCE = 30.0
QUICK_RETRY = Backoff(first=0.05, ceiling=0.2, attempts=50)


async def wait_until(pilot: Pilot[int], done: Callable[[], bool], what: str) -> None:
    """Let the app run until ``done()`` holds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + PATIENCE
    while not done():
        if loop.time() > deadline:
            pytest.fail(f"gave up waiting for {what}; the screen is {pilot.app.screen!r}")
        await pilot.pause(0.02)


def showing(app: NetworkApp, kind: type[Screen[None]]) -> bool:
    """Whether a screen of ``kind`` is on top and mounted (its widgets exist)."""
    return isinstance(app.screen, kind) and app.screen.is_mounted


def start_bot(url: str, name: str, pace: float = 0.0) -> asyncio.Task[BotResult]:
    bot = Bot(Connection(url, name, bot=True), QuickRace(), get_strategy("greedy"), pace=pace)
    return asyncio.create_task(bot.run())


def player_app(url: str, name: str = "ann") -> NetworkApp:
    return NetworkApp(Connection(url, name, backoff=QUICK_RETRY), Plan.quick())


def card_in_hand_or_results(app: NetworkApp) -> bool:
    screen = app.screen
    if isinstance(screen, ResultsScreen):
        return True
    return isinstance(screen, NetworkRaceScreen) and screen.grid.board.card is not None


async def play_out_by_keys(
    pilot: Pilot[int], app: NetworkApp, moves: int = 99, line: Sequence[Position] = ()
) -> None:
    """Place cards with arrow keys and Enter: the moves of ``line``, then each on the first
    legal target."""
    for number in range(moves):
        await wait_until(pilot, lambda: card_in_hand_or_results(app), "a card to place")
        screen = app.screen
        if not isinstance(screen, NetworkRaceScreen):
            return
        mirror = app.tracker.mirror
        assert mirror is not None
        answered = partial(move_answered, mirror, len(mirror.moves))
        target = line[number] if number < len(line) else screen.grid.board.targets[0]
        await place_by_keys(pilot, screen.grid, target)
        await wait_until(pilot, answered, "the server to accept the move")


def move_answered(mirror: RacerMirror, played_before: int) -> bool:
    return len(mirror.moves) > played_before or mirror.status is not RacerStatus.RACING


@contextlib.asynccontextmanager
async def racing_a_bot(url: str) -> AsyncIterator[tuple[Pilot[int], NetworkApp, Task[BotResult]]]:
    """Ann takes a quick race, a bot joins it, and the race starts."""
    app = player_app(url)
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_until(pilot, lambda: app.tracker.race is not None, "joining a race")
        bot = start_bot(url, "bot-1")
        await wait_until(pilot, lambda: showing(app, NetworkRaceScreen), "the start")
        yield pilot, app, bot


async def answer(pilot: Pilot[int], app: NetworkApp, key: str, reply: str) -> None:
    """Press ``key``, wait for the question it asks, and answer it with ``reply``."""
    await pilot.press(key)
    await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen), f"{key}'s question")
    await pilot.press(reply)
    await wait_until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), "the answer")


def my_standing(app: NetworkApp) -> Standing:
    """Ann's line in the result."""
    finished = app.tracker.finished
    assert finished is not None
    return next(s for s in finished.standings if s.racer == app.tracker.you)


async def test_a_whole_race_by_key_presses_against_a_bot(live_server: LiveServer) -> None:
    async with racing_a_bot(live_server.url) as (pilot, app, bot):
        await play_out_by_keys(pilot, app)
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        finished = app.tracker.finished
        assert finished is not None
        assert screen.verified_text.startswith(f"Seed {finished.seed}\n✓ verified")
        assert {s.name for s in finished.standings} == {"ann", "bot-1"}
        mine = my_standing(app)
        assert mine.status in (RacerStatus.WON, RacerStatus.LOST)
        mirror = app.tracker.mirror
        assert mirror is not None and list(mine.moves) == mirror.moves
        assert (await bot).standing is not None


async def test_the_opponents_panel_follows_the_other_racers(live_server: LiveServer) -> None:
    async with racing_a_bot(live_server.url) as (pilot, app, bot):
        panel = app.screen.query_one("#opponents", Leaderboard)
        status = app.screen.query_one(RaceStatus)
        assert "Clock" in status.render().plain and " of 10:00" in status.render().plain
        # The bot's moves show as they come (its counts, and how its game ended, only as
        # of the cards we have drawn: they say something of the cards).
        await wait_until(
            pilot,
            lambda: any(e.name == "bot-1" and e.cards_played > 1 for e in panel.entries),
            "the bot's moves on the opponents panel",
        )
        bot_entry = next(e for e in panel.entries if e.name == "bot-1")
        assert "bot-1 [bot]" in panel.line_for(bot_entry)
        assert bot_entry.cards_played > 0
        await pilot.press("question_mark")
        race_screen = app.screen
        assert isinstance(race_screen, NetworkRaceScreen)
        assert race_screen.message == "No hints in a race: they are for foursquare solo."
        await answer(pilot, app, "q", "n")  # quitting mid-race asks first; no: still racing
        await answer(pilot, app, "ctrl+x", "n")  # so does resigning
        assert showing(app, NetworkRaceScreen) and app.is_running
        assert app.tracker.mirror is not None
        assert app.tracker.mirror.status is RacerStatus.RACING
        await answer(pilot, app, "ctrl+x", "y")  # resign: the race ends, nobody is left racing
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
        assert my_standing(app).status is RacerStatus.RESIGNED
        assert (await bot).standing is not None


async def test_watching_a_race_shows_every_board_and_hides_face_down_cards(
    live_server: LiveServer,
) -> None:
    first = Bot(Connection(live_server.url, "bot-1", bot=True), QuickRace(),
                get_strategy("random", seed=1), pace=0.01)
    first_run = asyncio.create_task(first.run())
    second_run = start_bot(live_server.url, "bot-2", pace=0.01)
    while first.tracker.race is None:
        await asyncio.sleep(0.01)
    spectator = Connection(live_server.url, "eve", role=Role.SPECTATOR)
    app = NetworkApp(spectator, Plan.spectate(first.tracker.race))
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: showing(app, WatchScreen), "the watch screen")
        await wait_until(pilot, lambda: app.tracker.finished is not None, "the end of the race")
        await wait_until(pilot, lambda: len(app.screen.query(GridView)) == 2, "two boards")
        await pilot.pause()
        boards = [grid.board for grid in app.screen.query(GridView)]
        assert all(board.piles for board in boards)
        for board in boards:
            for pile in board.piles.values():
                assert (pile.top is None) == (not pile.face_up)
        leaderboard = app.screen.query_one("#leaderboard", Leaderboard)
        assert {e.name for e in leaderboard.entries} == {"bot-1", "bot-2"}
        verified = str(app.screen.query_one("#verified").render())
        assert "✓ verified" in verified
        await wait_until(pilot, lambda: app.tracker.par is not None, "the deal's par")
        await pilot.pause()
        assert str(app.screen.query_one("#par").render()).startswith("Deal: ")
    for result in await asyncio.gather(first_run, second_run):
        assert result.standing is not None


async def test_a_dropped_connection_is_resumed_and_the_race_goes_on(
    live_server: LiveServer,
) -> None:
    server = live_server.server
    assert server is not None
    async with racing_a_bot(live_server.url) as (pilot, app, bot):
        await play_out_by_keys(pilot, app, moves=3)
        # The server loses every connection at once, as when a network link fails.
        for connection in list(server.socket_tier.connections):
            connection.transport.abort()
        await wait_until(pilot, lambda: app.connection.reconnects == 1, "a reconnection")
        await wait_until(pilot, lambda: app.connection.state is LinkState.ONLINE, "the resume")
        assert LinkState.RECONNECTING in app.link.history
        link = str(app.screen.query_one("#link").render())
        assert link == f"Connected to {live_server.url} as ann."
        await play_out_by_keys(pilot, app)
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
        assert len(my_standing(app).moves) > 3
        assert app.tracker.verify().ok
        await bot



async def test_the_results_show_each_score_beside_the_deals_par(tmp_path: Path) -> None:
    config = dataclasses.replace(
        fast_config(tmp_path / "race.db"), seed_source=lambda: WON_SEED, par_budget=1.0
    )
    won_moves = conformance_game(WON_SEED)[1]
    async with start_live_server(config) as live, racing_a_bot(live.url) as (pilot, app, bot):
        await play_out_by_keys(pilot, app, line=won_moves)
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
        await wait_until(pilot, lambda: app.tracker.par is not None, "the par")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        par = app.tracker.par
        assert par is not None and par.score is not None
        value = str(par.score) if par.proven else f"{par.score}\N{EN DASH}{par.at_most}"
        best = f"par {value} (proven)" if par.proven else f"par {value}"
        beside = f"2 / par {value}"
        assert my_standing(app).score == 2
        lines = screen.par_shown.splitlines()
        assert lines[0] == f"Deal: {best}" and f"ann {beside}" in lines[1:]
        table = screen.query_one("#standings", DataTable)
        assert any(str(cell) == beside for row in range(table.row_count)
                   for cell in table.get_row_at(row))
        await bot


async def test_at_80x24_with_eight_racers_your_line_and_your_whole_score_show(
    tmp_path: Path,
) -> None:
    config = dataclasses.replace(
        fast_config(tmp_path / "race.db"), seed_source=lambda: WON_SEED, par_budget=1.0
    )
    won_moves = conformance_game(WON_SEED)[1]
    options = RaceOptions(max_racers=8, min_racers=8, auto_start=False, public=False)
    async with start_live_server(config) as live:
        long_name = "annabelle-of-the-longest-names-x"  # a long name must not push the score off
        app = NetworkApp(Connection(live.url, long_name, backoff=QUICK_RETRY),
                         Plan.create(options))
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: app.tracker.code is not None, "the race's code")
            code = app.tracker.code
            assert code is not None
            bots = [
                asyncio.create_task(Bot(
                    Connection(live.url, f"bot-{n}", bot=True), JoinRace(race=code),
                    get_strategy("greedy"),
                ).run())
                for n in range(1, 8)
            ]
            await wait_until(pilot, lambda: len(app.tracker.names()) == 8, "eight racers")
            await wait_until(pilot, lambda: sum(r.ready for r in racers(app)) == 7, "the bots")
            await pilot.press("r")
            await wait_until(pilot, lambda: showing(app, NetworkRaceScreen), "the start")
            panel = app.screen.query_one("#opponents", Leaderboard)
            # The bots' games stay "racing" on this screen until the human has drawn as
            # many cards (counts wait for the count line): the panel holds all eight lines.
            await wait_until(pilot, lambda: len(panel.entries) == 8, "every racer's line")
            await pilot.pause(0.3)
            drawn = panel.render().plain.splitlines()
            assert any("(you)" in line for line in drawn), drawn
            assert len(drawn) <= panel.size.height
            await play_out_by_keys(pilot, app, line=won_moves)
            await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
            await wait_until(pilot, lambda: app.tracker.par is not None, "the par")
            await pilot.pause(0.3)
            table = app.screen.query_one("#standings", DataTable)
            par = app.tracker.par
            assert par is not None and par.score is not None
            shown = [table.render_line(y).text for y in range(table.size.height)]
            mine = next(line for line in shown if "(you)" in line)
            assert f" 2 / par {'' if par.proven else '≥ '}{par.score} " in mine, shown
            assert mine.rstrip().endswith(" s"), shown  # every column, the time last, shows
        for bot in bots:
            assert (await bot).standing is not None


def racers(app: NetworkApp) -> tuple[RacerInfo, ...]:
    snapshot = app.tracker.snapshot
    return snapshot.racers if snapshot is not None else ()
