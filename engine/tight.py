"""The solver's box search: at most two cards to spare, every other card opens a pile.

When the cards left are as many as the empty cells of the final grid, or one or two
more, the final box is one of the few ``grid_size`` x ``grid_size`` boxes containing
the piles so far (a card stacked opens no cell). This search fixes each such box in turn
and fills it on masks of the box alone (``n²`` bits, cell ``row * n + col`` of the box):
the position is passed down the recursion as a few integers (piles, faces, ranks, cards
to spare), so a move costs no undo, and a position is the same wherever its box lies, so
failures found in one box serve every translation of it. With a card to spare, a card
may also go on a pile (new piles are tried first); the caller hands over only positions
where no pile can reach its capacity, so heights need no keeping. The bounds that prune
(:mod:`engine.board`, on the box's own :func:`~engine.board.box_layout`): with no card to
spare, the parity bound (:func:`~engine.board.repairable_patterns`: a pile's final face
is its face now XOR one bit for its row and one for its column, full lines fixed at 0);
with one, the one-stack bound (:func:`~engine.board.repairable_with_one_stack`). A
position's children are remembered under the masks they depend on
(:meth:`TightSearch._moves`), and a box is not searched when a rotation or reflection of
its starting position is known to fail (:meth:`TightSearch._image_failed`).

Most of the par solver's time goes here: proving that no deal is won with the fewest
cards is an exhaustive search of this box search from the empty grid, and the next
pass (one card to spare) starts from the empty grid too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

from engine.board import (
    TOP_RANK,
    Board,
    Layout,
    box_layout,
    cells_of,
    flipped_by,
    repairable_patterns,
    repairable_with_one_stack,
)

#: Tight positions with fewer empty cells than this are not remembered when they fail:
#: their subtrees are smaller than the table would grow.
_REMEMBER_FROM_EMPTY = 5

#: Bits per cell in a position's rank code (ranks run to 10; 0 is "no pile").
_RANK_BITS = 4

#: Bits that :meth:`TightSearch._search` gives the count of cards placed in a failure's key.
_PLACED_BITS = 8

#: Bits that the count of cards to spare takes in the search's keys.
_SPARE_BITS = 2

#: The most cards to spare that the box search takes (see :data:`_SPARE_BITS`).
MOST_SPARE = 2

#: The children lists a search keeps (:meth:`TightSearch._moves`) before it forgets them.
_MOVES_KEPT = 1 << 20

Moves = tuple[tuple[int, int], ...]
"""A box position's children worth searching: ``(cell, down after the move)``."""

Targets = tuple[tuple[int, int, int, int, int, bool, frozenset[int]], ...]
"""Where a card may go from a set of piles: ``(cell, its bit, the other cells of its row,
of its column, the piles after, whether it goes on a pile, the face-down patterns the
parity bound admits on the piles after)``."""

@cache
def _rank_bits(cells: int) -> tuple[tuple[int, ...], ...]:
    """``[rank][cell]``: the bits a top of ``rank`` on ``cell`` sets in the ``at_most``
    integer of :meth:`TightSearch._search`, whose ``cells``-bit field ``k`` holds the tops
    ranking at most ``k`` (field 0 stays empty)."""
    return tuple(
        tuple(
            sum(1 << (level * cells + cell) for level in range(rank, TOP_RANK + 1))
            for cell in range(cells)
        )
        for rank in range(TOP_RANK + 1)
    )


class TightSearch:
    """The box search for one deal (stock ranks fixed), from a board's position."""

    def __init__(self, board: Board, ranks: Sequence[int], tick: Callable[[], None]) -> None:
        """``board`` holds the position to search from (only read); ``tick`` is called
        once per node, so the caller can enforce its budget."""
        self.board = board
        self.ranks = ranks
        self.tick = tick
        self.line: list[int] = []
        """The winning line found, as cells of the box."""
        self.failed: set[int] = set()
        """Box positions known to fail, as :meth:`_search` keys them."""
        self.geo = box_layout(board.grid_size, board.rules.adjacency)
        self.rank_bits = _rank_bits(self.geo.cells)
        self.limit = board.limit
        self.first = 0
        """Where the first card goes, when searching from the empty grid."""
        self.moves: dict[int, Moves] = {}
        """:meth:`_moves` answers found so far, by the masks they depend on."""
        self.targets: dict[int, Targets] = {}
        """:meth:`_targets` answers found so far."""

    def solve_from(self, placed: int, spare: int = 0) -> list[int] | None:
        """A winning line (as cells of the board) from the board after ``placed`` cards,
        or ``None``, using at most ``spare`` cards more than the empty cells of the final
        box: each spare card may be stacked on a pile. The caller makes sure no pile can
        reach the rules' capacity (its height plus ``spare`` at most the capacity), so
        that heights need no keeping here.
        """
        board = self.board
        n, width, centre = board.grid_size, board.layout.width, board.layout.offset
        if not board.occupied:
            # The first card's place in the final box, up to the grid's eight symmetries.
            for first in _orbit_representatives(n):
                self.first = first
                self.line.clear()
                if self._search(placed, 0, 0, 0, 0, spare):
                    outer = _box_cells(n, width, centre - first // n, centre - first % n)
                    return [outer[cell] for cell in self.line]
            return None
        row_min, row_max, col_min, col_max = board.box
        for top in range(max(0, row_max - n + 1), min(row_min, width - n) + 1):
            for left in range(max(0, col_max - n + 1), min(col_min, width - n) + 1):
                outer = _box_cells(n, width, top, left)
                occupied = down = at_most = code = 0
                for cell, rank in enumerate(board.rank[at] for at in outer):
                    if rank:
                        occupied |= 1 << cell
                        down |= (board.down >> outer[cell] & 1) << cell
                        at_most |= self.rank_bits[rank][cell]
                        code |= rank << _RANK_BITS * cell
                if self._image_failed(placed, occupied, down, code, spare):
                    continue
                self.line.clear()
                if self._search(placed, occupied, down, at_most, code, spare):
                    return [outer[cell] for cell in self.line]
        return None

    def _image_failed(self, placed: int, occupied: int, down: int, code: int, spare: int) -> bool:
        """Whether a rotation or reflection of the box position is known to fail: the
        rules do not change under them, so neither does the outcome. Looked at for each
        box a search starts in (a position with few piles fits many boxes, most of them
        images of one another), not at every node, where it would cost more than it saves.
        """
        cells = self.geo.cells
        for image in _box_symmetries(self.geo.size):
            moved_code = moved_down = 0
            for cell in cells_of(occupied):
                moved_code |= (code >> _RANK_BITS * cell & 15) << _RANK_BITS * image[cell]
                moved_down |= (down >> cell & 1) << image[cell]
            if _failure_key(cells, placed, moved_code, moved_down, spare) in self.failed:
                return True
        return False

    def _moves(
        self, occupied: int, down: int, not_above: int, not_below: int, spare: int
    ) -> Moves:
        """The children of a box position worth searching, as ``(cell, down)`` after the
        move, fewest face-down tops first (new piles before stacked cards when equal); or
        only ``(cell, -1)`` if that move wins. With ``spare`` cards to spare, a card may
        also go on a pile (``cell`` in ``occupied``), leaving one card fewer to spare.

        ``not_above`` and ``not_below`` are the face-up tops ranking at most and at least
        the card to place (a top ranking the same is in both): a line holding both kinds
        is not triggered. These, the masks and ``spare`` are all that the children depend
        on, which is why :meth:`_remembered_moves` remembers the answer under them.
        """
        geo = self.geo
        box, limit = geo.everything, self.limit
        children: list[tuple[int, bool, int, int]] = []
        for cell, bit, row, col, grown, stacked, patterns in self._targets(occupied, spare > 0):
            after = (down & ~bit) ^ flipped_by(row, col, occupied, not_above, not_below)
            face_down = after.bit_count()
            if face_down > limit:
                continue
            if not after:
                if grown == box:
                    return ((cell, -1),)
            elif after not in patterns and not (
                spare > stacked and _may_turn_up(geo, grown, after, spare - stacked)
            ):
                continue  # the bound with the child's cards to spare
            children.append((face_down, stacked, cell, after))
        children.sort()
        return tuple([(cell, after) for _, _, cell, after in children])

    def _targets(self, occupied: int, stacking: bool) -> Targets:
        """Where the next card may go from the piles ``occupied`` (on a pile too, with
        ``stacking``), with what :meth:`_moves` needs of each place that does not depend
        on faces or ranks: remembered by piles, since each set of piles recurs across many
        positions."""
        key = occupied << 1 | stacking
        known = self.targets.get(key)
        if known is not None:
            return known
        geo = self.geo
        if occupied:
            targets = geo.neighbours(occupied) & geo.everything & ~occupied
            if not occupied & (occupied - 1):
                targets = _one_of_each_mirror_pair(geo.size, occupied, targets)
            if stacking:
                targets |= occupied
        else:
            targets = 1 << self.first
        known = tuple(
            (
                cell,
                1 << cell,
                geo.row_others[cell],
                geo.col_others[cell],
                occupied | 1 << cell,
                bool(occupied >> cell & 1),
                repairable_patterns(geo, occupied | 1 << cell),
            )
            for cell in cells_of(targets)
        )
        if occupied:  # the empty grid's one target is wherever the first card goes now
            self.targets[key] = known
        return known

    def _search(
        self, placed: int, occupied: int, down: int, at_most: int, code: int, spare: int = 0
    ) -> bool:
        """Whether the box position fills face up with the cards from ``placed`` on,
        stacking at most ``spare`` of them.

        ``at_most`` holds, in field ``k``, the piles ranking at most ``k``; ``code`` the top
        ranks, :data:`_RANK_BITS` a cell. With heights out of reach of the capacity (see
        :meth:`solve_from`), these and ``down`` are the whole position.
        """
        self.tick()
        if not occupied:
            # The empty grid's one child is the first card's place (self.first).
            moves = self._moves(0, 0, 0, 0, spare)
        else:
            rank, cells = self.ranks[placed], self.geo.cells
            face_up = occupied & ~down
            # What the flips depend on (engine.board.flipped_by): the face-up tops
            # ranking at most the card, and at least it.
            not_above = face_up & at_most >> rank * cells
            not_below = face_up & ~(at_most >> (rank - 1) * cells)
            moves = self._remembered_moves(occupied, down, not_above, not_below, spare)
        return self._fill(placed, occupied, down, at_most, code, spare, moves)

    def _remembered_moves(
        self, occupied: int, down: int, not_above: int, not_below: int, spare: int
    ) -> Moves:
        """:meth:`_moves`, remembered under the masks it depends on."""
        cells = self.geo.cells
        key = (((occupied << cells | down) << cells | not_above) << cells | not_below) << (
            _SPARE_BITS
        ) | spare
        moves = self.moves.get(key)
        if moves is None:
            moves = self._moves(occupied, down, not_above, not_below, spare)
            if len(self.moves) >= _MOVES_KEPT:
                self.moves.clear()
            self.moves[key] = moves
        return moves

    def _fill(
        self,
        placed: int,
        occupied: int,
        down: int,
        at_most: int,
        code: int,
        spare: int,
        moves: Moves,
    ) -> bool:
        """:meth:`_search` once the position's ``moves`` are known.

        Each child's own moves are found here, before descending: most children deep in
        the search have none (every placement breaks the face-down limit or the parity
        bound), and those cost no call.
        """
        if moves and moves[0][1] < 0:
            self.line.append(moves[0][0])  # the last card fills the box face up
            return True
        cells = self.geo.cells
        # The empty grid is searched once for each place of the first card: its failure
        # with one place says nothing of the others.
        remember = occupied and cells - occupied.bit_count() >= _REMEMBER_FROM_EMPTY
        if remember:
            key = _failure_key(cells, placed, code, down, spare)
            if key in self.failed:
                return False
        ranks = self.ranks
        rank = ranks[placed]
        placed += 1
        if placed >= len(ranks):
            return False  # no card left for the empty cells
        rank_bits, cleared = self.rank_bits[rank], self.rank_bits[1]
        above = ranks[placed] * cells  # the next card's fields in at_most
        below = above - cells
        line, fill, tick = self.line, self._fill, self.tick
        known, remembered_moves = self.moves.get, self._remembered_moves
        for cell, after in moves:
            tick()
            bit = 1 << cell
            grown_spare = spare
            grown_at_most = at_most | rank_bits[cell]
            grown_code = code | rank << _RANK_BITS * cell
            if occupied & bit:  # a card stacked: the pile's rank changes
                grown_spare -= 1
                grown_at_most = at_most & ~cleared[cell] | rank_bits[cell]
                grown_code = code & ~(15 << _RANK_BITS * cell) | rank << _RANK_BITS * cell
            grown = occupied | bit
            face_up = grown & ~after
            not_above = face_up & grown_at_most >> above
            not_below = face_up & ~(grown_at_most >> below)
            children = known(
                (((grown << cells | after) << cells | not_above) << cells | not_below)
                << _SPARE_BITS
                | grown_spare
            )
            if children is None:
                children = remembered_moves(grown, after, not_above, not_below, grown_spare)
            if not children:
                continue
            line.append(cell)
            if fill(placed, grown, after, grown_at_most, grown_code, grown_spare, children):
                return True
            line.pop()
        if remember:
            self.failed.add(key)
        return False


def _may_turn_up(geo: Layout, occupied: int, down: int, spare: int) -> bool:
    """The bound on a box position with face-down tops ``down``: with no card to spare
    the parity bound, with one the one-stack bound (:mod:`engine.board`), with more
    none."""
    if not spare:
        patterns = geo.repairs.get(occupied)
        if patterns is None:
            patterns = repairable_patterns(geo, occupied)
        return down in patterns
    return spare > 1 or repairable_with_one_stack(geo, occupied, down, 0)


def _failure_key(cells: int, placed: int, code: int, down: int, spare: int) -> int:
    """How :attr:`TightSearch.failed` holds a box position: its rank code, faces, cards
    placed (which cards are still to come) and cards to spare."""
    return (((code << cells | down) << _PLACED_BITS) | placed) << _SPARE_BITS | spare


@cache
def _box_symmetries(size: int) -> tuple[tuple[int, ...], ...]:
    """The eight rotations and reflections of a ``size`` x ``size`` box, each as the
    image of every cell."""
    images = []
    for transform in range(8):
        image = []
        for cell in range(size * size):
            row, col = divmod(cell, size)
            if transform & 4:
                row, col = col, row
            if transform & 1:
                row = size - 1 - row
            if transform & 2:
                col = size - 1 - col
            image.append(row * size + col)
        images.append(tuple(image))
    return tuple(images)


def _box_cells(size: int, width: int, top: int, left: int) -> list[int]:
    """The board cell of each cell of the box whose top left cell is ``(top, left)``."""
    return [(top + cell // size) * width + left + cell % size for cell in range(size * size)]


def _one_of_each_mirror_pair(size: int, occupied: int, targets: int) -> int:
    """``targets`` less the mirror image of each, when the one pile is on the box's
    diagonal: the rules do not tell rows from columns, so the two positions the second
    card makes are mirror images with the same future, and one is enough."""
    pile = occupied.bit_length() - 1
    if pile // size != pile % size:
        return targets
    kept = 0
    for cell in cells_of(targets):
        if not kept >> _transposed(size, cell) & 1:
            kept |= 1 << cell
    return kept


def _transposed(size: int, cell: int) -> int:
    """A cell of a ``size`` x ``size`` box's image in the box's main diagonal."""
    return (cell % size) * size + cell // size


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
