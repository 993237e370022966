"""The solver's endgame with no card to spare: every remaining card opens a new pile.

When the cards left are exactly as many as the empty cells of the final grid, no card
can be stacked, so no top card changes rank again and the final box is one of the few
``grid_size`` x ``grid_size`` boxes containing the piles so far. This search fixes each
such box in turn and fills it on the :class:`~engine.board.Board`, new piles only and
only inside the box; the parity bound (:func:`engine.board.mask_triggers`) prunes every
child whose face-down pattern triggers alone could not repair, and failed positions are
remembered.

Most of the par solver's time goes here: proving that no deal is won with the fewest
cards is an exhaustive search of this endgame from the empty grid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.board import Board, cells_of, mask_triggers

#: Tight positions with fewer empty cells than this are not remembered when they fail:
#: their subtrees are smaller than the table would grow.
_REMEMBER_FROM_EMPTY = 4


class TightSearch:
    """The no-spare endgame for one deal (stock ranks fixed), on a search board."""

    def __init__(self, board: Board, ranks: Sequence[int], tick: Callable[[], None]) -> None:
        """``board`` is the board the search plays on (it is left as found); ``tick`` is
        called once per node, so the caller can enforce its budget."""
        self.board = board
        self.ranks = ranks
        self.tick = tick
        self.line: list[int] = []
        self.failed: set[tuple[int, int, int, int]] = set()
        self.box = 0
        """The final box being filled, as a mask of cells."""
        self.mirror: dict[int, int] = {}
        """Each cell of the box's image in its main diagonal."""

    def solve_from(self, placed: int) -> list[int] | None:
        """A winning line (as cells) from the board after ``placed`` cards, or ``None``.

        The position must be tight: as many cards left to use as empty cells.
        """
        board = self.board
        geo = board.layout
        n, width = geo.size, geo.width
        if not board.occupied:
            centre = geo.offset
            # The first card's place in the final box, up to the grid's eight symmetries.
            corners = [(centre - x // n, centre - x % n) for x in _orbit_representatives(n)]
        else:
            row_min, row_max, col_min, col_max = board.box
            corners = [
                (top, left)
                for top in range(max(0, row_max - n + 1), min(row_min, width - n) + 1)
                for left in range(max(0, col_max - n + 1), min(col_min, width - n) + 1)
            ]
        for top, left in corners:
            box_cells = [(top + row) * width + left + col for row in range(n) for col in range(n)]
            self.box = sum(1 << cell for cell in box_cells)
            images = _transposed(n)
            self.mirror = {cell: box_cells[images[x]] for x, cell in enumerate(box_cells)}
            self.line.clear()
            if self._search(placed, _rank_code(board)):
                return self.line[:]
        return None

    def _one_of_each_mirror_pair(self, occupied: int, targets: int) -> int:
        """``targets`` less the mirror image of each, when the one pile is on the box's
        diagonal: the rules do not tell rows from columns, so the two positions the
        second card makes are mirror images with the same future, and one is enough."""
        mirror = self.mirror
        if mirror[occupied.bit_length() - 1] != occupied.bit_length() - 1:
            return targets
        kept = 0
        for cell in cells_of(targets):
            if not kept >> mirror[cell] & 1:
                kept |= 1 << cell
        return kept

    def _search(self, placed: int, code: int) -> bool:
        """Whether the board after ``placed`` cards fills the box face up; ``code`` is
        its :func:`_rank_code`, kept up to date here (no pile changes rank any more, so
        the top ranks and faces are the whole position)."""
        self.tick()
        board = self.board
        occupied, down, box = board.occupied, board.down, self.box
        empty = box & ~occupied
        remember = empty.bit_count() >= _REMEMBER_FROM_EMPTY
        if remember:
            key = (placed, box, code, down)
            if key in self.failed:
                return False
        rank = self.ranks[placed]
        geo = board.layout
        limit_down, flips = board.limit, board.flips
        # mask_triggers' own memo, read here first: most children are found in it, and
        # the call would cost more than the look-up.
        known, cells = geo.triggers.get, geo.cells
        children: list[tuple[int, int, int]] = []
        targets = geo.neighbours(occupied) & empty if occupied else 1 << geo.centre
        if occupied & (occupied - 1) == 0 and occupied:
            targets = self._one_of_each_mirror_pair(occupied, targets)
        while targets:
            bit = targets & -targets
            targets ^= bit
            cell = bit.bit_length() - 1
            flipped = flips(cell, rank)
            after = down ^ flipped
            face_down = after.bit_count()
            if face_down > limit_down:
                continue
            grown = occupied | bit
            if grown == box:
                if not after:
                    self.line.append(cell)
                    return True
                continue
            if after:
                needed = known((grown << cells) | after, -1)
                if needed is None or (needed == -1 and mask_triggers(geo, grown, after) is None):
                    continue
            children.append((face_down, cell, flipped))
        children.sort()
        line, place, undo, search = self.line, board.place, board.undo, self._search
        placed += 1
        for _, cell, flipped in children:
            token = place(cell, rank, flipped)
            line.append(cell)
            found = search(placed, code | rank << _RANK_BITS * cell)
            undo(token)
            if found:
                return True
            line.pop()
        if remember:
            self.failed.add(key)
        return False


#: Bits per cell in :func:`_rank_code` (ranks run to 10).
_RANK_BITS = 4


def _rank_code(board: Board) -> int:
    """The top ranks of ``board`` as one integer, ``_RANK_BITS`` bits a cell (0: no pile)."""
    return sum(rank << _RANK_BITS * cell for cell, rank in enumerate(board.rank) if rank)


def _transposed(n: int) -> list[int]:
    """For each cell of an n x n box (in reading order), its image in the main diagonal."""
    return [(x % n) * n + x // n for x in range(n * n)]


def _orbit_representatives(n: int) -> list[int]:
    """One cell of each orbit of the n x n grid under its eight symmetries."""
    representatives = []
    for x in range(n * n):
        r, c = divmod(x, n)
        images = []
        for a, b in ((r, c), (c, r)):
            for flip_a in (False, True):
                for flip_b in (False, True):
                    images.append((n - 1 - a if flip_a else a) * n + (n - 1 - b if flip_b else b))
        if x == min(images):
            representatives.append(x)
    return representatives
