"""The simple strategies: ``random`` (a baseline) and ``greedy`` (the fast one: the tuned
one-ply heuristic, its few best placements checked one card further)."""

from __future__ import annotations

import random

from client.bots.chance import next_card_value
from client.bots.view import RacerView
from engine import Position
from engine.heuristic import LOOKAHEAD, LOSS, TUNED, WIN, Weights, evaluate, value_table

#: How many of its best placements greedy checks one card further (see GreedyStrategy).
GREEDY_CHECKED = 3


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
    """The move the heuristic likes best, its few best checked against the next card.

    Every placement of the card in hand is scored by :func:`~engine.heuristic.evaluate`;
    the ``checked`` best are then compared by the expected value of the next card at its
    best target (:func:`~client.bots.chance.next_card_value`, over the ranks the stock
    still holds, with the look-ahead weights). One ply alone walks into lines the next
    card is likely to trigger; this catches most of them for a fraction of a millisecond.
    """

    name = "greedy"

    def __init__(
        self,
        weights: Weights = TUNED,
        rng: random.Random | None = None,
        seed: int | None = None,
        checked: int = GREEDY_CHECKED,
    ) -> None:
        """``weights`` for the heuristic; the defaults are the tuned ones. ``checked``
        placements are looked at one card further (1: none, plain one ply). Among moves
        the bot likes equally, it picks with its own ``rng`` (or one seeded with
        ``seed``; by default a fresh one), so that bots of one strategy do not all play
        the same game."""
        self.weights = weights
        self.checked = checked
        self.rng = rng if rng is not None else random.Random(seed)

    def choose(self, view: RacerView) -> Position:
        """The best move by :func:`~engine.heuristic.evaluate`, the ``checked`` best
        compared one card further."""
        board = view.board()
        rank, cards_left = view.card.rank, view.stock_left()
        scored = []
        for cell in board.targets():
            token = board.place(cell, rank)
            scored.append((cell, evaluate(board, cards_left, self.weights)))
            board.undo(token)
        # Shuffled, then sorted (a stable sort): equal values in the bot's own order.
        self.rng.shuffle(scored)
        scored.sort(key=lambda item: -item[1])
        best_cell, best_value = scored[0]
        if best_value >= WIN or best_value <= LOSS or self.checked < 2 or len(scored) < 2:
            return board.position(best_cell)
        table = value_table(view.rules, LOOKAHEAD)
        counts = view.unseen_ranks()
        best_expected = float("-inf")
        for cell, value in scored[: self.checked]:
            if value <= LOSS:
                break  # lost at once (and so is every placement after it)
            token = board.place(cell, rank)
            expected = next_card_value(board, table, counts, cards_left)
            board.undo(token)
            if expected > best_expected:
                best_cell, best_expected = cell, expected
        return board.position(best_cell)
