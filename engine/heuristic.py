"""How good a position looks to a racer who cannot see the stock: one number.

The weights were tuned by play over seeded deals (``python -m bench.bots``): open new
piles early (each pile opened is one the endgame need not find a card for), keep few
cards face down, keep the face-down pattern repairable without stacking and with few
row or column triggers (see :func:`engine.board.triggers_needed`), and never leave a
face-down card on a full pile, where nothing can cover it. One ply also needs to shun
lines that the next card would likely trigger with many face-up tops in them
(:func:`exposure`), a risk a look-ahead sees for itself. One ply (greedy) and the
leaves of a look-ahead (expectimax) want different weights: :data:`TUNED` and
:data:`LOOKAHEAD`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from engine.board import TOP_RANK, Board, Layout, layout, mask_triggers, triggers_needed
from engine.rules import Ruleset

#: Beyond any heuristic value: a won position scores this plus the cards left.
WIN = 1000.0
LOSS = -1000.0

#: Scored mask triples a :class:`ValueTable` keeps before it is emptied (a few tens of MB).
_TABLE_LIMIT = 400_000


@dataclass(frozen=True, slots=True)
class Weights:
    """The heuristic's weights; the defaults are the tuned ones."""

    pile: float = 12.0
    face_down: float = 1.0
    repairable: float = 6.0
    buried_face_down: float = 1.5
    at_limit: float = 1.0
    triggers: float = 0.5
    """Per row or column trigger still needed to turn the face-down tops up."""
    exposure: float = 0.4
    """Per card the next trigger is expected to turn face down (see :func:`exposure`)."""
    unfinished: float = 0.0
    """Added to every position neither won nor lost. One ply compares only such
    positions with each other, so it does not matter there; a look-ahead also weighs them
    against wins (``WIN`` plus the score) and losses (``LOSS``), and this says how close
    to a win a position still in play is: the higher, the less risk a search takes to
    win early."""


#: The tuned weights for one ply (greedy).
TUNED = Weights()

#: The tuned weights for the leaves of a look-ahead (expectimax): piles and repairability
#: count for more once the search itself sees the next card's risks, face-down cards twice
#: as much, and a position in play sits well above a loss, so that three plies do not
#: gamble a likely win later on a quick one (each loss costs the whole score).
LOOKAHEAD = Weights(
    pile=8.0, face_down=2.0, repairable=8.0, triggers=0.0, exposure=0.0, unfinished=200.0
)

def evaluate(board: Board, cards_left: int, weights: Weights = TUNED) -> float:
    """The value of ``board`` with ``cards_left`` cards still to come (higher is better)."""
    face_down = board.down.bit_count()
    if face_down > board.limit:
        return LOSS
    piles = board.occupied.bit_count()
    if face_down == 0 and piles == board.grid_size * board.grid_size:
        return WIN + cards_left
    if cards_left == 0:
        return LOSS
    return combine(
        weights,
        piles,
        face_down,
        board.limit,
        triggers_needed(board) if face_down else 0,
        (board.down & board.full).bit_count(),
        exposure(board) if weights.exposure else 0.0,
    )


def combine(
    weights: Weights,
    piles: int,
    face_down: int,
    limit: int,
    needed: int | None,
    buried: int,
    exposed: float = 0.0,
) -> float:
    """The heuristic value of a position that is neither won nor lost, from its counts.

    ``needed`` is :func:`~engine.board.triggers_needed` (``None``: not repairable) and
    ``buried`` the face-down tops on full piles, ``exposed`` the line exposure
    (:func:`exposure`). Shared with :class:`ValueTable`, so that a look-ahead scores
    positions as :func:`evaluate` does.
    """
    value = weights.pile * piles - weights.face_down * face_down
    if exposed:
        value -= weights.exposure * exposed
    if needed is not None:
        value += weights.repairable - weights.triggers * needed
    if face_down:
        if face_down == limit:
            value -= weights.at_limit
        value -= weights.buried_face_down * buried
    return value + weights.unfinished


def exposure(board: Board) -> float:
    """How many tops a trigger is expected to turn face down, summed over the lines.

    For each row and column of two piles or more: the chance that a card of a random rank
    would trigger it (below its lowest face-up rank or above its highest, or any card if
    none is face up), times its face-up tops less its face-down ones. A line whose face-up
    ranks span the deck is safe; a line of one face-up rank flips on almost any card.
    """
    geo = board.layout
    occupied, down, at_most = board.occupied, board.down, board.at_most
    row_min, row_max, col_min, col_max = board.box
    width = geo.width
    lines = [occupied & (geo.row_others[row * width] | 1 << (row * width))
             for row in range(row_min, row_max + 1)]
    lines += [occupied & (geo.col_others[col] | 1 << col) for col in range(col_min, col_max + 1)]
    total = 0.0
    for line in lines:
        if line & (line - 1) == 0:
            continue  # fewer than two piles
        face_up = line & ~down
        face_up_count = face_up.bit_count()
        face_down_count = line.bit_count() - face_up_count
        if face_up:
            lowest = next(rank for rank in range(1, TOP_RANK + 1) if face_up & at_most[rank])
            highest = next(
                rank for rank in range(TOP_RANK, 0, -1) if face_up & ~at_most[rank - 1]
            )
            chance = (lowest - 1 + TOP_RANK - highest) / TOP_RANK
        else:
            chance = 1.0
        total += chance * (face_up_count - face_down_count)
    return total


@dataclass(slots=True)
class ValueTable:
    """:func:`evaluate` without the line exposure, from a position's masks, remembered.

    A look-ahead scores the same few masks over and over within a move (and from move to
    move): ``(occupied, down, full)`` decide the value, the ranks do not (the exposure is
    the only term that reads them, so the table refuses weights that use it).
    """

    rules: Ruleset
    weights: Weights
    layout: Layout
    values: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.weights.exposure:
            raise ValueError("a value table cannot use the line exposure (it needs ranks)")

    def value(self, occupied: int, down: int, full: int, cards_left: int) -> float:
        """The value of the position with these masks, ``cards_left`` cards still to come."""
        face_down = down.bit_count()
        rules = self.rules
        if face_down > rules.face_down_limit:
            return LOSS
        if not face_down and occupied.bit_count() == rules.grid_size**2:
            return WIN + cards_left
        if not cards_left:
            return LOSS
        cells = len(self.layout.row_others)
        key = (((occupied << cells) | down) << cells) | full
        known = self.values.get(key)
        if known is None:
            if len(self.values) >= _TABLE_LIMIT:
                self.values.clear()
            known = combine(
                self.weights,
                occupied.bit_count(),
                face_down,
                rules.face_down_limit,
                mask_triggers(self.layout, occupied, down),
                (down & full).bit_count(),
            )
            self.values[key] = known
        return known


@cache
def value_table(rules: Ruleset, weights: Weights) -> ValueTable:
    """The value table for ``rules`` and ``weights`` (one per pair, shared by every bot)."""
    return ValueTable(rules, weights, layout(rules.grid_size, rules.adjacency))
