"""The par solver: optimal on small deals checked by brute force, never below a recorded
game, its lines replay through the engine, and winnable seeds come with a winning line."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import Adjacency, Card, Game, Ruleset, Status, deal, parse_move, replay
from engine.solver import NoWinnableSeed, Par, _beam, _Search, par, solve, winnable_seed

CONFORMANCE = Path(__file__).parent.parent / "conformance" / "games.json"
SMALL = Ruleset(grid_size=2, pile_capacity=10, face_down_limit=1)
SMALL_ANY = Ruleset(grid_size=2, pile_capacity=10, face_down_limit=1, adjacency=Adjacency.ANY)


def _brute_force_par(stock: list[Card], rules: Ruleset) -> int | None:
    """The best score by breadth-first search over every engine position (small grids only)."""
    layer = {"": Game(stock, rules)}
    while layer:
        next_layer: dict[str, Game] = {}
        for game in layer.values():
            for move in game.legal_moves():
                child = game.copy()
                child.play(move)
                if child.status is Status.WON:
                    return child.score
                if child.status is Status.PLAYING:
                    next_layer.setdefault(_tops(child), child)
        layer = next_layer
    return None


def _tops(game: Game) -> str:
    """The position as the future sees it: tops, faces and heights, translated to its box."""
    piles = game.piles
    row0, col0 = min(row for row, _ in piles), min(col for _, col in piles)
    return " ".join(
        f"{row - row0},{col - col0}:{pile.top.rank}{'u' if pile.face_up else 'd'}{pile.height}"
        for (row, col), pile in piles.items()
    )


def _assert_line_scores(result: Par, stock: list[Card], rules: Ruleset) -> None:
    game = Game(stock, rules)
    for move in result.moves:
        game.play(move)
    assert game.status is Status.WON
    assert game.score == result.score


@pytest.mark.parametrize(
    "rules, seed",
    [(SMALL, "small-2"), (SMALL, "small-3"), (SMALL, "small-4"), (SMALL_ANY, "any-1")],
    ids=["small-2", "small-3", "small-4", "diagonal-1"],
)
def test_par_matches_brute_force_on_a_small_grid(rules: Ruleset, seed: str) -> None:
    stock = deal(seed)
    result = solve(stock, rules)
    assert result.proven
    assert result.score == _brute_force_par(stock, rules)
    _assert_line_scores(result, stock, rules)


def test_four_equal_ranks_fill_a_small_grid_with_no_flip() -> None:
    # Equal ranks never trigger a line that holds a face-up card: four cards win.
    fours = [Card(4, suit) for suit in "CDHS"]
    rest = [card for card in deal("rest") if card.rank != 4]
    result = solve(fours + rest, SMALL)
    assert (result.score, result.proven, len(result.moves)) == (36, True, 4)


def test_a_stock_too_short_to_fill_the_grid_is_proven_unwinnable() -> None:
    result = solve(deal("short")[:15])
    assert (result.score, result.proven, result.moves, result.winnable) == (None, True, (), False)


def _won_conformance_games() -> Iterator[tuple[str, int, list[tuple[int, int]]]]:
    for game in json.loads(CONFORMANCE.read_text())["games"]:
        if game["result"] == "won":
            yield game["seed"], game["score"], [tuple(step["move"]) for step in game["steps"]]


@pytest.mark.parametrize("seed, score, moves", list(_won_conformance_games()))
def test_par_of_a_won_conformance_game_is_at_least_its_score(
    seed: str, score: int, moves: list[tuple[int, int]]
) -> None:
    assert replay(seed, moves).score == score  # the recorded game is what it says
    result = par(seed, budget=5.0)
    assert result.score is not None and result.score >= score
    assert replay(seed, result.moves).score == result.score


def test_par_of_seed_zero_is_the_best_possible_score() -> None:
    result = par("0")
    assert (result.score, result.proven, result.winnable) == (24, True, True)
    assert replay("0", result.moves).score == 24


def test_a_spent_budget_reports_a_lower_bound_not_a_proof() -> None:
    ticks = itertools.count()
    # A clock that jumps a second per reading: the budget runs out at the first look.
    result = solve(deal("par-19"), budget=0.5, clock=lambda: float(next(ticks)))
    assert not result.proven
    assert result.winnable in (True, None)
    if result.score is not None:
        assert replay("par-19", result.moves).score == result.score


def test_a_winnable_seed_comes_with_a_replayed_winning_line() -> None:
    seeds = iter(["pool-1", "pool-2"])
    found = winnable_seed(lambda: next(seeds), budget=2.0)
    assert found.seed == "pool-1"
    game = replay(found.seed, found.line)
    assert (game.status, game.score) == (Status.WON, found.score)


def test_no_winnable_seed_when_no_deal_can_be_won() -> None:
    # With no face-down card allowed, the first flip loses: no deal can be won.
    hopeless = Ruleset(face_down_limit=0)
    seeds = iter(["a", "b", "c"])
    with pytest.raises(NoWinnableSeed):
        winnable_seed(lambda: next(seeds), hopeless, budget=2.0, attempts=3)


def test_moves_parse_back_from_notation() -> None:
    # The CLI prints lines in move notation; they read back to the same positions.
    result = par("0")
    assert [parse_move(f"r{row}c{col}") for row, col in result.moves] == list(result.moves)


def test_a_winnable_seed_search_stops_when_its_total_budget_is_spent() -> None:
    ticks = itertools.count()
    drawn: list[str] = []

    def source() -> str:
        drawn.append(f"seed-{len(drawn)}")
        return drawn[-1]

    # Each reading of this clock is a second later: the first attempt spends the 3 s.
    with pytest.raises(NoWinnableSeed):
        winnable_seed(
            source, Ruleset(face_down_limit=0), budget=10.0, attempts=20,
            clock=lambda: float(next(ticks)), within=3.0,
        )
    assert len(drawn) < 20


NARROW = Ruleset(grid_size=3, pile_capacity=5, face_down_limit=1)


def test_a_search_out_of_budget_reports_a_proven_range() -> None:
    # Under these rules deal "range-3" needs 13 cards (par 27, not 31): the passes with
    # 9 to 12 cards fail one by one, and each failure lowers the proven upper bound.
    stock = deal("range-3")
    full = solve(stock, NARROW)
    assert (full.score, full.proven, full.at_most) == (27, True, 27)
    upper_bounds = set()
    for nodes in range(1000, full.nodes, 1000):
        cut = solve(stock, NARROW, nodes=nodes)
        assert not cut.proven
        assert cut.at_most is not None and 27 <= cut.at_most <= 31
        if cut.score is not None:
            assert cut.score <= 27
            assert replay_score(stock, cut) == cut.score
        upper_bounds.add(cut.at_most)
    # The cuts land in several passes, so several upper bounds below the trivial one show.
    assert len(upper_bounds - {31}) >= 2


def replay_score(stock: list[Card], result: Par) -> int | None:
    game = Game(stock, NARROW)
    for move in result.moves:
        game.play(move)
    return game.score


def test_an_unwinnable_deal_has_no_upper_bound_and_a_par_line_has_its_own() -> None:
    assert solve(deal("short")[:15]).at_most is None
    assert par("0").at_most == 24


def test_a_beam_held_to_a_card_count_finds_a_line_the_free_beam_misses() -> None:
    # solver-83's par is 23 (17 cards); a free beam 64 wide finds only a longer line, and
    # the beam that drops every position stacking more than one card finds the 17-card one.
    stock = deal("solver-83")
    ranks = [card.rank for card in stock]
    search = _Search(ranks, Ruleset(), float("inf"), time.process_time)
    free = _beam(ranks, Ruleset(), search, 64)
    held = _beam(ranks, Ruleset(), search, 256, cards=17)
    assert len(free) > 17
    assert len(held) == 17
    assert replay("solver-83", [search.board.position(cell) for cell in held]).score == 23
