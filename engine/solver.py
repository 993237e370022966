"""Par: the best score reachable on a deal when the whole stock is known.

A racer cannot see the stock, so a score means most next to the deal's *par*, the score
of a perfect player who can. :func:`solve` finds it by depth-first search on a
:class:`~engine.board.Board`, deepening on the number of cards used: a win with the
fewest cards has the best score, so the first pass that finds a win (usually the first
one, with ``grid_size²`` cards) proves its line optimal. What keeps it fast:

- a **parity bound**: when every remaining card must open a new pile, the face-down
  pattern must be one that row and column triggers can repair
  (:func:`~engine.board.repairable`), or one more card is needed; with one card to
  spare, one that they can repair once a single pile is covered
  (:func:`~engine.board.repairable_with_one_stack`);
- the **box search** (:mod:`engine.tight`) for every position with at most two cards to
  spare: the whole pass, from the empty grid, for the deals won with up to 18 cards;
- a **transposition table** keyed on the board's ranks, faces and heights, translated
  to its box and reduced over the eight rotations and reflections (the rules do not
  change under them), remembering the largest card budget each position failed with;
- **move ordering**: fewer face-down cards first, then more piles.

Every line is replayed through the engine before it is reported.

>>> from engine import replay
>>> result = solve(deal("0"), budget=5.0)
>>> result.score, result.proven
(24, True)
>>> replay("0", result.moves).score
24
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from engine.board import Board, repairable_patterns, repairable_with_one_stack
from engine.cards import Card, deal
from engine.game import Game, Position, Status
from engine.heuristic import LOSS, WIN, evaluate
from engine.rules import Ruleset
from engine.tight import MOST_SPARE, TightSearch

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Par:
    """What the solver found for one deal.

    ``score`` is the best score of a winning line found (``None`` if none was found) and
    ``moves`` that line, replayed through the engine. ``proven`` says the search finished:
    the score is then the deal's par, or with ``score`` ``None`` the deal is unwinnable.
    Otherwise the budget ran out and the par lies between ``score`` (a lower bound) and
    ``at_most`` (an upper bound, proven by the passes that failed).
    """

    score: int | None
    moves: tuple[Position, ...]
    proven: bool
    nodes: int
    seconds: float
    first_line_seconds: float | None = None
    """When the first winning line was found, in seconds from the start (``None``: never)."""
    at_most: int | None = None
    """The best score any line could reach, proven: ``score`` itself once proven, and
    ``None`` when no line can win at all (every deal's par is at most ``stock - grid_size²``,
    and each search pass that fails proves it one lower)."""

    @property
    def winnable(self) -> bool | None:
        """True if a winning line is known, False if proven unwinnable, else unknown."""
        if self.score is not None:
            return True
        return False if self.proven else None


class _OutOfTime(Exception):
    """The search's budget (its time, or its nodes) is spent."""


class _OutOfNodes(Exception):
    """The search visited as many nodes as it was allowed to."""


#: Nodes allowed to the first, quick try at a win with the fewest cards.
QUICK_NODES = 3000


#: How many nodes the search visits between two looks at the clock.
_CLOCK_EVERY = 512


class _Search:
    """One deal's search state: the board, the stock's ranks, the table and the line."""

    def __init__(self, ranks: Sequence[int], rules: Ruleset, deadline: float, clock: Clock):
        self.board = Board(rules)
        self.ranks = ranks
        self.goal_piles = rules.grid_size**2
        self.deadline = deadline
        self.clock = clock
        self.nodes = 0
        self.line: list[int] = []
        # Canonical position -> the largest card budget it is known to fail with.
        self.failed: dict[bytes, int] = {}
        self.symmetries = _symmetries(rules.grid_size)
        self._node_limit: float = float("inf")
        self.node_budget: float = float("inf")
        """Nodes allowed to the whole search (:class:`_OutOfTime` past them)."""
        self._next_look: float = 0
        """The node count at which :meth:`tick` next looks at the limits and the clock."""
        self.tight = TightSearch(self.board, ranks, self.tick)

    def win_within(self, cards: int) -> bool:
        """Search for a win using at most ``cards`` cards; on success ``line`` holds it."""
        # A fresh board: a pass stopped by a limit leaves its board mid-line.
        self.board = self.tight.board = Board(self.board.rules)
        self.line.clear()
        cards = min(cards, len(self.ranks))
        return cards >= self.goal_piles and self._search(0, cards)

    def _search(self, placed: int, limit: int) -> bool:
        """Whether the position after ``placed`` cards wins by card ``limit``.

        The caller has checked the bounds (enough cards for the empty cells, and a
        repairable pattern if no card is to spare) before calling, which spares a call
        for most children.
        """
        self.tick()
        board = self.board
        key = _canonical_key(board, self.symmetries)
        if self.failed.get(key, -1) >= limit:
            return False
        goal = self.goal_piles
        remaining = limit - placed
        spare = remaining - (goal - board.occupied.bit_count())
        if spare <= MOST_SPARE and max(board.height) + spare <= board.capacity:
            # Few cards to spare, and no pile can fill up: the box search takes over.
            cells = self.tight.solve_from(placed, spare)
            if cells is not None:
                self.line.extend(cells)
                return True
            self.failed[key] = limit
            return False
        rank = self.ranks[placed]
        limit_down, geo, after = board.limit, board.layout, board.after
        children: list[tuple[int, int, int]] = []
        for cell in board.targets():
            occupied, down, full = after(cell, rank)
            face_down = down.bit_count()
            if face_down <= limit_down:
                piles = occupied.bit_count()
                if not down and piles == goal:
                    self.line.append(cell)
                    return True
                # The child's bound: as many cards left as empty cells means no stacking,
                # so its face-down pattern must be repairable by triggers alone; one card
                # more, by triggers and one stacked card.
                spare = remaining - 1 - (goal - piles)
                if (
                    spare > 1
                    or not down
                    or (
                        down in repairable_patterns(geo, occupied)
                        if spare == 0
                        else spare == 1 and repairable_with_one_stack(geo, occupied, down, full)
                    )
                ):
                    children.append((face_down, -piles, cell))
        children.sort()
        line = self.line
        for _, _, cell in children:
            token = board.place(cell, rank)
            line.append(cell)
            found = self._search(placed + 1, limit)
            board.undo(token)
            if found:
                return True
            line.pop()
        self.failed[key] = limit
        return False

    @property
    def node_limit(self) -> float:
        """Nodes allowed to the pass under way (:class:`_OutOfNodes` past them)."""
        return self._node_limit

    @node_limit.setter
    def node_limit(self, nodes: float) -> None:
        self._node_limit = nodes
        self._next_look = self.nodes  # the next tick looks again

    def tick(self) -> None:
        """Count a node; raise :class:`_OutOfTime` when the budget is spent.

        Called for every node, so it only counts: the limits and the clock are looked at
        every :data:`_CLOCK_EVERY` nodes and at a node limit (:meth:`_look`).
        """
        self.nodes += 1
        if self.nodes >= self._next_look:
            self._look()

    def _look(self) -> None:
        nodes = self.nodes
        if nodes >= self._node_limit:
            raise _OutOfNodes
        if nodes >= self.node_budget:
            raise _OutOfTime
        if not nodes % _CLOCK_EVERY and self.clock() > self.deadline:
            raise _OutOfTime
        next_clock = nodes - nodes % _CLOCK_EVERY + _CLOCK_EVERY
        self._next_look = min(next_clock, self._node_limit, self.node_budget)


def _canonical_key(board: Board, symmetries: _Symmetries) -> bytes:
    """The position up to translation and the eight symmetries, on ranks only."""
    size, width = board.grid_size, board.layout.width
    height, ranks, down = board.height, board.rank, board.down
    row_min, row_max, col_min, col_max = board.box
    codes = [0] * (size * size + 1)  # the last entry stays 0: "outside the box"
    index = 0
    for row in range(row_min, row_max + 1):
        base = row * width
        slot = index
        for cell in range(base + col_min, base + col_max + 1):
            if height[cell]:
                codes[slot] = ranks[cell] + 10 * ((~down >> cell & 1) + 2 * height[cell])
            slot += 1
        index += size
    return min(
        bytes([codes[source] for source in order])
        for order in symmetries[row_max - row_min][col_max - col_min]
    )


_Symmetries = tuple[tuple[tuple[tuple[int, ...], ...], ...], ...]


@cache
def _symmetries(size: int) -> _Symmetries:
    """For each box shape ``[h-1][w-1]``, eight orders that read a ``size``-wide grid
    (box at the top left) as one of its rotations or reflections, again at the top left.
    Entries ``size*size`` read the constant 0 of cells outside the box.
    """
    outside = size * size
    shapes = []
    for h in range(1, size + 1):
        by_width = []
        for w in range(1, size + 1):
            orders = []
            for transform in range(8):
                order = [outside] * outside
                for i in range(h):
                    for j in range(w):
                        a, b = (j, i) if transform & 4 else (i, j)
                        rows, cols = (w, h) if transform & 4 else (h, w)
                        if transform & 1:
                            a = rows - 1 - a
                        if transform & 2:
                            b = cols - 1 - b
                        order[a * size + b] = i * size + j
                orders.append(tuple(order))
            by_width.append(tuple(orders))
        shapes.append(tuple(by_width))
    return tuple(shapes)


def solve(
    stock: Sequence[Card],
    rules: Ruleset = Ruleset(),
    budget: float | None = None,
    clock: Clock = time.perf_counter,
    prove: bool = True,
    nodes: int | None = None,
) -> Par:
    """The par of the deal ``stock`` (top first) under ``rules``, within ``budget`` seconds.

    With ``prove=False`` the search stops at the first winning line (it is then proven
    only if that line happens to use the fewest cards possible). ``nodes`` caps the
    positions visited as well as the time: a budget that does not depend on the machine.


    First a beam search finds a good line quickly (an upper bound on the cards needed);
    then the depth-first search tries the fewest cards possible, ``grid_size²``, which
    most deals need, and otherwise one card more at a time until a pass finds a line or
    reaches the beam's: each pass that fails proves the par one lower (``at_most``), so a
    search out of time still reports a proven range. With no budget the search runs until
    it proves the par (or that there is no win). The returned line has been replayed
    through the engine.
    """
    start = clock()
    deadline = float("inf") if budget is None else start + budget
    ranks = [card.rank for card in stock]
    search = _Search(ranks, rules, deadline, clock)
    if nodes is not None:
        search.node_budget = nodes
    fewest = rules.grid_size**2
    best: list[int] = []
    first_found: float | None = None
    proven = False
    # No win uses this many cards or fewer (a grid needs grid_size² piles).
    ruled_out = fewest - 1

    def keep(line: list[int]) -> None:
        nonlocal best, first_found
        if line:
            best = line[:]
            first_found = clock() if first_found is None else first_found

    try:
        # Most deals are won with the fewest cards, and a short first try usually finds
        # that line; its failed positions stay in the table for the full pass below.
        search.node_limit = QUICK_NODES
        try:
            if search.win_within(fewest):
                keep(search.line)
                proven = True
        except _OutOfNodes:
            pass
        search.node_limit = float("inf")
        if not proven:
            line, width = beam_line(ranks, rules, search)
            keep(line)
            if line and len(line) > fewest and width < REFINE_WIDTH:
                # The narrow beam's line came fast; a wider one usually finds a shorter
                # line, which the close-in passes (or an unproven result) start from.
                shorter = _beam(ranks, rules, search, REFINE_WIDTH)
                if shorter and len(shorter) < len(best):
                    keep(shorter)
            proven = len(best) == fewest
        if not proven and not prove:
            if not best:
                proven = not search.win_within(len(ranks))
                keep(search.line)
        elif not proven:
            # Climb from the fewest cards: the first pass that wins is optimal, since every
            # pass before it failed; and each failure lowers the proven upper bound.
            cards = fewest
            while cards <= len(ranks) and (not best or cards < len(best)):
                if search.win_within(cards):
                    keep(search.line)
                    break
                ruled_out = cards
                cards += 1
            proven = True
    except _OutOfTime:
        pass
    positions = tuple(search.board.position(cell) for cell in best)
    score = _checked_score(stock, rules, positions) if best else None
    first_seconds = None if first_found is None else first_found - start
    at_most = score if proven else len(ranks) - ruled_out - 1
    return Par(
        score,
        positions,
        proven,
        search.nodes,
        clock() - start,
        first_seconds,
        at_most if at_most is not None and at_most >= 0 else None,
    )


#: How many positions the beam keeps at each card: a narrow beam finds a first line in
#: a fraction of the time of a wide one; wider only if narrower found no win.
BEAM_WIDTHS = (16, 64, 512)

#: After a first line from a narrower beam, a beam this wide looks for a shorter one.
REFINE_WIDTH = 64

def beam_line(ranks: Sequence[int], rules: Ruleset, search: _Search) -> tuple[list[int], int]:
    """A winning line (as cells) found by beam search on the heuristic, or ``[]``, with
    the beam width that found it (the widest tried if none did).

    Cheap, and it wins almost every deal, so that the exact search has a line to report
    when its budget runs out; a wider beam is tried when a narrower one finds no win.
    """
    for width in BEAM_WIDTHS:
        line = _beam(ranks, rules, search, width)
        if line:
            return line, width
    return [], BEAM_WIDTHS[-1]


def _beam(
    ranks: Sequence[int], rules: Ruleset, search: _Search, width: int, cards: int | None = None
) -> list[int]:
    """Keep the ``width`` best distinct positions after each card; return the first win.

    With ``cards``, only lines that win with at most that many cards: a position that has
    stacked more cards than such a line can spare is dropped, however well it scores.
    """
    most = len(ranks) if cards is None else min(cards, len(ranks))
    spare = most - rules.grid_size**2
    beam: list[tuple[Board, list[int]]] = [(Board(rules), [])]
    for placed, rank in enumerate(ranks[:most]):
        cards_left = len(ranks) - placed - 1
        scored: list[tuple[float, int, int, bytes]] = []
        for index, (board, _) in enumerate(beam):
            search.tick()
            for cell in board.targets():
                token = board.place(cell, rank)
                if placed + 1 - board.occupied.bit_count() > spare:
                    board.undo(token)
                    continue
                value = evaluate(board, cards_left)
                if value >= WIN:
                    line = beam[index][1] + [cell]
                    board.undo(token)
                    return line
                if value > LOSS:
                    scored.append((value, index, cell, _canonical_key(board, search.symmetries)))
                board.undo(token)
        scored.sort(key=lambda item: -item[0])
        seen: set[bytes] = set()
        next_beam: list[tuple[Board, list[int]]] = []
        for _, index, cell, key in scored:
            if key in seen:
                continue
            seen.add(key)
            board = beam[index][0].copy()
            board.place(cell, rank)
            next_beam.append((board, [*beam[index][1], cell]))
            if len(next_beam) == width:
                break
        beam = next_beam
        if not beam:
            break
    return []


def _checked_score(stock: Sequence[Card], rules: Ruleset, moves: Sequence[Position]) -> int:
    """Replay ``moves`` through the engine and return the score; a loss is a solver bug."""
    game = Game(stock, rules)
    for move in moves:
        game.play(move)
    if game.status is not Status.WON or game.score is None:
        raise AssertionError(f"the solver's line does not win: {game.notation()}")
    return game.score


def par(seed: str, rules: Ruleset = Ruleset(), budget: float | None = None) -> Par:
    """The par of the deal dealt from ``seed`` (deal v1): see :func:`solve`."""
    return solve(deal(seed), rules, budget)



def random_seed() -> str:
    """A fresh seed with 128 bits from the operating system's cryptographic source."""
    return secrets.token_hex(16)


@dataclass(frozen=True, slots=True)
class WinnableDeal:
    """A seed proven winnable: ``line`` wins it, replayed through the engine."""

    seed: str
    line: tuple[Position, ...]
    score: int


class NoWinnableSeed(RuntimeError):
    """No seed drawn within the attempts allowed was shown to be winnable."""


def winnable_seed(
    source: Callable[[], str] = random_seed,
    rules: Ruleset = Ruleset(),
    budget: float = 1.0,
    attempts: int = 20,
    clock: Clock = time.perf_counter,
    within: float | None = None,
) -> WinnableDeal:
    """Draw seeds from ``source`` until one is shown winnable within ``budget`` seconds.

    For the ``winnable`` seed policy: the caller keeps the returned seed as secret as any
    other (only its commitment is published before the race), so the policy does not
    weaken the commitment. Nearly every deal is winnable and a line is usually found in
    milliseconds, so ``attempts`` is a safety net; :class:`NoWinnableSeed` if it runs out.
    ``within`` bounds all the attempts together, in seconds: under a ruleset that deals
    few winnable seeds, each attempt can take its whole budget, and a server must not
    spend ``attempts`` times that on one request.
    """
    deadline = float("inf") if within is None else clock() + within
    for _ in range(attempts):
        left = deadline - clock()
        if left <= 0:
            raise NoWinnableSeed(f"no winnable seed found within {within} s")
        seed = source()
        found = solve(deal(seed), rules, min(budget, left), clock, prove=False)
        if found.score is not None:
            return WinnableDeal(seed, found.moves, found.score)
    raise NoWinnableSeed(f"no winnable seed in {attempts} attempts of {budget} s each")
