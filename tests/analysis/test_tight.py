"""The bitboard endgame search agrees with brute force on the engine itself."""

from __future__ import annotations

import random

import pytest

from engine import Game, Ruleset, Status, deal, replay
from engine.board import Board
from engine.solver import par
from engine.tight import TightSearch


def _engine_can_win(game: Game, cards: int, new_piles_only: bool = False) -> bool:
    """Whether some sequence of ``cards`` legal moves wins, by trying them all (with
    ``new_piles_only``, every move that opens a new pile: a win with as many cards as
    empty cells can make no other)."""
    if game.status is Status.WON:
        return True
    if cards == 0 or game.is_over():
        return False
    for move in game.legal_moves():
        if new_piles_only and move in game.piles:
            continue
        child = game.copy()
        child.play(move)
        if _engine_can_win(child, cards - 1, new_piles_only):
            return True
    return False


def _tight_line(game: Game) -> list[tuple[int, int]] | None:
    ranks = [card.rank for card in game.stock]
    placed = game.cards_played
    board = Board.replayed(game.rules, ranks[:placed], game.moves)
    cells = TightSearch(board, ranks, lambda: None).solve_from(placed)
    return None if cells is None else [board.position(cell) for cell in cells]


def _endgames(seed: str, empty: int) -> list[Game]:
    """Positions with ``empty`` cells left: on a par line, and one move off it."""
    line = par(seed).moves
    assert len(line) == 16
    on_line = replay(seed, line[: 16 - empty])
    positions = [on_line]
    before = replay(seed, line[: 15 - empty])
    for move in before.legal_moves():
        if move != line[15 - empty] and move not in before.piles:
            off_line = before.copy()
            off_line.play(move)
            positions.append(off_line)
    return positions


@pytest.mark.parametrize("seed", ["0", "1", "2"])
@pytest.mark.parametrize("empty", [2, 3, 4])
def test_tight_search_matches_brute_force(seed: str, empty: int) -> None:
    # Off the line, most endgames cannot be won: both answers are exercised.
    for game in _endgames(seed, empty):
        if game.is_over():
            continue
        line = _tight_line(game)
        assert (line is not None) == _engine_can_win(game, empty)
        if line is not None:
            finished = game.copy()
            for move in line:
                finished.play(move)
            assert finished.status is Status.WON


def test_rulesets_other_than_the_default_are_searched_too() -> None:
    rules = Ruleset(grid_size=3, pile_capacity=5, face_down_limit=2)
    result = par("0", rules)
    assert result.proven and result.score == 40 - 9


def test_the_first_card_is_tried_in_each_place_of_the_final_box() -> None:
    # Deal "t3-3" on a 3 x 3 grid is won with the fewest cards (9) only when its first
    # card ends in the centre of the final box: not in a corner, not on an edge.
    rules = Ruleset(grid_size=3, pile_capacity=5, face_down_limit=2)
    ranks = [card.rank for card in deal("t3-3")]
    tried = []
    for first in (0, 1, 4):  # a corner, an edge, the centre: one of each orbit
        search = TightSearch(Board(rules), ranks, lambda: None)
        search.first = first
        tried.append(search._search(0, 0, 0, 0, 0))
    assert tried == [False, False, True]
    board = Board(rules)
    cells = TightSearch(board, ranks, lambda: None).solve_from(0)
    assert cells is not None
    game = Game(deal("t3-3"), rules)
    for cell in cells:
        game.play(board.position(cell))
    assert game.status is Status.WON and game.cards_played == 9


def _played_positions(seed: str, empty: int, count: int, stacked: int = 0) -> list[Game]:
    """``count`` positions of deal ``seed`` with ``empty`` cells left to fill, reached by
    random moves (seeded), the first ``stacked`` of them onto a pile, and still in play."""
    rng = random.Random(f"{seed}/{empty}/{stacked}")
    positions: list[Game] = []
    while len(positions) < count:
        game = Game(deal(seed))
        game.play((0, 0))
        while len(game.piles) < 16 - empty and not game.is_over():
            moves = game.legal_moves()
            on_piles = game.cards_played <= stacked
            game.play(rng.choice([move for move in moves if (move in game.piles) == on_piles]))
        if not game.is_over():
            positions.append(game)
    return positions


def _images(game: Game) -> list[Game]:
    """``game`` and the same moves mirrored in a row, in a column and in the diagonal."""
    images = [game]
    for mirror in range(3):
        image = Game(game.stock, game.rules)
        for row, col in game.moves:
            image.play(((-row, col), (row, -col), (col, row))[mirror])
        images.append(image)
    return images


def test_one_tight_search_matches_brute_force_across_positions_and_boxes() -> None:
    # One search answers every position of a deal, so what it remembers from one position
    # (failures keyed on the box alone, children keyed on masks) is reused, right or
    # wrong, by the next, in other boxes and other translations of them; each position is
    # followed by its mirror images, which a search skips once it knows the first fails
    # (a box's starting position, rotated or reflected, has the same outcome). "solver-83" is a
    # deal whose fewest-card pass fails: no position played from it can be won with the
    # fewest cards; the others are, and their par line and the moves off it give both answers.
    answers = []
    for seed in ("solver-83", "0", "1"):
        ranks = [card.rank for card in deal(seed)]
        search = TightSearch(Board(), ranks, lambda: None)
        played = [
            *_played_positions(seed, 5, 3),
            *_played_positions(seed, 6, 2),
            *_played_positions(seed, 5, 4, stacked=1),
        ]
        if seed != "solver-83":
            played += _endgames(seed, 5) + _endgames(seed, 6)
        for position in [image for game in played for image in _images(game)]:
            if position.is_over():
                continue
            placed, empty = position.cards_played, 16 - len(position.piles)
            search.board = Board.replayed(position.rules, ranks[:placed], position.moves)
            cells = search.solve_from(placed)
            answers.append(cells is not None)
            assert answers[-1] == _engine_can_win(position, empty, new_piles_only=True)
            if cells is not None:
                for cell in cells:
                    position.play(search.board.position(cell))
                assert position.status is Status.WON
    assert any(answers) and not all(answers)


def test_the_box_search_with_a_card_to_spare_matches_brute_force() -> None:
    # "solver-31" has par 23: its par line stacks its last card, and no line uses fewer. From
    # each position on it with two empty cells and one card to spare, and from the
    # positions one move off it, the box search with a card to spare must agree with an
    # exhaustive search of every legal move (stacks included) over three cards.
    seed = "solver-31"
    line = par(seed).moves
    assert len(line) == 17
    ranks = [card.rank for card in deal(seed)]
    search = TightSearch(Board(), ranks, lambda: None)
    answers = []
    for cut in range(len(line)):
        before = replay(seed, line[:cut])
        for move in before.legal_moves():
            game = before.copy()
            game.play(move)
            empty = 16 - len(game.piles)
            if game.is_over() or empty != 2 or len(line) - game.cards_played != 3:
                continue
            placed = game.cards_played
            search.board = Board.replayed(game.rules, ranks[:placed], game.moves)
            cells = search.solve_from(placed, spare=1)
            answers.append(cells is not None)
            assert answers[-1] == _engine_can_win(game, 3)
            if cells is not None:
                for cell in cells:
                    game.play(search.board.position(cell))
                assert game.status is Status.WON
    assert any(answers) and not all(answers)
