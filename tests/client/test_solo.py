"""The solo screen, played through the real Textual app by key presses and clicks."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.screen import Screen

from client.app import FoursquareApp
from client.screens.confirm import ConfirmScreen
from client.screens.rules import RulesScreen
from client.screens.solo import SoloScreen
from client.widgets.grid import GridView
from engine import Game, Status, replay
from tests.client.keys import place_by_keys

GAMES = json.loads((Path(__file__).parent.parent / "conformance" / "games.json").read_text())


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def solo_app(seed: str, clock: FakeClock | None = None) -> FoursquareApp:
    seeds = iter(f"next-{n}" for n in range(100))
    return FoursquareApp(
        lambda: SoloScreen(seed, clock=clock or FakeClock(), new_seed=lambda: next(seeds))
    )


@contextlib.asynccontextmanager
async def solo(
    seed: str, clock: FakeClock | None = None
) -> AsyncIterator[tuple[Pilot[int], SoloScreen, GridView]]:
    """The solo app running on ``seed``: its pilot, its screen and its grid."""
    async with solo_app(seed, clock).run_test(size=(80, 24)) as pilot:
        screen = pilot.app.screen
        assert isinstance(screen, SoloScreen)
        yield pilot, screen, screen.query_one(GridView)


def conformance_game(seed: str) -> dict[str, Any]:
    game: dict[str, Any] = next(g for g in GAMES["games"] if g["seed"] == seed)
    return game


@pytest.mark.parametrize(("seed", "vim"), [("vector-5", False), ("vector-0", True)])
async def test_a_whole_game_played_by_keys_ends_as_the_engine_says(seed: str, vim: bool) -> None:
    expected = conformance_game(seed)
    async with solo(seed) as (pilot, screen, grid):
        for step in expected["steps"]:
            assert str(screen.status_panel.board.card) == step["card"]
            assert sorted(grid.board.targets) == [tuple(t) for t in step["legal"]]
            await place_by_keys(pilot, grid, tuple(step["move"]), vim=vim)
            assert screen.game.stock_left == step["after"]["stock_left"]
        assert screen.game.status is Status(expected["result"])
        assert screen.game.score == expected["score"]
        word = "Won" if expected["result"] == "won" else "Lost"
        assert screen.message.startswith(word)
        assert grid.board.targets == ()


async def test_clicking_a_target_places_the_card_there() -> None:
    async with solo("vector-5") as (pilot, screen, grid):
        await pilot.click(GridView, offset=grid.offset_of((0, 0)))
        await pilot.click(GridView, offset=grid.offset_of((-1, 0)))
        assert screen.game.moves == [(0, 0), (-1, 0)]


async def test_an_illegal_choice_is_refused_with_a_sentence() -> None:
    async with solo("vector-5") as (pilot, screen, grid):
        await place_by_keys(pilot, grid, (0, 0))
        await pilot.press("right", "right", "up", "up")
        assert grid.cursor == (-1, 1)  # the window is 3x3 here, so the cursor stops at its edge
        await pilot.press("enter")
        assert screen.game.cards_played == 1
        assert screen.message == "Not there: (-1, 1) is not next to any pile."


async def test_tab_visits_every_legal_target() -> None:
    async with solo("vector-5") as (pilot, screen, grid):
        await pilot.press("enter")
        seen = set()
        for _ in range(len(grid.board.targets)):
            await pilot.press("tab")
            seen.add(grid.cursor)
        assert seen == set(screen.game.legal_moves())


async def test_undo_replays_all_moves_but_the_last() -> None:
    async with solo("vector-0") as (pilot, screen, grid):
        moves = [tuple(step["move"]) for step in conformance_game("vector-0")["steps"][:5]]
        for move in moves:
            await place_by_keys(pilot, grid, move)
        await pilot.press("u")
        assert screen.game == replay("vector-0", moves[:-1])
        # The board shows no coordinates: the spot is pointed out, not named.
        assert screen.message == "Took back the last card, from the highlighted spot."
        assert grid.highlight == moves[-1]
        assert grid.board.cards_played == 4
        await place_by_keys(pilot, grid, moves[-1])
        assert grid.highlight is None


async def test_undo_after_a_loss_resumes_play() -> None:
    steps = conformance_game("vector-2")["steps"]
    async with solo("vector-2") as (pilot, screen, _):
        for step in steps:
            screen.place(tuple(step["move"]))
        assert screen.game.status is Status.LOST
        await pilot.press("u")
        taken_back = screen.game
        assert taken_back.status is Status.PLAYING
        assert taken_back.cards_played == len(steps) - 1


async def test_flips_are_highlighted_on_the_cards_that_turned() -> None:
    async with solo("foursquare") as (pilot, screen, grid):
        await place_by_keys(pilot, grid, (0, 0))
        await place_by_keys(pilot, grid, (0, 1))  # 3S beside 4S: lower, so the 4S turns down
        assert grid.flashed == frozenset({(0, 0)})
        assert screen.message == "1 card turned over."
        assert screen.status_panel.board.face_down == 1


async def test_the_clock_starts_with_the_first_card_and_stops_at_the_end() -> None:
    clock = FakeClock()
    steps = conformance_game("vector-6")["steps"]
    async with solo("vector-6", clock) as (pilot, screen, _):
        clock.now += 50
        screen.place(tuple(steps[0]["move"]))
        clock.now += 12.5
        for step in steps[1:]:
            screen.place(tuple(step["move"]))
        clock.now += 30
        await pilot.pause()
        screen.tick_clock()
        assert screen.status_panel.elapsed == 12.5


async def test_new_deal_starts_over_on_a_fresh_seed_once_the_player_says_yes() -> None:
    async with solo("vector-5") as (pilot, screen, _):
        await pilot.press("enter", "n")
        assert on_top(pilot, ConfirmScreen)  # a game in progress is at stake
        await pilot.press("n")
        assert on_top(pilot, SoloScreen) and screen.game.cards_played == 1
        await pilot.press("n", "y")
        assert on_top(pilot, SoloScreen)
        assert screen.game == Game.new("next-0")
        assert "seed next-0" in str(screen.query_one("#title").render())
        await pilot.press("n")  # nothing played on this deal: nothing to ask
        assert screen.game == Game.new("next-1")


def on_top(pilot: Pilot[int], kind: type[Screen[Any]]) -> bool:
    return isinstance(pilot.app.screen, kind)


async def test_quit_leaves_the_app() -> None:
    app = solo_app("vector-5")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("q")
    assert app.return_value == 0


async def test_the_hint_moves_the_cursor_to_the_default_bots_choice() -> None:
    async with solo("vector-5") as (pilot, screen, grid):
        await pilot.press("enter", "enter")
        await pilot.press("question_mark")
        assert grid.cursor in screen.game.legal_moves()
        assert grid.highlight == grid.cursor
        assert screen.message == "Hint: the highlighted spot (Enter places the card there)."
        await pilot.press("enter")
        assert screen.game.cards_played == 3


async def test_text_that_looks_like_markup_is_shown_as_it_is() -> None:
    async with solo("[b]seed[/x]") as (pilot, screen, _):
        assert str(screen.query_one("#title").render()) == "Foursquare solo · seed [b]seed[/x]"
        screen.say("Not there: [red]nothing[/]")
        await pilot.pause()
        assert screen.message == "Not there: [red]nothing[/]"


async def test_f1_shows_the_rules_with_a_row_before_and_after_a_flip() -> None:
    async with solo("vector-5") as (pilot, screen, _):
        assert "f1" in pilot.app.active_bindings  # the footer offers it on every screen
        await pilot.press("f1")
        rules = pilot.app.screen
        assert isinstance(rules, RulesScreen)
        text = str(rules.query_one("#rules-text").render())
        assert "higher than every other face-up top in the row" in text
        assert "│  4♠ │ │  9♥ │ │░░░░░│" in text and "│░░░░░│ │░░░░░│ │  7♣ │ │ 10♦ │" in text
        await pilot.press("escape")
        assert pilot.app.screen is screen


async def test_a_terminal_below_80x24_is_told_it_is_too_small() -> None:
    async with solo_app("vector-5").run_test(size=(70, 20)) as pilot:
        screen = pilot.app.screen
        assert isinstance(screen, SoloScreen)
        await pilot.pause()
        notice = screen.query_one("#too-small")
        main = screen.query_one("#main")
        assert screen.shows_too_small and notice.display and not main.display
        assert str(notice.render()).startswith(
            "The terminal is too small: Foursquare Race needs 80x24, and this one is 70x20."
        )
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert not screen.shows_too_small and not notice.display and main.display
