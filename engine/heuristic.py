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

from dataclasses import dataclass

from engine.board import Board, triggers_needed

#: Beyond any heuristic value: a won position scores this plus the cards left.
WIN = 1000.0
LOSS = -1000.0

#: Ranks run from 1 (Ace) to this (Ten).
_TOP_RANK = 10


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
    if board.face_down > board.limit:
        return LOSS
    if board.face_down == 0 and board.piles == board.grid_size * board.grid_size:
        return WIN + cards_left
    if cards_left == 0:
        return LOSS
    return combine(
        weights,
        board.piles,
        board.face_down,
        board.limit,
        triggers_needed(board) if board.face_down else 0,
        _buried(board) if board.face_down else 0,
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
    (:func:`exposure`). Shared with the look-ahead's bitmask board, so both score
    positions alike.
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


def _buried(board: Board) -> int:
    """Face-down tops on full piles: nothing can cover them any more."""
    capacity, height, up = board.capacity, board.height, board.up
    return sum(1 for cell in board.occupied() if not up[cell] and height[cell] >= capacity)

def exposure(board: Board) -> float:
    """How many tops a trigger is expected to turn face down, summed over the lines.

    For each row and column of two piles or more: the chance that a card of a random rank
    would trigger it (below its lowest face-up rank or above its highest, or any card if
    none is face up), times its face-up tops less its face-down ones. A line whose face-up
    ranks span the deck is safe; a line of one face-up rank flips on almost any card.
    """
    width, height, up, ranks = board.layout.width, board.height, board.up, board.rank
    row_min, row_max, col_min, col_max = board.box
    rows = [range(row * width + col_min, row * width + col_max + 1)
            for row in range(row_min, row_max + 1)]
    cols = [range(row_min * width + col, row_max * width + col + 1, width)
            for col in range(col_min, col_max + 1)]
    total = 0.0
    for line in rows + cols:
        lowest, highest, face_up, face_down = 11, 0, 0, 0
        for cell in line:
            if height[cell]:
                if up[cell]:
                    face_up += 1
                    lowest = min(lowest, ranks[cell])
                    highest = max(highest, ranks[cell])
                else:
                    face_down += 1
        if face_up + face_down < 2:
            continue
        chance = (lowest - 1 + _TOP_RANK - highest) / _TOP_RANK if face_up else 1.0
        total += chance * (face_up - face_down)
    return total
