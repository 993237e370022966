"""Bots play only legal moves, see only what a racer sees, and are found by name."""

from __future__ import annotations

import dataclasses
import random

import pytest

from client.bots import DEFAULT_STRATEGY, STRATEGIES, RacerView, Strategy, get_strategy
from engine import Card, Game, Position, Ruleset, Status, deal
from engine.heuristic import WIN, Weights

FAST_OPTIONS: dict[str, dict[str, object]] = {
    "random": {"seed": 3},
    "greedy": {"seed": 3},
    # A clock that never moves: the search always finishes its plies, so a choice depends
    # only on the view, never on how busy the machine is.
    # The beams narrower than the defaults keep these games quick.
    "expectimax": {"clock": lambda: 0.0, "seed": 3, "beam": 3, "root_beam": 6},
}


def _play(game: Game, name: str) -> Game:
    bot = get_strategy(name, **FAST_OPTIONS[name])
    while not game.is_over():
        view = RacerView.from_game(game)
        move = bot.choose(view)
        assert move in game.legal_moves()
        game.play(move)  # raises IllegalMove if a bot ever cheats
    return game


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_plays_whole_games_legally(name: str) -> None:
    for seed in ("bots-1", "bots-2"):
        assert _play(Game.new(seed), name).is_over()


def test_greedy_wins_some_games() -> None:
    won = sum(_play(Game.new(f"greedy-{i}"), "greedy").score is not None for i in range(8))
    assert won >= 1


def test_greedy_checking_its_best_moves_one_card_further_wins_more() -> None:
    # The same deals and the same tie-breaking: plain one ply (checked=1) against the
    # default, which compares its best placements by the next card's expected value.
    def wins(checked: int) -> int:
        won = 0
        for i in range(30):
            bot = get_strategy("greedy", seed=3, checked=checked)
            won += _play_with(Game.new(f"greedy-{i}"), bot).score is not None
        return won

    assert wins(3) >= wins(1) + 3


def _play_with(game: Game, bot: Strategy) -> Game:
    while not game.is_over():
        game.play(bot.choose(RacerView.from_game(game)))
    return game


def test_the_view_from_a_game_holds_only_drawn_cards() -> None:
    game = Game.new("view")
    for _ in range(5):
        game.play(game.legal_moves()[0])
    view = RacerView.from_game(game)
    assert view.cards == game.stock[:6]
    assert view.card == game.card
    assert view.moves == tuple(game.moves)
    # Its only fields are the ruleset, the drawn cards and the moves: no game, no stock.
    assert [field.name for field in dataclasses.fields(view)] == ["rules", "cards", "moves"]
    assert sum(view.unseen_ranks()) == 40 - 6 == view.stock_left()


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_a_bot_cannot_tell_two_stocks_apart_before_it_draws_the_difference(name: str) -> None:
    # Two games share the first cards and differ in every undrawn one: a bot that only
    # sees the racer's view must make the same moves on both until the stocks diverge.
    stock = deal("same start")
    shuffled_rest = stock[12:]
    random.Random(5).shuffle(shuffled_rest)
    games = [Game(stock), Game(stock[:12] + shuffled_rest)]
    assert games[0].stock[12:] != games[1].stock[12:]
    bots = [get_strategy(name, **FAST_OPTIONS[name]) for _ in games]
    for _ in range(12):
        if games[0].is_over():
            break
        views = [RacerView.from_game(game) for game in games]
        moves = [bot.choose(view) for bot, view in zip(bots, views, strict=True)]
        assert moves[0] == moves[1]
        for game, move in zip(games, moves, strict=True):
            game.play(move)


def test_a_view_from_wire_data_matches_the_view_from_the_game() -> None:
    game = Game.new("wire")
    for _ in range(3):
        game.play(game.legal_moves()[-1])
    ids = [card.id for card in game.stock[:4]]
    wire = RacerView.from_wire(Ruleset(), ids, [list(move) for move in game.moves])
    assert wire == RacerView.from_game(game)
    assert wire.legal_moves() == game.legal_moves()


def test_a_view_rejects_impossible_wire_data() -> None:
    cards = [Card.parse(text) for text in ("5H", "6H", "7H")]
    with pytest.raises(ValueError, match="not a legal move"):
        RacerView(Ruleset(), tuple(cards), ((0, 0), (3, 3))).legal_moves()
    with pytest.raises(ValueError, match="one more card"):
        RacerView(Ruleset(), tuple(cards), ((0, 0),))
    with pytest.raises(ValueError, match="twice"):
        RacerView(Ruleset(), (cards[0], cards[0]), ((0, 0),))
    with pytest.raises(ValueError):
        RacerView.from_wire(Ruleset(), [40], [])


def test_strategies_are_found_by_name() -> None:
    assert DEFAULT_STRATEGY in STRATEGIES
    assert get_strategy("greedy").name == "greedy"
    with pytest.raises(ValueError, match="unknown strategy 'nope'"):
        get_strategy("nope")


def test_expectimax_rejects_weights_it_cannot_use() -> None:
    with pytest.raises(ValueError, match="exposure"):
        get_strategy("expectimax", weights=Weights(exposure=0.4))
    with pytest.raises(ValueError, match="as much as a win"):
        get_strategy("expectimax", weights=Weights(exposure=0.0, unfinished=WIN))


def test_expectimax_takes_a_win_in_hand() -> None:
    # Whenever some placement of the card in hand wins at once, the bot must take one.
    for seed in ("bots-1", "bots-3"):
        game = Game.new(seed)
        bot = get_strategy("expectimax", **FAST_OPTIONS["expectimax"])
        while not game.is_over():
            move = bot.choose(RacerView.from_game(game))
            winning = [target for target in game.legal_moves() if _wins(game, target)]
            if winning:
                assert move in winning
            game.play(move)


def _wins(game: Game, target: Position) -> bool:
    trial = game.copy()
    trial.play(target)
    return trial.status is Status.WON


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_bots_of_one_strategy_pick_among_equal_moves_each_its_own_way(name: str) -> None:
    # Three bots of one strategy on one deal used to play one game, move for move, and
    # tie to the millisecond. Each now breaks ties with its own seeded randomness.
    options = {**FAST_OPTIONS[name], "budget": 0.0} if name == "expectimax" else FAST_OPTIONS[name]
    games = {}
    for seed in (1, 2, 3):
        bot = get_strategy(name, **{**options, "seed": seed})
        game = Game.new("three alike")
        while not game.is_over():
            game.play(bot.choose(RacerView.from_game(game)))
        games[seed] = tuple(game.moves)
    assert len(set(games.values())) > 1
    again = get_strategy(name, **{**options, "seed": 2})
    replayed = Game.new("three alike")
    while not replayed.is_over():
        replayed.play(again.choose(RacerView.from_game(replayed)))
    assert tuple(replayed.moves) == games[2]  # seeded: the same bot plays the same game
