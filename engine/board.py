"""The search board: one Foursquare position as bitmasks, with place and undo.

:class:`~engine.game.Game` is the readable authority (cards, events, history) and
:mod:`engine.reference` the naive oracle. Search (the par solver and every bot) plays
millions of placements and needs none of what a game keeps: only the top rank, face and
height of each pile, a quick way to try a placement and take it back, and quick answers
to "which piles would this card turn over?". :class:`Board` is that, and the only such
board: the solver and the bots both search on it, and property tests hold it to the
engine and the oracle move for move.

Cells are the engine's flat layout: rows and cols from ``-(n-1)`` to ``n-1`` (the box
always contains the first card), cell ``row * width + col`` with ``width = 2n - 1``. A
position is three masks with one bit per cell: ``occupied`` (a pile is there), ``down``
(its top is face down), ``full`` (the pile is at capacity). A row's or a column's other
piles are then one ``&``, and a trigger turns them over with one ``^``. The trigger test
itself is two ``&`` as well: ``at_most[k]`` holds the piles whose top rank is at most
``k``, so "a face-up other ranks at most the card, and one at least" needs no loop over
the line (:meth:`Board.flips`, the one place the flip rule is written for search).

>>> board = Board()
>>> token = board.place(board.cell((0, 0)), 4)
>>> token = board.place(board.cell((0, 1)), 3)
>>> board.face_down, board.piles
(1, 2)
>>> board.undo(token)
>>> board.face_down, board.piles
(0, 1)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache

from engine.game import Position
from engine.rules import Adjacency, Ruleset

#: Ranks run from 1 (Ace) to this (Ten).
TOP_RANK = 10

#: What :meth:`Board.place` returns and :meth:`Board.undo` takes back: the cell, its
#: previous rank and height, the masks and the box before the placement.
UndoToken = tuple[int, int, int, int, int, int, tuple[int, int, int, int]]

Box = tuple[int, int, int, int]
"""The occupied box in cell coordinates: ``(row_min, row_max, col_min, col_max)``."""


@dataclass(slots=True)
class Layout:
    """Masks for one ruleset's cells, shared by every board with that ruleset."""

    size: int
    offset: int
    width: int
    cells: int
    """How many cells the layout has (``width²``): the bits of a mask."""
    diagonal: bool
    """Whether diagonal neighbours may take a new pile (``adjacency = "any"``)."""
    row_others: tuple[int, ...]
    """For each cell, the other cells of its row."""
    col_others: tuple[int, ...]
    """For each cell, the other cells of its column."""
    row_masks: tuple[int, ...]
    """Every cell of each row of the layout, top row first."""
    col_masks: tuple[int, ...]
    """Every cell of each column, left column first."""
    everything: int
    not_first_col: int
    not_last_col: int
    regions: dict[Box, int] = field(default_factory=dict)
    triggers: dict[int, int | None] = field(default_factory=dict)
    """:func:`mask_triggers` answers already found, by ``(occupied, down)``."""
    repairs: dict[int, frozenset[int]] = field(default_factory=dict)
    """:func:`repairable_patterns` answers already found, by ``occupied``."""
    one_stack: dict[int, bool] = field(default_factory=dict)
    """:func:`repairable_with_one_stack` answers already found, by the three masks."""

    @property
    def centre(self) -> int:
        """The cell of position ``(0, 0)``, where the first card goes."""
        return self.offset * self.width + self.offset

    def neighbours(self, occupied: int) -> int:
        """Cells next to a pile of ``occupied``, by the ruleset's adjacency."""
        width = self.width
        sideways = ((occupied >> 1) & self.not_last_col) | ((occupied << 1) & self.not_first_col)
        if self.diagonal:
            sideways |= occupied
            return (sideways | (sideways >> width) | (sideways << width)) & self.everything
        return (sideways | (occupied >> width) | (occupied << width)) & self.everything

    def region(self, box: Box) -> int:
        """The cells a new pile may take while the piles span ``box``: every cell that
        keeps the box within ``size`` x ``size``."""
        known = self.regions.get(box)
        if known is None:
            row_min, row_max, col_min, col_max = box
            width, span = self.width, self.size - 1
            rows = range(max(0, row_max - span), min(width - 1, row_min + span) + 1)
            cols = range(max(0, col_max - span), min(width - 1, col_min + span) + 1)
            known = sum(1 << (row * width + col) for row in rows for col in cols)
            self.regions[box] = known
        return known


@cache
def layout(size: int, adjacency: Adjacency) -> Layout:
    """The cell layout for a grid of ``size`` and an adjacency rule (cached): wide enough
    (``2 * size - 1``) for the box to float around the first card."""
    return _layout(size, size - 1, 2 * size - 1, adjacency)


@cache
def box_layout(size: int, adjacency: Adjacency) -> Layout:
    """The layout of the final ``size`` x ``size`` box alone (cached): for a search that
    has fixed where the box lies, on masks of ``size²`` bits."""
    return _layout(size, 0, size, adjacency)


def _layout(size: int, offset: int, width: int, adjacency: Adjacency) -> Layout:
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
    return Layout(
        size,
        offset,
        width,
        count,
        adjacency is Adjacency.ANY,
        row_others,
        col_others,
        tuple(((1 << width) - 1) << (row * width) for row in range(width)),
        tuple(first_col << col for col in range(width)),
        everything,
        everything & ~first_col,
        everything & ~last_col,
    )


class Board:
    """The piles of one game as masks, ranks and heights, with place and undo.

    Attributes are public for speed-critical readers (search); only :meth:`place` and
    :meth:`undo` change them.
    """

    __slots__ = (
        "at_most",
        "box",
        "capacity",
        "down",
        "full",
        "grid_size",
        "height",
        "layout",
        "limit",
        "occupied",
        "rank",
        "rules",
    )

    def __init__(self, rules: Ruleset = Ruleset()) -> None:
        """An empty board for ``rules``."""
        self.rules = rules
        self.layout = layout(rules.grid_size, rules.adjacency)
        self.grid_size = rules.grid_size
        self.capacity = rules.pile_capacity
        self.limit = rules.face_down_limit
        cells = self.layout.width**2
        self.rank = [0] * cells
        """Top rank of each cell, 0 where there is no pile."""
        self.height = [0] * cells
        self.occupied = 0
        self.down = 0
        self.full = 0
        self.at_most = [0] * (TOP_RANK + 1)
        """``at_most[k]``: the piles whose top rank is at most ``k`` (``at_most[0]`` is 0)."""
        centre = self.layout.offset
        self.box: Box = (centre, centre, centre, centre)

    @classmethod
    def replayed(
        cls, rules: Ruleset, ranks: Iterable[int], positions: Iterable[Position]
    ) -> Board:
        """The board after placing ``ranks`` at ``positions`` in turn.

        Raises ``ValueError`` if a position is not a legal target when it is played, so a
        board built from untrusted data is always one that play could reach.
        """
        board = cls(rules)
        for rank, position in zip(ranks, positions, strict=True):
            cell = board.cell(position)
            if board.lost() or board.won():
                raise ValueError("the game was already over")
            if not board.is_target(cell):
                raise ValueError(f"{position} is not a legal move at that point")
            board.place(cell, rank)
        return board

    # ------------------------------------------------------------ coordinates

    def cell(self, position: Position) -> int:
        """The cell index of an engine position ``(row, col)``; ``ValueError`` if off the grid."""
        offset, width = self.layout.offset, self.layout.width
        row, col = position[0] + offset, position[1] + offset
        if not (0 <= row < width and 0 <= col < width):
            raise ValueError(f"{position} is off the grid")
        return row * width + col

    def position(self, cell: int) -> Position:
        """The engine position ``(row, col)`` of a cell index."""
        row, col = divmod(cell, self.layout.width)
        return row - self.layout.offset, col - self.layout.offset

    # ---------------------------------------------------------------- reading

    @property
    def piles(self) -> int:
        """How many piles are on the board."""
        return self.occupied.bit_count()

    @property
    def face_down(self) -> int:
        """How many top cards are face down."""
        return self.down.bit_count()

    def target_mask(self) -> int:
        """The cells the next card may go to, as a mask."""
        occupied, geo = self.occupied, self.layout
        if not occupied:
            return 1 << geo.centre
        free = geo.neighbours(occupied) & ~occupied & geo.region(self.box)
        return free | (occupied & ~self.full)

    def targets(self) -> list[int]:
        """The cells the next card may go to, in the engine's order (reading order)."""
        return cells_of(self.target_mask())

    def is_target(self, cell: int) -> bool:
        """Whether the next card may go to ``cell``."""
        return bool(self.target_mask() >> cell & 1)

    def lost(self) -> bool:
        """Too many face-down top cards."""
        return self.down.bit_count() > self.limit

    def won(self) -> bool:
        """A full grid, every top card face up."""
        return not self.down and self.occupied.bit_count() == self.grid_size**2

    def pile_cells(self) -> list[int]:
        """The cells holding a pile, in reading order."""
        return cells_of(self.occupied)

    def face_up_ranks(self) -> set[int]:
        """The ranks of the face-up tops."""
        face_up, at_most = self.occupied & ~self.down, self.at_most
        return {
            rank
            for rank in range(1, TOP_RANK + 1)
            if face_up & at_most[rank] & ~at_most[rank - 1]
        }

    def flips(self, cell: int, rank: int) -> int:
        """The piles whose top would turn over if a card of ``rank`` went on ``cell``.

        The flip rule: a card triggers its row (then its column) unless some other
        face-up top there ranks at most the card and some ranks at least the card, that
        is, unless the card is neither above nor below every face-up rank (ties do not
        trigger; with no face-up top the line always triggers). A triggered line's other
        piles all turn over. The row and the column share only ``cell``, so their order
        does not matter.
        """
        occupied, geo = self.occupied, self.layout
        face_up = occupied & ~self.down
        return flipped_by(
            geo.row_others[cell],
            geo.col_others[cell],
            occupied,
            face_up & self.at_most[rank],
            face_up & ~self.at_most[rank - 1],
        )

    def flip_table(self, ranks: list[int]) -> list[tuple[int, list[int]]]:
        """For each target (reading order), the piles each of ``ranks`` would turn over
        there: :meth:`flips` for a whole chance node at once.

        A look-ahead's last ply asks this of every target for every rank class, millions
        of times a game; the rule is :func:`flipped_by`'s, with the masks that depend
        only on the target or only on the rank computed once each.
        """
        occupied, geo, at_most = self.occupied, self.layout, self.at_most
        face_up = occupied & ~self.down
        bounds = [(face_up & at_most[rank], face_up & ~at_most[rank - 1]) for rank in ranks]
        row_others, col_others = geo.row_others, geo.col_others
        table = []
        for cell in self.targets():
            row, col = row_others[cell], col_others[cell]
            row_piles, col_piles = row & occupied, col & occupied
            flipped = []
            for not_above, not_below in bounds:
                # flipped_by, inlined: a line triggers unless it holds face-up tops both
                # at most and at least the card.
                turned = 0 if row & not_above and row & not_below else row_piles
                if not (col & not_above and col & not_below):
                    turned |= col_piles
                flipped.append(turned)
            table.append((cell, flipped))
        return table

    def after(self, cell: int, rank: int) -> tuple[int, int, int]:
        """The ``(occupied, down, full)`` masks after placing ``rank`` on ``cell``,
        leaving the board as it is."""
        bit = 1 << cell
        full = self.full
        if self.height[cell] + 1 >= self.capacity:
            full |= bit
        return self.occupied | bit, (self.down & ~bit) ^ self.flips(cell, rank), full

    # --------------------------------------------------------------- changing

    def place(self, cell: int, rank: int, flipped: int | None = None) -> UndoToken:
        """Put a card of ``rank`` on ``cell`` (a legal target) and apply the flips.

        Returns the token that :meth:`undo` needs. Does not check legality: search
        only ever places on :meth:`targets`. A search that has just asked
        :meth:`flips` for this placement may pass its answer as ``flipped``.
        """
        old_rank, old_height, box = self.rank[cell], self.height[cell], self.box
        token = (cell, old_rank, old_height, self.occupied, self.down, self.full, box)
        bit = 1 << cell
        if flipped is None:
            flipped = self.flips(cell, rank)
        self.down = (self.down & ~bit) ^ flipped
        self.occupied |= bit
        if old_height + 1 >= self.capacity:
            self.full |= bit
        self.height[cell] = old_height + 1
        self.rank[cell] = rank
        at_most = self.at_most
        for changed in _RANKS_BETWEEN[old_rank][rank]:
            at_most[changed] ^= bit
        if not old_height:
            row, col = divmod(cell, self.layout.width)
            row_min, row_max, col_min, col_max = box
            if row < row_min or row > row_max or col < col_min or col > col_max:
                self.box = (
                    min(row_min, row), max(row_max, row), min(col_min, col), max(col_max, col)
                )
        return token

    def undo(self, token: UndoToken) -> None:
        """Take back the :meth:`place` that returned ``token`` (the most recent one)."""
        cell, old_rank, self.height[cell], self.occupied, self.down, self.full, self.box = token
        at_most, bit = self.at_most, 1 << cell
        for changed in _RANKS_BETWEEN[self.rank[cell]][old_rank]:
            at_most[changed] ^= bit
        self.rank[cell] = old_rank

    def copy(self) -> Board:
        """An independent copy."""
        clone = Board.__new__(Board)
        clone.rules = self.rules
        clone.layout = self.layout
        clone.grid_size = self.grid_size
        clone.capacity = self.capacity
        clone.limit = self.limit
        clone.rank = self.rank[:]
        clone.height = self.height[:]
        clone.occupied = self.occupied
        clone.down = self.down
        clone.full = self.full
        clone.at_most = self.at_most[:]
        clone.box = self.box
        return clone


def flipped_by(row: int, col: int, occupied: int, not_above: int, not_below: int) -> int:
    """The piles a card turns over: the flip rule, for every search.

    ``row`` and ``col`` are the other cells of the card's row and column, ``occupied`` the
    piles, ``not_above`` and ``not_below`` the face-up tops ranking at most and at least
    the card (a top of the same rank is in both). A line triggers unless it holds a
    face-up top of each kind (ties do not trigger; with no face-up top it always
    triggers), and a triggered line's piles all turn over.
    """
    flipped = 0
    if not (row & not_above and row & not_below):
        flipped = row & occupied
    if not (col & not_above and col & not_below):
        flipped |= col & occupied
    return flipped


def _ranks_between(old: int, new: int) -> tuple[int, ...]:
    """The entries of ``at_most`` that a top changing from rank ``old`` to ``new`` (0:
    no pile) enters or leaves: a top is in ``at_most[k]`` for ``k`` from its rank up, so
    the change toggles it from the lower rank to below the higher, which makes the same
    toggles undo it."""
    old, new = old or TOP_RANK + 1, new or TOP_RANK + 1
    return tuple(range(min(old, new), max(old, new)))


_RANKS_BETWEEN = tuple(
    tuple(_ranks_between(old, new) for new in range(TOP_RANK + 1)) for old in range(TOP_RANK + 1)
)


def cells_of(mask: int) -> list[int]:
    """The cells of ``mask``, lowest (first in reading order) first."""
    cells = []
    while mask:
        low = mask & -mask
        cells.append(low.bit_length() - 1)
        mask ^= low
    return cells


# ------------------------------------------------------------- the parity bound


def repairable(board: Board) -> bool:
    """Whether the face-down tops could all turn up without stacking another card.

    If every remaining card opens a new pile, a pile already on the board changes face
    only through row and column triggers, so its final face is its face now XOR one bit
    for its row XOR one bit for its column, and a full row or column (``grid_size``
    piles) takes no more cards, so its bit is 0. When no such bits exist, at least one
    more card must be stacked: the par solver uses this as a bound, the bots as a hint.
    """
    return not board.down or triggers_needed(board) is not None


def triggers_needed(board: Board) -> int | None:
    """The fewest row and column triggers that would turn every face-down top up
    (see :func:`repairable`), or ``None`` if triggers alone cannot do it."""
    if not board.down:
        return 0
    return mask_triggers(board.layout, board.occupied, board.down)


#: :func:`repairable_patterns` answers a layout keeps before it forgets them (a 4 x 4 box
#: has about 10,000 piles masks that play can reach, each with at most 128 patterns).
_REPAIRS_KEPT = 1 << 15


def repairable_patterns(geo: Layout, occupied: int) -> frozenset[int]:
    """Every face-down mask on the piles ``occupied`` that row and column triggers can
    turn up when no card is stacked (see :func:`repairable`; remembered in ``geo``).

    Those masks are the XOR sums of the piles of lines that are not full (a set of
    triggered lines turns up exactly the tops that an odd number of them cover), so
    they form a vector space over GF(2): found once for the piles, it answers every
    face-down pattern on them with one set lookup, where :func:`mask_triggers` tries
    every choice of row bits for each pattern.
    """
    known = geo.repairs.get(occupied)
    if known is not None:
        return known
    size = geo.size
    basis: list[int] = []
    for line in (*geo.row_masks, *geo.col_masks):
        piles = line & occupied
        if not piles or piles.bit_count() == size:
            continue  # no pile, or a full line: no card will trigger it
        for vector in basis:
            piles = min(piles, piles ^ vector)  # clear each basis vector's leading bit
        if piles:
            basis.append(piles)
    patterns = [0]
    for vector in basis:
        patterns += [pattern ^ vector for pattern in patterns]
    known = frozenset(patterns)
    if len(geo.repairs) >= _REPAIRS_KEPT:
        geo.repairs.clear()
    geo.repairs[occupied] = known
    return known


def repairable_with_one_stack(geo: Layout, occupied: int, down: int, full: int) -> bool:
    """Whether the face-down tops could all turn up with at most one more card stacked
    (``full``: the piles at capacity, where no card can go; remembered in ``geo``).

    With no card stacked, this is :func:`repairable`. A card stacked on a pile placed
    later leaves every line it touches with an empty cell now, so the same holds. A card
    stacked on a pile ``p`` of the board turns ``p`` face up whatever it was, and may
    trigger ``p``'s row and column even when they are full; every other pile's final
    face is still its face now XOR its row's bit XOR its column's bit, other full lines
    fixed at 0. That is the parity bound on the piles without ``p``, where ``p``'s row
    and column are no longer full.
    """
    key = ((full & occupied) << geo.cells | occupied) << geo.cells | down
    known = geo.one_stack.get(key)
    if known is None:
        known = down in repairable_patterns(geo, occupied) or any(
            down & ~(1 << cell) in repairable_patterns(geo, occupied & ~(1 << cell))
            for cell in cells_of(occupied & ~full)
        )
        if len(geo.one_stack) >= _TRIGGERS_KEPT:
            geo.one_stack.clear()
        geo.one_stack[key] = known
    return known


#: :func:`mask_triggers` answers a layout keeps before it forgets them (tens of MB).
_TRIGGERS_KEPT = 1 << 20

#: No answer yet in a layout's ``triggers`` memo (``None`` is an answer there: not repairable).
TRIGGERS_UNKNOWN = -1


def mask_triggers(geo: Layout, occupied: int, down: int) -> int | None:
    """:func:`triggers_needed` from the masks (remembered in ``geo``).

    Tries every choice of row bits for the rows holding piles (full rows held at 0);
    each column must then see the same face on all its piles, face down being allowed
    only if the column is not full (and then costing a column trigger).
    """
    if not down:
        return 0
    key = (occupied << geo.cells) | down
    known = geo.triggers.get(key, TRIGGERS_UNKNOWN)
    if known != TRIGGERS_UNKNOWN:
        return known
    size = geo.size
    row_piles = [occupied & mask for mask in geo.row_masks]
    col_piles = [occupied & mask for mask in geo.col_masks]
    rows = [(mask, mask.bit_count() == size) for mask in row_piles if mask]
    cols = [(mask, mask.bit_count() == size) for mask in col_piles if mask]
    fewest: int | None = None
    for choice in range(1 << len(rows)):
        flipped = needed = 0
        for index, (mask, full) in enumerate(rows):
            if choice >> index & 1:
                if full:
                    break
                flipped |= mask
                needed += 1
        else:
            faces = down ^ flipped
            for mask, full in cols:
                in_column = faces & mask
                if in_column:
                    if in_column != mask or full:
                        break
                    needed += 1
            else:
                if fewest is None or needed < fewest:
                    fewest = needed
    if len(geo.triggers) >= _TRIGGERS_KEPT:
        geo.triggers.clear()
    geo.triggers[key] = fewest
    return fewest
