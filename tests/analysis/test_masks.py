"""The look-ahead's bitmask board agrees with the search board, move for move."""

from __future__ import annotations

import random

import pytest

from client.bots.masks import MaskBoard, MaskUndo
from engine import Adjacency, Game, Ruleset
from engine.board import Board
from engine.heuristic import LOOKAHEAD, evaluate

RULESETS = [
    Ruleset(),
    Ruleset(adjacency=Adjacency.ANY),
    Ruleset(grid_size=3, pile_capacity=5, face_down_limit=2),
]


def _same(masks: MaskBoard, board: Board) -> None:
    cells = range(len(board.rank))
    assert masks.occupied == sum(1 << cell for cell in cells if board.height[cell])
    face_down = [cell for cell in cells if board.height[cell] and not board.up[cell]]
    assert masks.down == sum(1 << cell for cell in face_down)
    assert masks.full == sum(1 << cell for cell in cells if board.height[cell] >= board.capacity)
    assert (masks.piles, masks.face_down) == (board.piles, board.face_down)
    assert list(masks.box) == board.box


@pytest.mark.parametrize("rules", RULESETS, ids=lambda r: r.notation())
def test_mask_board_follows_the_board_through_random_games(rules: Ruleset) -> None:
    rng = random.Random(11)
    for game_number in range(25):
        game, board = Game.new(f"masks-{game_number}", rules), Board(rules)
        masks = MaskBoard.from_board(board, LOOKAHEAD)
        tokens: list[MaskUndo] = []
        cards_left = len(game.stock)
        while not game.is_over() and game.card is not None:
            rank = game.card.rank
            cards_left -= 1
            targets = board.targets()
            assert masks.targets() == targets
            for cell in targets:
                # Every placement, scored without making it, as the engine's board scores it.
                token = board.place(cell, rank)
                occupied, down, full = masks.after(cell, rank)
                assert masks.geometry.value(occupied, down, full, cards_left) == evaluate(
                    board, cards_left, LOOKAHEAD
                )
                board.undo(token)
            cell = rng.choice(targets)
            game.play(board.position(cell))
            board.place(cell, rank)
            tokens.append(masks.place(cell, rank))
            _same(masks, board)
            assert masks.value(cards_left) == evaluate(board, cards_left, LOOKAHEAD)
        _same(MaskBoard.from_board(board, LOOKAHEAD), board)
        for mask_token in reversed(tokens):
            masks.undo(mask_token)
        _same(masks, Board(rules))
