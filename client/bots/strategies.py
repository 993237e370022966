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

    def __init__(
        self, weights: Weights = TUNED, rng: random.Random | None = None, seed: int | None = None
    ) -> None:
        """``weights`` for the heuristic; the defaults are the tuned ones. Among moves the
        heuristic likes equally, the bot picks with its own ``rng`` (or one seeded with
        ``seed``; by default a fresh one), so that bots of one strategy do not all play
        the same game."""
        self.weights = weights
        self.rng = rng if rng is not None else random.Random(seed)

    def choose(self, view: RacerView) -> Position:
        """The best move by :func:`~engine.heuristic.evaluate` after one placement."""
        board = view.board()
        rank, cards_left = view.card.rank, view.stock_left()
        best_cells, best_value = [-1], float("-inf")
        for cell in board.targets():
            token = board.place(cell, rank)
            value = evaluate(board, cards_left, self.weights)
            board.undo(token)
            if value > best_value:
                best_cells, best_value = [cell], value
            elif value == best_value:
                best_cells.append(cell)
        return board.position(self.rng.choice(best_cells))
