"""The simple strategies: ``random`` (a baseline) and ``greedy`` (the tuned one-ply heuristic)."""

from __future__ import annotations

import random

from client.bots.view import RacerView
from engine import Position
from engine.heuristic import TUNED, Weights, evaluate


class RandomStrategy:
    """Any legal move, uniformly; it never wins, which makes it a useful floor."""

    name = "random"

    def __init__(self, rng: random.Random | None = None, seed: int | None = None) -> None:
        """Pass ``rng`` (or a ``seed``) to make the choices reproducible."""
        self.rng = rng if rng is not None else random.Random(seed)

    def choose(self, view: RacerView) -> Position:
        """A legal move picked at random."""
        return self.rng.choice(view.legal_moves())


class GreedyStrategy:
    """The move whose resulting position the heuristic likes best, looking no further."""

    name = "greedy"

    def __init__(self, weights: Weights = TUNED) -> None:
        """``weights`` for the heuristic; the defaults are the tuned ones."""
        self.weights = weights

    def choose(self, view: RacerView) -> Position:
        """The best move by :func:`~engine.heuristic.evaluate` after one placement."""
        board = view.board()
        rank, cards_left = view.card.rank, view.stock_left()
        best_cell, best_value = -1, float("-inf")
        for cell in board.targets():
            token = board.place(cell, rank)
            value = evaluate(board, cards_left, self.weights)
            board.undo(token)
            if value > best_value:
                best_cell, best_value = cell, value
        return board.position(best_cell)
