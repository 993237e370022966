"""Tournament screens against the real server: an entrant races a round by key presses, a
spectator follows the standings and opens a race, an arena entrant takes a break, and bots
enter a tournament from the command's runner."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest
from textual.pilot import Pilot

from cli.main import main
from client.connection import Connection
from client.screens.failure import FailureScreen
from client.screens.network_race import NetworkRaceScreen
from client.screens.results import ResultsScreen
from client.screens.tournament import (
    TournamentRaceScreen,
    TournamentResultsScreen,
    TournamentScreen,
)
from client.tournament_app import TournamentApp
from client.widgets.grid import GridView
from client.widgets.leaderboard import Leaderboard
from protocol import Role
from protocol.tournament import HostAction, TournamentFormat, TournamentState, TournamentStatus
from tests.client.test_live import QUICK_RETRY, play_out_by_keys, showing, wait_until
from tests.conftest import LiveServer
from tests.tournament.conftest import server_config  # noqa: F401  # the bots' rate limit
from tests.tournament.players import BotPlayer, Host, round_over, wait_all


def finished(state: TournamentState) -> bool:
    return state.status is TournamentStatus.FINISHED


async def open_tournament(url: str, **options: object) -> Host:
    """A host with a tournament created and open for registration."""
    host = await Host.start(url)
    await host.create(**options)
    await host.control(HostAction.OPEN)
    await host.until(lambda s: s.status is TournamentStatus.OPEN)
    return host


def standings_screen(app: TournamentApp) -> TournamentScreen:
    screen = app.screen
    assert isinstance(screen, TournamentScreen)
    return screen


def text_of(app: TournamentApp, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


@contextlib.asynccontextmanager
async def spectating_a_started_tournament(
    url: str, rounds: int
) -> AsyncIterator[tuple[Pilot[int], TournamentApp, Host]]:
    """A spectator's app on a tournament of four bots in races of two, its first round
    started; the bots play it to its end, and everyone leaves after the block."""
    host = await open_tournament(url, name="cup", rounds=rounds, race_size=2)
    bots = [
        await BotPlayer.enter(url, f"bot{n}", host.code, "random", seed=n, pace=0.05)
        for n in range(4)
    ]
    spectator = Connection(url, "eve", role=Role.SPECTATOR, backoff=QUICK_RETRY)
    app = TournamentApp(spectator, host.code, playing=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: len(standings_screen(app).standings_text()) == 4,
                         "four entrants")
        await host.until(lambda s: len(s.standings) == 4)
        plays = [asyncio.create_task(bot.play(finished)) for bot in bots]
        await host.control(HostAction.START)
        yield pilot, app, host
    await wait_all(*plays)
    for bot in bots:
        await bot.close()
    await host.close()


async def test_an_entrant_races_a_round_by_key_presses_and_comes_back_to_the_standings(
    live_server: LiveServer,
) -> None:
    host = await open_tournament(live_server.url, name="club night", rounds=1, race_size=4)
    bot = await BotPlayer.enter(live_server.url, "bot0", host.code, "greedy", pace=0.01)
    app = TournamentApp(Connection(live_server.url, "ann", backoff=QUICK_RETRY), host.code,
                        playing=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: app.tournament.you is not None, "entering")
        await wait_until(pilot, lambda: len(standings_screen(app).standings_text()) == 2,
                         "both entrants in the standings")
        names = {row[1] for row in standings_screen(app).standings_text()}
        assert names == {"ann (you)", "bot0 [bot]"}
        assert text_of(app, "#phase").startswith("Registration is open · 2 entrants")
        assert "first race starts when the host starts" in text_of(app, "#entrant-line")

        await host.until(lambda s: len(s.standings) == 2)
        bot_plays = asyncio.create_task(bot.play(finished))
        await host.control(HostAction.START)
        await wait_until(pilot, lambda: showing(app, NetworkRaceScreen), "the race screen")
        await play_out_by_keys(pilot, app)
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
        assert isinstance(app.screen, TournamentResultsScreen), "n leads to the standings"
        assert app.tracker.verify().ok
        await pilot.press("n")
        await wait_until(pilot, lambda: showing(app, TournamentScreen), "the standings")
        await wait_until(pilot, lambda: app.tournament.state is not None
                         and finished(app.tournament.state), "the tournament's end")
        state = app.tournament.state
        assert state is not None
        await pilot.pause()
        rows = standings_screen(app).standings_text()
        assert [row[5] for row in rows] == ["1", "1"], "each played one game"
        ann = next(row for row in rows if row[1] == "ann (you)")
        mine = app.tournament.mine
        assert mine is not None and ann[2] == str(mine.points)
        assert text_of(app, "#phase") == "Finished · final standings."
        assert text_of(app, "#entrant-line").startswith("You finished")
    await wait_all(bot_plays)
    await bot.close()
    await host.close()


async def test_an_entrant_whose_connection_drops_mid_race_resumes_and_finishes(
    live_server: LiveServer,
) -> None:
    server = live_server.server
    assert server is not None
    host = await open_tournament(live_server.url, name="club night", rounds=1, race_size=4)
    bot = await BotPlayer.enter(live_server.url, "bot0", host.code, "greedy", pace=0.05)
    app = TournamentApp(Connection(live_server.url, "ann", backoff=QUICK_RETRY), host.code,
                        playing=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: app.tournament.you is not None, "entering")
        await host.until(lambda s: len(s.standings) == 2)
        bot_plays = asyncio.create_task(bot.play(finished))
        await host.control(HostAction.START)
        await wait_until(pilot, lambda: showing(app, NetworkRaceScreen), "the race screen")
        await play_out_by_keys(pilot, app, moves=3)
        # Only Ann's link fails: the server loses her connection, the bot's stays.
        port = app.connection.local_port
        for connection in list(server.socket_tier.connections):
            if connection.remote_address[1] == port:
                connection.transport.abort()
        await wait_until(pilot, lambda: app.connection.reconnects == 1, "a reconnection")
        await play_out_by_keys(pilot, app)
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
        assert len(app.tracker.verify().problems) == 0
        await pilot.press("n")
        await wait_until(pilot, lambda: app.tournament.state is not None
                         and finished(app.tournament.state), "the final standings")
        mine = app.tournament.mine
        assert mine is not None and mine.games == 1
    await wait_all(bot_plays)
    await bot.close()
    await host.close()


async def test_a_spectator_follows_the_races_and_sees_the_standings_after_a_round(
    live_server: LiveServer,
) -> None:
    async with spectating_a_started_tournament(live_server.url, rounds=2) as (pilot, app, host):
        screen = standings_screen(app)
        await wait_until(pilot, lambda: any(
            board.entries for board in screen.query(Leaderboard)
        ), "live progress of a race")
        assert text_of(app, "#phase") == "Round 1 of 2"
        assert "press 1-9 to watch one" in text_of(app, "#races-heading")

        await pilot.press("1")
        await wait_until(pilot, lambda: showing(app, TournamentRaceScreen), "the watched race")
        await wait_until(pilot, lambda: len(app.screen.query(GridView)) == 2, "two boards")
        await pilot.press("escape")
        await wait_until(pilot, lambda: showing(app, TournamentScreen), "the standings again")

        await host.until(round_over(1))
        round_done: Callable[[], bool] = lambda: (  # noqa: E731
            app.tournament.state is not None and round_over(1)(app.tournament.state)
        )
        await wait_until(pilot, round_done, "the end of round 1 on screen")
        await pilot.pause()
        rows = standings_screen(app).standings_text()
        assert [row[5] for row in rows] == ["1"] * 4
        points = sorted(int(row[2]) for row in rows)
        assert sum(points) <= 6 and points[-1] >= 1, "points for places in the round"
        places = [row[0] for row in rows]
        tied = [place for place in places if place.startswith("=")]
        assert all(places.count(place) > 1 for place in tied), "ties are marked on each"
        assert text_of(app, "#races-heading") == "No race in progress."
        assert text_of(app, "#phase") == "Round 1 of 2 over · the host starts the next"

        await host.control(HostAction.END)
        await wait_until(pilot, lambda: app.tournament.state is not None
                         and finished(app.tournament.state), "the end")


async def test_an_arena_entrant_waits_to_be_paired_and_can_take_a_break(
    live_server: LiveServer,
) -> None:
    host = await open_tournament(live_server.url, name="blitz", format=TournamentFormat.ARENA,
                                 race_size=2, arena_duration=600)
    await host.control(HostAction.START)
    await host.until(lambda s: s.status is TournamentStatus.RUNNING)
    app = TournamentApp(Connection(live_server.url, "ann", backoff=QUICK_RETRY), host.code,
                        playing=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: app.tournament.mine is not None, "entering")
        await pilot.pause()
        assert text_of(app, "#phase").startswith("Arena · ")
        assert text_of(app, "#phase").endswith(" left")
        assert text_of(app, "#entrant-line").startswith("Waiting to be paired")
        await pilot.press("a")
        assert text_of(app, "#entrant-line").startswith("You are taking a break")
        await pilot.press("a")
        assert text_of(app, "#entrant-line").startswith("Waiting to be paired")
        await pilot.press("l")
        await wait_until(pilot, lambda: "You have left" in text_of(app, "#entrant-line"),
                         "leaving")
        assert text_of(app, "#message") == ""
    await host.close()


async def test_bots_enter_a_tournament_by_the_command_and_play_it_to_the_end(
    live_server: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    host = await open_tournament(live_server.url, name="bot night", rounds=2, race_size=3)
    command = ["bot", "--server", live_server.url, "--tournament", host.code.lower(), "-n", "3",
               "--strategy", "greedy", "--pace", "0"]
    # The command runs its own event loop, so it runs in a thread beside the server's.
    bots = asyncio.create_task(asyncio.to_thread(main, command))
    await host.until(lambda s: len(s.standings) == 3)
    said: list[str] = []
    for number in (1, 2):
        await host.control(HostAction.START)
        await host.until(round_over(number))
        # Each bot says how its race went as it ends, not only at the end of the evening.
        while sum(" in race " in line for line in said) < 3 * number:
            said += capsys.readouterr().out.splitlines()
            await asyncio.sleep(0.05)
    assert await asyncio.wait_for(bots, 60) == 0
    said += capsys.readouterr().out.splitlines()
    races = [line for line in said if " in race " in line]
    assert len(races) == 6 and all(": place " in line for line in races)
    lines = [line for line in said if line not in races]
    assert sorted(line.split(":")[0] for line in lines) == ["bot-1", "bot-2", "bot-3"]
    assert all(" point" in line and line.endswith(", 2 games") for line in lines)
    await host.close()


async def test_an_unknown_tournament_code_is_a_sentence_on_screen(live_server: LiveServer) -> None:
    app = TournamentApp(Connection(live_server.url, "ann", backoff=QUICK_RETRY), "NOPE42",
                        playing=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, FailureScreen), "the failure screen")
        assert text_of(app, "#failure").startswith("No tournament has that code.")


async def test_a_player_early_for_registration_is_entered_when_it_opens(
    live_server: LiveServer,
) -> None:
    host = await Host.start(live_server.url)
    await host.create(name="late opener")
    app = TournamentApp(Connection(live_server.url, "ann", backoff=QUICK_RETRY), host.code,
                        playing=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await wait_until(pilot, lambda: app.tournament.state is not None, "the tournament")
        await pilot.pause()
        assert text_of(app, "#phase").startswith("Not open yet")
        assert "registration is not open" in text_of(app, "#message")
        await host.control(HostAction.OPEN)
        await wait_until(pilot, lambda: app.tournament.mine is not None, "being entered")
        await host.control(HostAction.END)
        await wait_until(pilot, lambda: app.tournament.state is not None
                         and finished(app.tournament.state), "the end")
        await pilot.pause()
        assert text_of(app, "#entrant-line") == "You finished in place 1."
    await host.close()


async def test_the_standings_are_current_after_watching_a_race_through_the_round_end(
    live_server: LiveServer,
) -> None:
    """A spectator opens a race, stays on it while the round ends, and comes back: the
    standings and the races shown are the tournament's now, not as they were when it left."""
    async with spectating_a_started_tournament(live_server.url, rounds=1) as (pilot, app, _):
        screen = standings_screen(app)
        await wait_until(pilot, lambda: bool(screen.race_ids), "a race to watch")
        await pilot.press("1")
        await wait_until(pilot, lambda: showing(app, TournamentRaceScreen), "the watched race")
        await wait_until(pilot, lambda: app.tournament.state is not None
                         and finished(app.tournament.state), "the end, while watching")
        await pilot.press("escape")
        await wait_until(pilot, lambda: showing(app, TournamentScreen), "the standings again")
        await pilot.pause()
        state = app.tournament.state
        assert state is not None
        rows = standings_screen(app).standings_text()
        assert [(row[2], row[5]) for row in rows] == [
            (str(line.points), str(line.games)) for line in state.standings
        ]
        assert [row[5] for row in rows] == ["1"] * 4
        assert text_of(app, "#races-heading") == "No race in progress."
        assert text_of(app, "#phase") == "Finished · final standings."
