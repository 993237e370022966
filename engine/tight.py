"""The solver's endgame with no card to spare: every remaining card opens a new pile.

When the cards left are exactly as many as the empty cells of the final grid, no card
can be stacked, so no top card changes rank again and the final box is one of the few
``grid_size`` x ``grid_size`` boxes containing the piles so far. For each such box this
search works on bitboards: one bit per cell of the box for "a pile is here" and one for
"its top is face down". A placement is then a handful of integer operations, and the
parity bound (:func:`engine.board.repairable`) becomes a memoised lookup on two integers.

Most of the par solver's time goes here: proving that no deal is won with the fewest
cards is an exhaustive search of this endgame from the empty grid.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engine.board import Board
from engine.rules import Adjacency, Ruleset

#: Tight positions with fewer empty cells than this are not remembered when they fail:
#: their subtrees are smaller than the table would grow.
_REMEMBER_FROM_EMPTY = 4


class TightSearch:
    """Bitboard search of the no-spare endgame for one deal (stock ranks fixed)."""

    def __init__(self, rules: Ruleset, ranks: Sequence[int], tick: Callable[[], None]) -> None:
        """``tick`` is called once per node, so the caller can enforce its budget."""
        n = rules.grid_size
        self.size = n
        self.ranks = ranks
        self.tick = tick
        self.limit_down = rules.face_down_limit
        self.full = (1 << (n * n)) - 1
        cells = range(n * n)
        self.row_others = [sum(1 << (x - x % n + j) for j in range(n)) & ~(1 << x) for x in cells]
        self.col_others = [sum(1 << (x % n + n * i) for i in range(n)) & ~(1 << x) for x in cells]
        self.diagonal = rules.adjacency is Adjacency.ANY
        self.not_first_col = self.full & ~sum(1 << (n * i) for i in range(n))
        self.not_last_col = self.full & ~sum(1 << (n * i + n - 1) for i in range(n))
        self.row_masks = [((1 << n) - 1) << (n * i) for i in range(n)]
        self.col_masks = [sum(1 << (c + n * i) for i in range(n)) for c in range(n)]
        self.rank_at = [0] * (n * n)
        self.line: list[int] = []
        self.failed: set[tuple[int, int, int, bytes]] = set()
        self._repairable: dict[int, bool] = {}
        self.anchors = _orbit_representatives(n)

    # ------------------------------------------------------------------ entry

    def solve_from(self, board: Board, placed: int) -> list[int] | None:
        """A winning line (as ``board`` cells) from ``board`` after ``placed`` cards, or None.

        The position must be tight: as many cards left to use as empty cells.
        """
        n, width = self.size, board.layout.width
        if not board.piles:
            centre = board.layout.offset
            # The first card's place in the final box, up to the grid's eight symmetries.
            corners = [(centre - x // n, centre - x % n) for x in self.anchors]
            return self._solve_boxes(board, placed, corners, first=True)
        row_min, row_max, col_min, col_max = board.box
        corners = [
            (top, left)
            for top in range(row_max - n + 1, row_min + 1)
            for left in range(col_max - n + 1, col_min + 1)
            if top >= 0 and left >= 0 and top + n <= width and left + n <= width
        ]
        return self._solve_boxes(board, placed, corners, first=False)

    def _solve_boxes(
        self, board: Board, placed: int, corners: list[tuple[int, int]], first: bool
    ) -> list[int] | None:
        n, width = self.size, board.layout.width
        for top, left in corners:
            occupied = down = 0
            rank_at = self.rank_at
            for x in range(n * n):
                cell = (top + x // n) * width + left + x % n
                rank_at[x] = board.rank[cell] if board.height[cell] else 0
                if board.height[cell]:
                    occupied |= 1 << x
                    if not board.up[cell]:
                        down |= 1 << x
            self.line.clear()
            if first:
                found = self._first(placed, top, left, board)
            else:
                found = self._search(placed, occupied, down)
            if found:
                return [(top + x // n) * width + left + x % n for x in self.line]
        return None

    def _first(self, placed: int, top: int, left: int, board: Board) -> bool:
        """From the empty grid: the first card goes where the centre cell is in this box."""
        centre = board.layout.offset
        x = (centre - top) * self.size + centre - left
        self.rank_at = [0] * (self.size * self.size)
        self.rank_at[x] = self.ranks[placed]
        self.line.append(x)
        if self._search(placed + 1, 1 << x, 0):
            return True
        self.line.pop()
        self.rank_at[x] = 0
        return False

    # ----------------------------------------------------------------- search

    def _neighbours(self, occupied: int) -> int:
        """Cells next to a pile (by the ruleset's adjacency), inside the box."""
        n, full = self.size, self.full
        sideways = ((occupied >> 1) & self.not_last_col) | ((occupied << 1) & self.not_first_col)
        if self.diagonal:
            sideways |= occupied
            return (sideways | (sideways >> n) | (sideways << n)) & full
        return (sideways | (occupied >> n) | (occupied << n)) & full

    def _search(self, placed: int, occupied: int, down: int) -> bool:
        self.tick()
        empty = self.full & ~occupied
        remember = empty.bit_count() >= _REMEMBER_FROM_EMPTY
        rank_at = self.rank_at
        if remember:
            key = (placed, occupied, down, bytes(rank_at))
            if key in self.failed:
                return False
        rank = self.ranks[placed]
        row_others, col_others, limit_down = self.row_others, self.col_others, self.limit_down
        children: list[tuple[int, int, int]] = []
        targets = self._neighbours(occupied) & empty
        while targets:
            bit = targets & -targets
            targets ^= bit
            x = bit.bit_length() - 1
            after = down
            for others in (occupied & row_others[x], occupied & col_others[x]):
                if not others:
                    continue
                face_up = others & ~down
                if face_up:
                    lowest, highest = 11, 0
                    while face_up:
                        low = face_up & -face_up
                        face_up ^= low
                        other_rank = rank_at[low.bit_length() - 1]
                        if other_rank < lowest:
                            lowest = other_rank
                        if other_rank > highest:
                            highest = other_rank
                    if lowest <= rank <= highest:
                        continue
                after ^= others
            if after.bit_count() > limit_down:
                continue
            grown = occupied | bit
            if grown == self.full:
                if not after:
                    rank_at[x] = rank
                    self.line.append(x)
                    return True
                continue
            if self._is_repairable(grown, after):
                children.append((after.bit_count(), x, after))
        children.sort()
        for _, x, after in children:
            rank_at[x] = rank
            self.line.append(x)
            if self._search(placed + 1, occupied | (1 << x), after):
                return True
            self.line.pop()
            rank_at[x] = 0
        if remember:
            self.failed.add(key)
        return False

    def _is_repairable(self, occupied: int, down: int) -> bool:
        """The parity bound on bitboards: ``down`` is row bits XOR column bits on
        ``occupied``, with the bits of full rows and columns 0 (memoised)."""
        if not down:
            return True
        key = (occupied << (self.size * self.size)) | down
        known = self._repairable.get(key)
        if known is not None:
            return known
        n = self.size
        row_masks, col_masks = self.row_masks, self.col_masks
        full_rows = [occupied & mask == mask for mask in row_masks]
        column_full = [occupied & mask == mask for mask in col_masks]
        answer = False
        for choice in range(1 << n):
            flipped_rows = 0
            for row in range(n):
                if choice >> row & 1:
                    if full_rows[row]:
                        break
                    flipped_rows |= row_masks[row]
            else:
                faces = (down ^ flipped_rows) & occupied
                for col in range(n):
                    in_column = faces & col_masks[col]
                    if in_column and (in_column != occupied & col_masks[col] or column_full[col]):
                        break
                else:
                    answer = True
                    break
        self._repairable[key] = answer
        return answer


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
