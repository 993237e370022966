"""The look-ahead's board: piles, face-down tops and full piles as bitmasks.

Expectimax scores tens of thousands of positions per move, and almost all of them are
one placement away from a position it keeps. :class:`MaskBoard` makes that placement a
few integer operations: one bit per cell of the engine's flat layout
(:mod:`engine.board`), so a row's or a column's other piles are one ``&``, a trigger is
one ``^``, and the heuristic's inputs (piles, face-down tops, face-down tops on full
piles, the trigger pattern) are bit counts. :meth:`MaskBoard.after` gives the masks of a
placement without making it, and :meth:`MaskGeometry.value` scores masks with a table,
so the last ply of the search never changes the board at all.

The heuristic is :func:`engine.heuristic.combine`, the same as
:func:`engine.heuristic.evaluate` without the line exposure (which needs ranks, and which
the look-ahead's weights do not use).

>>> from engine.board import Board
>>> from engine.heuristic import LOOKAHEAD
>>> board = MaskBoard.from_board(Board(), LOOKAHEAD)
>>> token = board.place(board.targets()[0], 4)
>>> cell = board.targets()[0]
>>> token = board.place(cell, 3)
>>> board.piles, board.face_down
(2, 1)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from engine.board import Board, Layout, layout, pattern_triggers
from engine.game import Position
from engine.heuristic import LOSS, WIN, Weights, combine
from engine.rules import Adjacency, Ruleset

#: What :meth:`MaskBoard.place` saves for :meth:`MaskBoard.undo`: the cell, its rank and
#: height, the three masks and the box before the placement.
MaskUndo = tuple[int, int, int, int, int, int, tuple[int, int, int, int]]

#: Scored mask triples kept per geometry before the table is emptied (a few tens of MB).
_TABLE_LIMIT = 400_000


@dataclass(slots=True)
class MaskGeometry:
    """Masks for one ruleset's cells, and the table of scored positions for one weight set."""

    rules: Ruleset
    weights: Weights
    layout: Layout
    row_others: tuple[int, ...]
    """For each cell, the other cells of its row."""
    col_others: tuple[int, ...]
    """For each cell, the other cells of its column."""
    everything: int
    not_first_col: int
    not_last_col: int
    regions: dict[tuple[int, int, int, int], int] = field(default_factory=dict)
    values: dict[int, float] = field(default_factory=dict)

    def region(self, box: tuple[int, int, int, int]) -> int:
        """The cells a new pile may take while the piles span ``box`` (rows, then cols)."""
        known = self.regions.get(box)
        if known is None:
            row_min, row_max, col_min, col_max = box
            width, span = self.layout.width, self.layout.size - 1
            rows = range(max(0, row_max - span), min(width - 1, row_min + span) + 1)
            cols = range(max(0, col_max - span), min(width - 1, col_min + span) + 1)
            known = sum(1 << (row * width + col) for row in rows for col in cols)
            self.regions[box] = known
        return known

    def neighbours(self, occupied: int) -> int:
        """Cells next to a pile, by the ruleset's adjacency."""
        width = self.layout.width
        sideways = ((occupied >> 1) & self.not_last_col) | ((occupied << 1) & self.not_first_col)
        if self.rules.adjacency is Adjacency.ANY:
            sideways |= occupied
            return (sideways | (sideways >> width) | (sideways << width)) & self.everything
        return (sideways | (occupied >> width) | (occupied << width)) & self.everything

    def value(self, occupied: int, down: int, full: int, cards_left: int) -> float:
        """The heuristic value of a position given by its masks, ``cards_left`` still to come.

        Won and lost positions score like :func:`engine.heuristic.evaluate`; the rest come
        from a table, since the same masks recur all through a move's search.
        """
        face_down = down.bit_count()
        rules = self.rules
        if face_down > rules.face_down_limit:
            return LOSS
        if not face_down and occupied.bit_count() == rules.grid_size**2:
            return WIN + cards_left
        if not cards_left:
            return LOSS
        cells = len(self.row_others)
        key = (((occupied << cells) | down) << cells) | full
        known = self.values.get(key)
        if known is None:
            if len(self.values) >= _TABLE_LIMIT:
                self.values.clear()
            needed = _triggers_needed(self.layout, rules.grid_size, occupied, down)
            known = combine(
                self.weights,
                occupied.bit_count(),
                face_down,
                rules.face_down_limit,
                needed,
                (down & full).bit_count(),
            )
            self.values[key] = known
        return known


@cache
def geometry(rules: Ruleset, weights: Weights) -> MaskGeometry:
    """The masks and the value table for ``rules`` and ``weights`` (one per pair, cached)."""
    cells = layout(rules.grid_size, rules.adjacency)
    width = cells.width
    count = width * width
    row_others = tuple(
        sum(1 << (cell - cell % width + col) for col in range(width)) & ~(1 << cell)
        for cell in range(count)
    )
    col_others = tuple(
        sum(1 << (cell % width + width * row) for row in range(width)) & ~(1 << cell)
        for cell in range(count)
    )
    everything = (1 << count) - 1
    first_col = sum(1 << (width * row) for row in range(width))
    last_col = first_col << (width - 1)
    return MaskGeometry(
        rules,
        weights,
        cells,
        row_others,
        col_others,
        everything,
        everything & ~first_col,
        everything & ~last_col,
    )


def _triggers_needed(cells: Layout, size: int, occupied: int, down: int) -> int | None:
    """:func:`engine.board.triggers_needed` from masks: the same pattern search, on the
    column masks of the occupied box."""
    if not down:
        return 0
    width = cells.width
    line = (1 << width) - 1
    row_chunks = [(occupied >> (row * width)) & line for row in range(width)]
    down_chunks = [(down >> (row * width)) & line for row in range(width)]
    rows = [row for row in range(width) if row_chunks[row]]
    columns_used = 0
    for chunk in row_chunks:
        columns_used |= chunk
    # The box's columns, empty ones inside it included, as engine.board reads them.
    col_min = (columns_used & -columns_used).bit_length() - 1
    col_max = columns_used.bit_length() - 1
    occupied_masks, down_masks = [], []
    for col in range(col_min, col_max + 1):
        occupied_mask = down_mask = 0
        for bit, row in enumerate(range(rows[0], rows[-1] + 1)):
            occupied_mask |= ((row_chunks[row] >> col) & 1) << bit
            down_mask |= ((down_chunks[row] >> col) & 1) << bit
        occupied_masks.append(occupied_mask)
        down_masks.append(down_mask)
    return pattern_triggers(tuple(occupied_masks), tuple(down_masks), size)


class MaskBoard:
    """A position as masks over the engine's cells, with place and undo.

    ``occupied`` has a bit per pile, ``down`` per face-down top, ``full`` per pile at
    capacity; ``rank`` and ``height`` are per cell, as on :class:`~engine.board.Board`.
    """

    __slots__ = ("box", "down", "full", "geometry", "height", "occupied", "rank")

    def __init__(self, geometry: MaskGeometry) -> None:
        """An empty board; use :meth:`from_board` for a position."""
        self.geometry = geometry
        cells = geometry.layout.width ** 2
        self.rank = [0] * cells
        self.height = [0] * cells
        self.occupied = self.down = self.full = 0
        centre = geometry.layout.offset
        self.box = (centre, centre, centre, centre)

    @classmethod
    def from_board(cls, board: Board, weights: Weights) -> MaskBoard:
        """The same position as ``board``, valued with ``weights``."""
        mask_board = cls(geometry(board.rules, weights))
        capacity = board.capacity
        for cell in board.occupied():
            bit = 1 << cell
            mask_board.occupied |= bit
            if not board.up[cell]:
                mask_board.down |= bit
            if board.height[cell] >= capacity:
                mask_board.full |= bit
            mask_board.rank[cell] = board.rank[cell]
            mask_board.height[cell] = board.height[cell]
        mask_board.box = (board.box[0], board.box[1], board.box[2], board.box[3])
        return mask_board

    def position(self, cell: int) -> Position:
        """The engine position ``(row, col)`` of a cell index."""
        row, col = divmod(cell, self.geometry.layout.width)
        offset = self.geometry.layout.offset
        return row - offset, col - offset

    @property
    def piles(self) -> int:
        """How many piles are on the board."""
        return self.occupied.bit_count()

    @property
    def face_down(self) -> int:
        """How many top cards are face down."""
        return self.down.bit_count()

    def targets(self) -> list[int]:
        """The cells the next card may go to, in the engine's order (reading order)."""
        geo = self.geometry
        occupied = self.occupied
        if not occupied:
            offset = geo.layout.offset
            return [offset * geo.layout.width + offset]
        free = geo.neighbours(occupied) & ~occupied & geo.region(self.box)
        mask = free | (occupied & ~self.full)
        cells = []
        while mask:
            low = mask & -mask
            cells.append(low.bit_length() - 1)
            mask ^= low
        return cells

    def line_flips(self, cell: int) -> tuple[int, int, int, int, int, int]:
        """For a card placed on ``cell``: the other piles of its row, the lowest and
        highest face-up rank among them, and the same for its column.

        A rank triggers the row if the row has other piles and the rank is below the
        lowest or above the highest (with no face-up rank, lowest is 11 and highest 0,
        so every rank does). Ties do not trigger.
        """
        geo = self.geometry
        occupied, down, ranks = self.occupied, self.down, self.rank
        result: list[int] = []
        for others in (occupied & geo.row_others[cell], occupied & geo.col_others[cell]):
            lowest, highest = 11, 0
            face_up = others & ~down
            while face_up:
                low = face_up & -face_up
                face_up ^= low
                other_rank = ranks[low.bit_length() - 1]
                if other_rank < lowest:
                    lowest = other_rank
                if other_rank > highest:
                    highest = other_rank
            result += (others, lowest, highest)
        return result[0], result[1], result[2], result[3], result[4], result[5]

    def after(self, cell: int, rank: int) -> tuple[int, int, int]:
        """The ``(occupied, down, full)`` masks after placing ``rank`` on ``cell``,
        leaving the board as it is."""
        row, row_low, row_high, col, col_low, col_high = self.line_flips(cell)
        bit = 1 << cell
        down = self.down & ~bit
        if row and (rank < row_low or rank > row_high):
            down ^= row
        if col and (rank < col_low or rank > col_high):
            down ^= col
        full = self.full
        if self.height[cell] + 1 >= self.geometry.rules.pile_capacity:
            full |= bit
        return self.occupied | bit, down, full

    def place(self, cell: int, rank: int) -> MaskUndo:
        """Put a card of ``rank`` on ``cell`` (a legal target) and apply the flips."""
        token = (
            cell, self.rank[cell], self.height[cell], self.occupied, self.down, self.full,
            self.box,
        )
        self.occupied, self.down, self.full = self.after(cell, rank)
        self.rank[cell] = rank
        self.height[cell] += 1
        if not token[2]:
            row, col = divmod(cell, self.geometry.layout.width)
            row_min, row_max, col_min, col_max = self.box
            self.box = (min(row_min, row), max(row_max, row), min(col_min, col), max(col_max, col))
        return token

    def undo(self, token: MaskUndo) -> None:
        """Take back the :meth:`place` that returned ``token`` (the most recent one)."""
        cell, self.rank[cell], self.height[cell], self.occupied, self.down, self.full = token[:6]
        self.box = token[6]

    def value(self, cards_left: int) -> float:
        """The heuristic value of the position now (see :meth:`MaskGeometry.value`)."""
        return self.geometry.value(self.occupied, self.down, self.full, cards_left)
