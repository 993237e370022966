"""A racer who quits comes back: ``foursquare play`` resumes the saved session, against the
real server, through the app the command builds."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cli.client_commands import play_app
from cli.main import build_parser
from client.network_app import NetworkApp
from client.saved_session import FILE_NAME, SavedSession, SessionStore, config_dir
from client.screens.failure import FailureScreen
from client.screens.network_race import NetworkRaceScreen
from client.screens.results import ResultsScreen
from client.screens.waiting import WaitingScreen
from protocol import RacerStatus
from tests.client.test_live import (
    answer,
    card_in_hand_or_results,
    my_standing,
    play_out_by_keys,
    showing,
    start_bot,
    wait_until,
)
from tests.conftest import LiveServer


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``XDG_CONFIG_HOME`` for the test: the session file goes there."""
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def play(*argv: str) -> NetworkApp:
    """The app ``foursquare play ARGV`` would run."""
    app = play_app(build_parser().parse_args(["play", *argv]))
    assert isinstance(app, NetworkApp)
    return app


async def test_a_racer_who_quits_mid_race_comes_back_to_it_with_play(
    live_server: LiveServer, config_home: Path
) -> None:
    url = live_server.url
    first = play("--server", url, "--quick", "--name", "ann")
    async with first.run_test(size=(100, 32)) as pilot:
        await wait_until(pilot, lambda: first.tracker.race is not None, "joining a race")
        bot = start_bot(url, "bot-1")
        await wait_until(pilot, lambda: showing(first, NetworkRaceScreen), "the start")
        await play_out_by_keys(pilot, first, moves=3)
        race, board = first.tracker.race, first.tracker.mirror
        assert race is not None and board is not None
        before = board.view().piles
        await answer(pilot, first, "q", "y")
    assert first.return_value == 0

    store = SessionStore(config_dir())
    saved = store.load(url)
    assert saved is not None and (saved.name, saved.race) == ("ann", race)
    assert stat.S_IMODE((config_home / "foursquare").stat().st_mode) == 0o700
    assert stat.S_IMODE((config_home / "foursquare" / FILE_NAME).stat().st_mode) == 0o600

    second = play("--server", url)  # as typed again: no name, no race
    async with second.run_test(size=(100, 32)) as pilot:
        await wait_until(pilot, lambda: showing(second, NetworkRaceScreen), "the race again")
        await wait_until(pilot, lambda: card_in_hand_or_results(second), "a card to place")
        assert second.connection.welcome is not None and second.connection.welcome.resumed
        assert second.tracker.race == race
        mirror = second.tracker.mirror
        assert mirror is not None and len(mirror.moves) == 3
        assert mirror.view().piles == before  # the board as it was left
        await play_out_by_keys(pilot, second)
        await wait_until(pilot, lambda: showing(second, ResultsScreen), "the results")
        mine = my_standing(second)
        assert mine.name == "ann" and len(mine.moves) > 3
        assert mine.status in (RacerStatus.WON, RacerStatus.LOST)
        assert second.tracker.verify().ok
    assert store.load(url) is None  # the race is over: nothing left to come back to
    assert (await bot).standing is not None


async def test_a_token_the_server_no_longer_knows_is_forgotten_quietly(
    live_server: LiveServer, config_home: Path
) -> None:
    url = live_server.url
    store = SessionStore(config_dir())
    stale = SavedSession(url, "s-gone", "no-such-token-0123456789", "ann", "r-gone")
    store.save(stale)
    app = play("--server", url, "--quick")
    async with app.run_test(size=(100, 32)) as pilot:
        await wait_until(pilot, lambda: showing(app, WaitingScreen), "a new race")
        assert not app.connection.welcome or not app.connection.welcome.resumed
        assert app.connection.name == "ann"
        await wait_until(pilot, lambda: store.load(url) not in (None, stale), "the new session")
        assert not any(isinstance(screen, FailureScreen) for screen in app.screen_stack)
