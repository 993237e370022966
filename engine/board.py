"""A compact, mutable Foursquare position for search: ranks only, place and undo.

The engine's :class:`~engine.game.Game` is the authority and keeps cards, events and
history. Search (the par solver, the bots) needs none of that: it only needs the top
rank, face and height of each pile, and a cheap way to try a move and take it back.
:class:`Board` is that: the same rules, on the same flat cell layout as the engine
(rows and cols from ``-(n-1)`` to ``n-1``), with :meth:`Board.place` returning a token
that :meth:`Board.undo` uses to restore the position exactly.

Every line a search reports is replayed through the engine before it is trusted, so a
disagreement between this module and the engine could not go unnoticed.

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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from engine.game import Position
from engine.rules import Adjacency, Ruleset

#: What :meth:`Board.place` returns and :meth:`Board.undo` takes back: the cell, its
#: previous rank, face and height, the previous box, face-down and pile counts, and the
#: cells whose top card flipped.
UndoToken = tuple[int, int, int, int, int, int, int, int, int, int, tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class Layout:
    """Index arithmetic for one ruleset's cells, shared by every board with that ruleset."""

    size: int
    offset: int
    width: int
    neighbours: tuple[tuple[int, ...], ...]


@cache
def layout(size: int, adjacency: Adjacency) -> Layout:
    """The cell layout for a grid of ``size`` and an adjacency rule (cached)."""
    offset = size - 1
    width = 2 * size - 1
    steps: tuple[tuple[int, int], ...]
    if adjacency is Adjacency.EDGE:
        steps = ((-1, 0), (0, -1), (0, 1), (1, 0))
    else:
        steps = tuple((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc)
    cells = range(width * width)
    neighbours = tuple(
        tuple(
            (row + dr) * width + col + dc
            for dr, dc in steps
            if 0 <= row + dr < width and 0 <= col + dc < width
        )
        for row, col in (divmod(cell, width) for cell in cells)
    )
    return Layout(size, offset, width, neighbours)


class Board:
    """The piles of one game as ranks, faces and heights, with place and undo.

    Attributes are public for speed-critical readers (search evaluations); only
    :meth:`place` and :meth:`undo` change them.
    """

    __slots__ = (
        "box",
        "capacity",
        "face_down",
        "grid_size",
        "height",
        "layout",
        "limit",
        "piles",
        "rank",
        "rules",
        "up",
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
        self.up = [1] * cells
        """1 where the top card is face up (or there is no pile), 0 where face down."""
        self.height = [0] * cells
        self.piles = 0
        self.face_down = 0
        centre = self.layout.offset
        # The occupied box in cell coordinates: [row_min, row_max, col_min, col_max].
        self.box = [centre, centre, centre, centre]

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

    def targets(self) -> list[int]:
        """The cells the next card may go to (same order as the engine's sorted positions)."""
        geo = self.layout
        if not self.piles:
            return [geo.offset * geo.width + geo.offset]
        height, neighbours, width = self.height, geo.neighbours, geo.width
        capacity, span = self.capacity, geo.size - 1
        row_min, row_max, col_min, col_max = self.box
        targets = []
        for row in range(row_max - span, row_min + span + 1):
            base = row * width
            for cell in range(base + col_max - span, base + col_min + span + 1):
                pile_height = height[cell]
                if pile_height:
                    if pile_height < capacity:
                        targets.append(cell)
                else:
                    for n in neighbours[cell]:
                        if height[n]:
                            targets.append(cell)
                            break
        return targets

    def is_target(self, cell: int) -> bool:
        """Whether the next card may go to ``cell`` (the rules of :meth:`targets`, for one cell)."""
        height = self.height
        if not self.piles:
            return cell == self.layout.offset * (self.layout.width + 1)
        if height[cell]:
            return height[cell] < self.capacity
        if not any(height[n] for n in self.layout.neighbours[cell]):
            return False
        row, col = divmod(cell, self.layout.width)
        row_min, row_max, col_min, col_max = self.box
        size = self.grid_size
        return max(row_max, row) - min(row_min, row) < size and (
            max(col_max, col) - min(col_min, col) < size
        )

    def lost(self) -> bool:
        """Too many face-down top cards."""
        return self.face_down > self.limit

    def won(self) -> bool:
        """A full grid, every top card face up."""
        return self.piles == self.grid_size * self.grid_size and not self.face_down

    def occupied(self) -> list[int]:
        """The cells holding a pile, in reading order."""
        height, width = self.height, self.layout.width
        row_min, row_max, col_min, col_max = self.box
        return [
            cell
            for row in range(row_min, row_max + 1)
            for cell in range(row * width + col_min, row * width + col_max + 1)
            if height[cell]
        ]

    # --------------------------------------------------------------- changing

    def place(self, cell: int, rank: int) -> UndoToken:
        """Put a card of ``rank`` on ``cell`` (a legal target) and apply the flips.

        Returns the token that :meth:`undo` needs. Does not check legality: search
        only ever places on :meth:`targets`.
        """
        height, ranks, up, box = self.height, self.rank, self.up, self.box
        old_height, old_rank, old_up = height[cell], ranks[cell], up[cell]
        row_min, row_max, col_min, col_max = box
        down_before, piles_before = self.face_down, self.piles
        down = down_before
        width = self.layout.width
        row, col = divmod(cell, width)
        if not old_height:
            self.piles = piles_before + 1
            if row < row_min:
                box[0] = row
            elif row > row_max:
                box[1] = row
            if col < col_min:
                box[2] = col
            elif col > col_max:
                box[3] = col
        elif not old_up:
            down -= 1
        height[cell] = old_height + 1
        ranks[cell] = rank
        up[cell] = 1
        flipped: list[int] = []
        # Every pile lies inside the box, so the row and the column are scanned only there.
        row_start = row * width
        for line in (
            range(row_start + box[2], row_start + box[3] + 1),
            range(box[0] * width + col, box[1] * width + col + 1, width),
        ):
            lowest, highest = 11, 0  # of the face-up ranks; highest 0: none face up
            others = []
            for other in line:
                if height[other] and other != cell:
                    others.append(other)
                    if up[other]:
                        other_rank = ranks[other]
                        if other_rank < lowest:
                            lowest = other_rank
                        if other_rank > highest:
                            highest = other_rank
            if not others or (highest and lowest <= rank <= highest):
                continue
            for other in others:
                if up[other]:
                    up[other] = 0
                    down += 1
                else:
                    up[other] = 1
                    down -= 1
            flipped.extend(others)
        self.face_down = down
        return (
            cell, old_rank, old_up, old_height, row_min, row_max, col_min, col_max,
            down_before, piles_before, tuple(flipped),
        )

    def undo(self, token: UndoToken) -> None:
        """Take back the :meth:`place` that returned ``token`` (the most recent one)."""
        cell, old_rank, old_up, old_height, row_min, row_max, col_min, col_max = token[:8]
        up = self.up
        for other in token[10]:
            up[other] ^= 1
        self.rank[cell] = old_rank
        up[cell] = old_up
        self.height[cell] = old_height
        self.box[:] = (row_min, row_max, col_min, col_max)
        self.face_down = token[8]
        self.piles = token[9]

    def copy(self) -> Board:
        """An independent copy."""
        clone = Board.__new__(Board)
        clone.rules = self.rules
        clone.layout = self.layout
        clone.grid_size = self.grid_size
        clone.capacity = self.capacity
        clone.limit = self.limit
        clone.rank = self.rank[:]
        clone.up = self.up[:]
        clone.height = self.height[:]
        clone.piles = self.piles
        clone.face_down = self.face_down
        clone.box = self.box[:]
        return clone


def positions_of(board: Board, cells: Sequence[int]) -> list[Position]:
    """Engine positions for a sequence of cells of ``board``."""
    return [board.position(cell) for cell in cells]


def repairable(board: Board) -> bool:
    """Whether the face-down tops could all turn up without stacking another card.

    If every remaining card opens a new pile, a pile already on the board changes face
    only through row and column triggers, so its final face is its face now XOR one bit
    for its row XOR one bit for its column, and a full row or column (``grid_size``
    piles) takes no more cards, so its bit is 0. When no such bits exist, at least one
    more card must be stacked: the par solver uses this as a bound, the bots as a hint.
    """
    return not board.face_down or triggers_needed(board) is not None


def triggers_needed(board: Board) -> int | None:
    """The fewest row and column triggers that would turn every face-down top up
    (see :func:`repairable`), or ``None`` if triggers alone cannot do it."""
    if not board.face_down:
        return 0
    width, height, up = board.layout.width, board.height, board.up
    row_min, row_max, col_min, col_max = board.box
    occupied_masks, down_masks = [], []
    for col in range(col_min, col_max + 1):
        occupied = down = 0
        bit = 1
        for cell in range(row_min * width + col, row_max * width + col + 1, width):
            if height[cell]:
                occupied |= bit
                if not up[cell]:
                    down |= bit
            bit <<= 1
        occupied_masks.append(occupied)
        down_masks.append(down)
    return pattern_triggers(tuple(occupied_masks), tuple(down_masks), board.grid_size)


@lru_cache(maxsize=1 << 17)
def pattern_triggers(
    occupied: tuple[int, ...], down: tuple[int, ...], size: int
) -> int | None:
    """:func:`triggers_needed` on column masks: bit ``r`` of ``occupied[c]`` is a pile at
    row ``r``.

    Tries every choice of row bits (full rows held at 0); each column must then see the
    same face on all its piles, face down being allowed only if the column is not full
    (and then costing a column trigger).
    """
    rows = max(occupied).bit_length()
    full_rows = 0
    for row in range(rows):
        if sum((mask >> row) & 1 for mask in occupied) == size:
            full_rows |= 1 << row
    columns = [(mask, down_mask, mask.bit_count() == size)
               for mask, down_mask in zip(occupied, down, strict=True)]
    fewest: int | None = None
    for row_bits in range(1 << rows):
        if row_bits & full_rows:
            continue
        needed = row_bits.bit_count()
        for mask, down_mask, full in columns:
            faces = (down_mask ^ row_bits) & mask
            if faces:
                if faces != mask or full:
                    break
                needed += 1
        else:
            if fewest is None or needed < fewest:
                fewest = needed
    return fewest
