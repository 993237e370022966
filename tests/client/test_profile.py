"""The lobby's leaderboards and the profile screen, in the real terminal client against
the real server: boards by rating, wins and best score, bots marked and filtered out,
your own profile and another player's, the rating chart, the races and how to watch
them again; ``foursquare profile NAME``'s screen; and the new rating on a rated race's
results."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import cast

from textual.pilot import Pilot
from textual.widgets import DataTable, Static
from textual_plotext import PlotextPlot

from client.connection import Connection, LinkState
from client.network_app import NetworkApp, Plan
from client.player_views import rating_line
from client.screens.lobby import LobbyScreen
from client.screens.network_race import NetworkRaceScreen
from client.screens.profile import ProfileScreen
from client.screens.replay import ReplayScreen
from client.screens.results import ResultsScreen
from protocol import QuickRace, RaceSnapshot, Resign, Role
from protocol.players import GetProfile, PlayerKey, Profile, RatingChanged
from tests.client.test_live import QUICK_RETRY, answer, showing, wait_until
from tests.conftest import LiveServer
from tests.players.rated import claim, rated_race


@contextlib.asynccontextmanager
async def lobby_of(
    url: str, name: str, key: PlayerKey | None = None
) -> AsyncIterator[tuple[Pilot[int], NetworkApp]]:
    """The lobby of ``name`` (playing as the claimed player of ``key``, if given), once
    the server has welcomed it."""
    connection = Connection(url, name, backoff=QUICK_RETRY,
                            player_key=None if key is None else key.key)
    app = NetworkApp(connection, Plan())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: showing(app, LobbyScreen), "the lobby")
        # The lobby shows before the server's welcome says who we are (a key pressed
        # before it speaks for a guest).
        await wait_until(pilot, lambda: connection.welcome is not None, "the welcome")
        yield pilot, app


def text_of(app: NetworkApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def rows(app: NetworkApp, selector: str) -> list[list[str]]:
    table = app.screen.query_one(selector, DataTable)
    return [[str(cell) for cell in table.get_row_at(index)] for index in range(table.row_count)]


def profile_shown(app: NetworkApp, name: str) -> bool:
    screen = app.screen
    return (isinstance(screen, ProfileScreen) and screen.profile is not None
            and screen.profile.name == name)


async def test_the_lobby_shows_the_boards_live_and_opens_profiles(live_server: LiveServer) -> None:
    async with lobby_of(live_server.url, "Cy") as (pilot, app):
        await wait_until(pilot, lambda: "nobody rated yet" in text_of(app, "#board-title"),
                         "an empty board")
        race, ann_key, _, ann_rating = await rated_race(live_server.url)
        # The board is asked again by itself: the race appears without a key pressed.
        await wait_until(pilot, lambda: len(rows(app, "#board")) == 2, "the rated players")
        names = {line[1] for line in rows(app, "#board")}
        assert names == {"Ann", "Bob [bot]"}
        ann_line = next(line for line in rows(app, "#board") if line[1] == "Ann")
        assert ann_line[2] == f"{ann_rating.rating // 100}.{ann_rating.rating % 100:02}?"
        await pilot.press("f")  # bots left out
        await wait_until(pilot, lambda: [line[1] for line in rows(app, "#board")] == ["Ann"],
                         "the board without bots")
        assert "without bots" in text_of(app, "#board-title")
        await pilot.press("f", "b")  # bots again, and the next board: most wins
        await wait_until(pilot, lambda: "most wins, with bots" in text_of(app, "#board-title")
                         and len(rows(app, "#board")) == 2, "the wins board")
        await pilot.press("b")  # best scores: nobody won a game, so nobody is on it
        await wait_until(pilot, lambda: "best scores" in text_of(app, "#board-title")
                         and "nobody rated yet" in text_of(app, "#board-title"), "best scores")
        await pilot.press("b")  # back to ratings; open Ann's profile from her line
        await wait_until(pilot, lambda: len(rows(app, "#board")) == 2, "the rating board")
        table = app.screen.query_one("#board", DataTable)
        table.focus()
        table.move_cursor(row=[line[1] for line in rows(app, "#board")].index("Ann"))
        await pilot.press("enter")
        await wait_until(pilot, lambda: profile_shown(app, "Ann"), "Ann's profile")
        screen = cast(ProfileScreen, app.screen)
        assert screen.profile is not None and screen.profile.player == ann_key.player
        # Rating, games, wins (tied first: both count a win), games won.
        assert rows(app, "#pools")[0][1:5] == [ann_line[2], "1", "1", "0"]
        (recent,) = rows(app, "#recent")
        assert recent[0] == race and recent[-1] == f"foursquare watch {race}"
        chart = app.screen.query_one("#rating-chart", PlotextPlot)
        assert screen.charted is not None and screen.charted.history == (ann_rating.rating,)
        assert "Rating after each rated race" in str(chart.render())
        app.screen.query_one("#recent", DataTable).focus()
        await pilot.press("enter")
        assert f"foursquare watch {race}" in text_of(app, "#profile-message")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, LobbyScreen), "the lobby again")
        await pilot.press("p")  # a guest has no profile of its own
        await wait_until(pilot, lambda: "guest" in text_of(app, "#message"), "the guest's note")


async def test_your_own_profile_from_the_lobby(live_server: LiveServer) -> None:
    race, ann_key, _, _ = await rated_race(live_server.url)
    async with lobby_of(live_server.url, "whoever", ann_key) as (pilot, app):
        app.screen.query_one("#quick").focus()
        await pilot.press("p")
        await wait_until(pilot, lambda: profile_shown(app, "Ann"), "Ann's own profile")
        assert "Profile of Ann" in text_of(app, "#profile-title")
        assert [line[0] for line in rows(app, "#recent")] == [race]


async def test_foursquare_profile_shows_a_player_by_name(live_server: LiveServer) -> None:
    race, _, bob_key, _ = await rated_race(live_server.url)

    def alone(name: str) -> NetworkApp:
        connection = Connection(live_server.url, "profile", role=Role.SPECTATOR,
                                backoff=QUICK_RETRY)
        return NetworkApp(connection, Plan.player(name))

    app = alone("BOB")  # any case: found as claims are
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: profile_shown(app, "Bob"), "Bob's profile")
        assert "Bob [bot]" in text_of(app, "#profile-title")
        assert bob_key.player in text_of(app, "#profile-title")
        assert [line[0] for line in rows(app, "#recent")] == [race]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.is_running, "the app to quit")
    app = alone("Nobody")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(
            pilot, lambda: "no claimed player" in text_of(app, "#profile-message").lower(),
            "the refusal",
        )


def rating_on_results(app: NetworkApp) -> str:
    screen = app.screen
    return screen.rating_shown if isinstance(screen, ResultsScreen) and screen.is_mounted else ""


async def test_a_rated_race_s_results_show_your_new_rating_and_keep_it(
    live_server: LiveServer,
) -> None:
    server = live_server.server
    assert server is not None
    # Ann's first rated race gives her a rating, so that her second one starts from it.
    _, ann_key, _, first = await rated_race(live_server.url)
    connection = Connection(live_server.url, "Ann", backoff=QUICK_RETRY, player_key=ann_key.key)
    app = NetworkApp(connection, Plan.quick())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.tracker.race is not None, "a quick race")
        cy, _ = await claim(live_server.url, "Cy", bot=True)
        await cy.send(QuickRace(id=cy.next_id()))
        race = (await cy.expect(RaceSnapshot)).race
        assert race == app.tracker.race
        await wait_until(pilot, lambda: showing(app, NetworkRaceScreen), "the start")
        await answer(pilot, app, "ctrl+x", "y")  # Ann resigns; then Cy: the race ends
        await cy.send(Resign(race=race, id=cy.next_id()))
        await cy.expect(RatingChanged, race=race)
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
        # The rating comes after the result, to the results already shown.
        await wait_until(pilot, lambda: rating_on_results(app) != "", "Ann's new rating")
        # What the server keeps of Ann now: the line shows its numbers.
        await cy.send(GetProfile(player=ann_key.player, id=cy.next_id()))
        (pool,) = (await cy.expect(Profile)).pools
        await cy.close()
        assert pool.games == 2 and pool.history[-1] == pool.rating
        expected = RatingChanged(race=race, ruleset=pool.ruleset, before=first.rating,
                                 rating=pool.rating, provisional=pool.provisional,
                                 games=pool.games)
        assert app.tracker.rating == expected
        shown = rating_on_results(app)
        assert shown == rating_line(expected)
        assert shown.endswith("after 2 rated races · provisional: ? until 10 rated races")
        # Back from the replay, then from a dropped connection: the line stays.
        await pilot.press("r")
        await wait_until(pilot, lambda: showing(app, ReplayScreen), "the replay")
        await pilot.press("escape")
        await wait_until(pilot, lambda: rating_on_results(app) == shown, "the results again")
        for link in list(server.socket_tier.connections):
            link.transport.abort()
        await wait_until(pilot, lambda: app.connection.reconnects == 1, "a reconnection")
        await wait_until(pilot, lambda: app.connection.state is LinkState.ONLINE, "the resume")
        await pilot.pause(0.2)  # let what the server sends on the resume be taken in
        assert rating_on_results(app) == shown
