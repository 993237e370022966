"""A second, deliberately naive implementation of the rules, written straight from the text.

It keeps the grid as a dictionary of card lists, recomputes everything from scratch and
deep-copies the whole state on every move. It exists for two reasons: as an independent
oracle that the tests compare :class:`engine.Game` against on random games, and as the
baseline that ``bench/engine.py`` measures the real engine against. Never use it to play.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from engine.cards import Card
from engine.game import Position
from engine.rules import Adjacency, Ruleset


@dataclass
class ReferenceGame:
    """The state as the rules describe it: piles of cards with a face for each top."""

    stock: list[Card]
    rules: Ruleset = field(default_factory=Ruleset)
    piles: dict[Position, list[Card]] = field(default_factory=dict)
    face_up: dict[Position, bool] = field(default_factory=dict)
    drawn: int = 0
    status: str = "playing"

    def current(self) -> Card | None:
        """The card in hand, or ``None`` once the game is over."""
        return self.stock[self.drawn] if self.status == "playing" else None

    def fits(self, positions: list[Position]) -> bool:
        """Whether these positions fit in the grid's box."""
        rows = [r for r, _ in positions]
        cols = [c for _, c in positions]
        size = self.rules.grid_size
        return max(rows) - min(rows) < size and max(cols) - min(cols) < size

    def neighbours(self, position: Position) -> list[Position]:
        """The positions next to ``position`` under the ruleset's adjacency."""
        row, col = position
        steps = [(-1, 0), (1, 0), (0, -1), (0, 1)]
        if self.rules.adjacency is Adjacency.ANY:
            steps += [(-1, -1), (-1, 1), (1, -1), (1, 1)]
        return [(row + dr, col + dc) for dr, dc in steps]

    def legal_moves(self) -> list[Position]:
        """Every legal target, sorted, found by trying every position in a wide square."""
        if self.status != "playing":
            return []
        if not self.piles:
            return [(0, 0)]
        moves = []
        for row in range(-10, 11):
            for col in range(-10, 11):
                pos = (row, col)
                if pos in self.piles:
                    ok = len(self.piles[pos]) < self.rules.pile_capacity
                else:
                    ok = any(n in self.piles for n in self.neighbours(pos))
                if ok and self.fits([*self.piles, pos]):
                    moves.append(pos)
        return sorted(moves)

    def play(self, position: Position) -> ReferenceGame:
        """The state after placing the current card at ``position`` (the old one untouched)."""
        if position not in self.legal_moves():
            raise ValueError(f"illegal move {position}")
        after = copy.deepcopy(self)
        card = after.stock[after.drawn]
        after.drawn += 1
        after.piles.setdefault(position, []).append(card)
        after.face_up[position] = True
        for axis in (0, 1):  # the row, then the column
            others = [p for p in after.piles if p != position and p[axis] == position[axis]]
            up_ranks = [after.piles[p][-1].rank for p in others if after.face_up[p]]
            if not up_ranks or card.rank > max(up_ranks) or card.rank < min(up_ranks):
                for p in others:
                    after.face_up[p] = not after.face_up[p]
        down = sum(1 for p in after.piles if not after.face_up[p])
        if down > after.rules.face_down_limit:
            after.status = "lost"
        elif len(after.piles) == after.rules.grid_size**2 and down == 0:
            after.status = "won"
        elif after.drawn == len(after.stock):
            after.status = "lost"
        return after

    def tops(self) -> list[tuple[int, int, str, bool, int]]:
        """Every pile as ``(row, col, top card, face up, height)``, sorted by position."""
        return [
            (r, c, str(cards[-1]), self.face_up[(r, c)], len(cards))
            for (r, c), cards in sorted(self.piles.items())
        ]
