"""Look-ahead over the ranks of the next cards, counting the cards already seen.

The racer knows which cards are drawn, so it knows how many of each rank the stock
still holds: the next card's rank has a known distribution. Expectimax takes, for each
placement of the card in hand, the expected value over the next card's rank of the best
placement of that card, and so on for three plies, scoring the leaves with the
heuristic's look-ahead weights (:data:`~engine.heuristic.LOOKAHEAD`). What keeps three
plies within budget in pure Python:

- **The search board** (:mod:`engine.board`): a placement is a few integer
  operations, and a position's value a lookup on its masks
  (:class:`~engine.heuristic.ValueTable`).
- **The last ply places nothing.** A card's effect on one target depends only on
  whether it triggers the target's row and its column, so each target's (at most) four
  outcomes are scored once and shared by every rank.
- **Rank classes at the last ply.** There, only a card's order against the face-up
  ranks on the board matters (the trigger test compares with face-up ranks only), so
  ranks in the same gap, or equal to the same face-up rank, are one outcome with their
  probabilities summed. Above it they would be an approximation, so each rank is
  searched.
- **A beam below the root.** At inner decision nodes only the few placements the
  heuristic likes best are searched deeper; the search deepens one ply at a time and
  keeps the deepest answer finished within the per-move time budget.

The values are on one scale: a win is worth ``WIN`` plus its score, a loss ``LOSS``,
and a position still in play its heuristic value lifted by the look-ahead weights'
``unfinished``, so that the search does not gamble a likely win later on a quick one.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from client.bots.chance import next_card_value
from client.bots.view import RacerView
from engine import Position
from engine.board import Board
from engine.heuristic import LOOKAHEAD, WIN, ValueTable, Weights, value_table

#: The piles of a full grid of the published size, to check that no position in play can
#: score as much as a win.
_MOST_PILES = 16


class _OutOfTime(Exception):
    """Raised inside the search when the move's time budget is spent."""


class ExpectimaxStrategy:
    """Expectimax over the next cards' ranks with card counting and a per-move time budget."""

    name = "expectimax"

    def __init__(
        self,
        budget: float = 0.25,
        max_depth: int = 3,
        beam: int = 7,
        root_beam: int = 16,
        weights: Weights = LOOKAHEAD,
        clock: Callable[[], float] = time.perf_counter,
        rng: random.Random | None = None,
        seed: int | None = None,
    ) -> None:
        """``budget`` seconds per move (the search deepens while time is left, from
        greedy's one ply to ``max_depth`` plies); ``beam`` placements are searched deeper
        at each inner decision, and ``root_beam`` placements of the card in hand at each
        depth after the second; ``clock`` is injectable for tests. Placements of equal
        value are taken in an order drawn from the bot's own ``rng`` (or one seeded with
        ``seed``; by default a fresh one), so that bots of one strategy do not all play
        the same game.

        ``weights`` may not use the line exposure (the bitmask board scores positions
        without ranks), and a position in play must stay below a win: ``ValueError``.
        """
        if weights.exposure:
            raise ValueError("the look-ahead's weights cannot use the line exposure")
        if weights.unfinished + weights.pile * _MOST_PILES + weights.repairable >= WIN:
            raise ValueError("a position in play would score as much as a win")
        self.budget = budget
        self.max_depth = max_depth
        self.beam = beam
        self.root_beam = root_beam
        self.weights = weights
        self.clock = clock
        self.rng = rng if rng is not None else random.Random(seed)
        self._deadline = 0.0
        self._table: ValueTable | None = None

    def choose(self, view: RacerView) -> Position:
        """The placement of ``view.card`` with the best expected value found in time."""
        board = view.board()
        self._table = value_table(view.rules, self.weights)
        counts = view.unseen_ranks()
        cards_left = view.stock_left()
        rank = view.card.rank
        self._deadline = self.clock() + self.budget
        ranked = self._ranked_targets(board, rank, cards_left)
        best_cell, best_value = ranked[0]
        if best_value >= WIN or len(ranked) == 1:
            return board.position(best_cell)
        for depth in range(2, self.max_depth + 1):
            scored: list[tuple[int, float]] = []
            try:
                ranked = self._ranked_at_depth(
                    board, ranked, rank, counts, cards_left, depth, scored
                )
            except _OutOfTime:
                # The placements this depth finished, the last depth's best among them
                # (it goes first), compare with each other: take the best of them.
                if scored:
                    best_cell = max(scored, key=lambda item: item[1])[0]
                break
            best_cell = ranked[0][0]
            # A deeper look is spent only on the placements the last depth liked best.
            ranked = ranked[: self.root_beam]
        return board.position(best_cell)

    # ------------------------------------------------------------------ search

    def _ranked_targets(
        self, board: Board, rank: int, cards_left: int
    ) -> list[tuple[int, float]]:
        """Every target with its static value after placing ``rank``, best first."""
        assert self._table is not None
        value = self._table.value
        scored = [(cell, value(*board.after(cell, rank), cards_left)) for cell in board.targets()]
        # Shuffled, then sorted (a stable sort): equal values in the bot's own order, which
        # the deeper plies keep.
        self.rng.shuffle(scored)
        scored.sort(key=lambda item: -item[1])
        return scored

    def _ranked_at_depth(
        self,
        board: Board,
        ranked: list[tuple[int, float]],
        rank: int,
        counts: list[int],
        cards_left: int,
        depth: int,
        scored: list[tuple[int, float]],
    ) -> list[tuple[int, float]]:
        """The root targets with their ``depth``-ply expected values, best first.

        Each value is appended to ``scored`` as it is found, in the order of ``ranked``,
        so that a search out of time leaves the values it finished there.
        """
        for cell, static_value in ranked:
            if static_value <= -WIN:
                continue
            token = board.place(cell, rank)
            scored.append((cell, self._chance(board, counts, cards_left, depth - 1)))
            board.undo(token)
        if not scored:
            return ranked
        return sorted(scored, key=lambda item: -item[1])

    def _chance(self, board: Board, counts: list[int], cards_left: int, depth: int) -> float:
        """Expected value over the next card's rank, each rank placed at its best target."""
        if self.clock() > self._deadline:
            raise _OutOfTime
        table = self._table
        assert table is not None
        face_down = board.down.bit_count()
        if face_down > board.limit or cards_left == 0 or (
            not face_down and board.occupied.bit_count() == board.grid_size**2
        ):
            return table.value(board.occupied, board.down, board.full, cards_left)
        if depth <= 1:
            return next_card_value(board, table, counts, cards_left)
        # Every rank still possible: above the last ply a rank class would be only an
        # approximation, and searching each rank wins more deals for a few ms per move.
        expected = 0.0
        for rank, weight in enumerate(counts):
            if weight:
                counts[rank] -= 1
                expected += weight * self._decide(board, rank, counts, cards_left - 1, depth)
                counts[rank] += 1
        return expected / sum(counts)

    def _decide(
        self, board: Board, rank: int, counts: list[int], cards_left: int, depth: int
    ) -> float:
        """The best value of placing ``rank`` now, looking ``depth - 1`` further plies."""
        ranked = self._ranked_targets(board, rank, cards_left)
        if ranked[0][1] >= WIN:
            return ranked[0][1]
        best = float("-inf")
        for cell, static_value in ranked[: self.beam]:
            if static_value <= -WIN:
                break
            token = board.place(cell, rank)
            value = self._chance(board, counts, cards_left, depth - 1)
            board.undo(token)
            best = max(best, value)
        return best if best > float("-inf") else ranked[0][1]

