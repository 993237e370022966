"""One game of Foursquare: the grid, the stock, and the rules that move them.

Positions are ``(row, col)`` relative to the first card, which is always at ``(0, 0)``;
row grows downwards, col to the right. The grid "floats": the occupied positions must
fit in a ``grid_size`` x ``grid_size`` box, wherever that box ends up.

>>> game = Game.new("foursquare")
>>> str(game.card), game.legal_moves()
('4S', [(0, 0)])
>>> game.play((0, 0))
(Placed(card=Card(rank=4, suit='S'), position=(0, 0), height=1),)
>>> str(game.card), game.stock_left
('3S', 38)
>>> game.play((0, 1))[-1]
Flipped(position=(0, 0), card=Card(rank=4, suit='S'), face_up=False)
>>> game.face_down
1
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache

from engine.cards import DECK, Card, deal_ids
from engine.rules import Adjacency, Ruleset

Position = tuple[int, int]
"""A grid position ``(row, col)`` relative to the first card."""

_RANK = tuple(card.rank for card in DECK)


class Status(Enum):
    """Where a game stands."""

    PLAYING = "playing"
    WON = "won"
    LOST = "lost"


class LossReason(Enum):
    """Why a game was lost; ``.sentence`` says it for a person."""

    FACE_DOWN = "face_down"
    STOCK_EMPTY = "stock_empty"

    @property
    def sentence(self) -> str:
        if self is LossReason.FACE_DOWN:
            return "too many face-down cards"
        return "the stock ran out before the grid was complete"


class IllegalMove(ValueError):
    """A move the rules do not allow. The game is left exactly as it was."""


@dataclass(frozen=True, slots=True)
class Pile:
    """A pile as a player sees it: its top card, that card's face, and how many cards."""

    top: Card
    face_up: bool
    height: int
    cards: tuple[Card, ...]
    """Every card in the pile, bottom first (the last one is ``top``)."""


@dataclass(frozen=True, slots=True)
class Placed:
    """The drawn card was put on ``position``; the pile there is now ``height`` high."""

    card: Card
    position: Position
    height: int


@dataclass(frozen=True, slots=True)
class Flipped:
    """The top card at ``position`` was turned; ``face_up`` is its new face."""

    position: Position
    card: Card
    face_up: bool


@dataclass(frozen=True, slots=True)
class GameOver:
    """The move ended the game."""

    status: Status
    reason: LossReason | None
    score: int | None


Event = Placed | Flipped | GameOver


@dataclass(frozen=True, slots=True)
class _Geometry:
    """Index arithmetic for a ruleset's grid, shared by every game with that ruleset.

    Cells live in a flat array covering every position a game can reach: rows and cols
    from ``-(n-1)`` to ``n-1``, because the box always contains the first card.
    """

    size: int
    offset: int
    width: int
    positions: tuple[Position, ...]
    neighbours: tuple[tuple[int, ...], ...]


@cache
def _geometry(size: int, adjacency: Adjacency) -> _Geometry:
    offset = size - 1
    width = 2 * size - 1
    steps: tuple[tuple[int, int], ...]
    if adjacency is Adjacency.EDGE:
        steps = ((-1, 0), (0, -1), (0, 1), (1, 0))
    else:
        steps = tuple((dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if dr or dc)
    positions = tuple((i // width - offset, i % width - offset) for i in range(width * width))
    neighbours = tuple(
        tuple(
            (row + dr) * width + (col + dc)
            for dr, dc in steps
            if 0 <= row + dr < width and 0 <= col + dc < width
        )
        for row in range(width)
        for col in range(width)
    )
    return _Geometry(size, offset, width, positions, neighbours)


class Game:
    """A game in progress (or over): create it with :meth:`new`, then :meth:`play` moves.

    All state changes happen in :meth:`play`; everything else only reads.
    """

    __slots__ = (
        "_box",
        "_down",
        "_geo",
        "_height",
        "_moves",
        "_piles",
        "_reason",
        "_status",
        "_stock",
        "_top",
        "_touching",
        "_up",
        "rules",
        "seed",
    )

    rules: Ruleset
    seed: str | None

    def __init__(self, stock: Sequence[Card], rules: Ruleset = Ruleset(), seed: str | None = None):
        """A new game on ``stock`` (top first). Most callers want :meth:`new` instead."""
        ids = tuple(card.id for card in stock)
        if len(set(ids)) != len(ids):
            raise ValueError("the stock holds the same card twice")
        self.rules = rules
        self.seed = seed
        self._stock = ids
        self._geo = _geometry(rules.grid_size, rules.adjacency)
        cells = self._geo.width**2
        self._top = [-1] * cells
        self._height = [0] * cells
        # Whether a cell touches a pile (by the ruleset's adjacency): kept as piles appear,
        # so finding where an empty cell may take a card is one lookup, not a neighbour scan.
        self._touching = [False] * cells
        self._up = [True] * cells
        self._moves: list[int] = []
        self._piles = 0
        self._down = 0
        # Occupied box in cell coordinates: [row_min, row_max, col_min, col_max].
        self._box = [self._geo.offset, self._geo.offset, self._geo.offset, self._geo.offset]
        self._status = Status.PLAYING if ids else Status.LOST
        self._reason: LossReason | None = None if ids else LossReason.STOCK_EMPTY

    @classmethod
    def new(cls, seed: str, rules: Ruleset = Ruleset()) -> Game:
        """A new game on the stock dealt from ``seed`` (deal v1)."""
        return cls([DECK[i] for i in deal_ids(seed)], rules, seed)

    def copy(self) -> Game:
        """An independent copy, cheap enough for search."""
        clone = Game.__new__(Game)
        clone.rules = self.rules
        clone.seed = self.seed
        clone._stock = self._stock
        clone._geo = self._geo
        clone._top = self._top[:]
        clone._height = self._height[:]
        clone._touching = self._touching[:]
        clone._up = self._up[:]
        clone._moves = self._moves[:]
        clone._piles = self._piles
        clone._down = self._down
        clone._box = self._box[:]
        clone._status = self._status
        clone._reason = self._reason
        return clone

    # ----------------------------------------------------------------- reading

    @property
    def card(self) -> Card | None:
        """The card to place now, or ``None`` when the game is over."""
        if self._status is not Status.PLAYING:
            return None
        return DECK[self._stock[len(self._moves)]]

    @property
    def status(self) -> Status:
        """Playing, won or lost."""
        return self._status

    @property
    def loss_reason(self) -> LossReason | None:
        """Why the game was lost, or ``None`` if it was not."""
        return self._reason

    @property
    def score(self) -> int | None:
        """Cards left in the stock when the game was won; ``None`` otherwise."""
        return self.stock_left if self._status is Status.WON else None

    @property
    def stock_left(self) -> int:
        """Cards still in the stock, not counting the card in hand."""
        left = len(self._stock) - len(self._moves)
        return left - 1 if self._status is Status.PLAYING else left

    @property
    def cards_played(self) -> int:
        """How many cards have been placed."""
        return len(self._moves)

    @property
    def face_down(self) -> int:
        """How many top cards are face down now."""
        return self._down

    @property
    def face_up(self) -> int:
        """How many top cards are face up now."""
        return self._piles - self._down

    @property
    def pile_count(self) -> int:
        """How many piles the grid has."""
        return self._piles

    @property
    def stock(self) -> tuple[Card, ...]:
        """The whole stock as dealt, top first, including the cards already placed."""
        return tuple(DECK[i] for i in self._stock)

    @property
    def moves(self) -> list[Position]:
        """The positions played so far, in order."""
        positions = self._geo.positions
        return [positions[i] for i in self._moves]

    @property
    def piles(self) -> dict[Position, Pile]:
        """Every pile by position, in reading order."""
        stacks: dict[int, list[Card]] = {}
        for placed, cell in enumerate(self._moves):
            stacks.setdefault(cell, []).append(DECK[self._stock[placed]])
        positions = self._geo.positions
        return {
            positions[cell]: Pile(
                top=DECK[self._top[cell]],
                face_up=self._up[cell],
                height=self._height[cell],
                cards=tuple(stacks[cell]),
            )
            for cell in sorted(stacks)
        }

    def is_over(self) -> bool:
        """Whether the game has ended, won or lost."""
        return self._status is not Status.PLAYING

    def legal_moves(self) -> list[Position]:
        """Every position the current card may go to, sorted; empty when the game is over."""
        if self._status is not Status.PLAYING:
            return []
        geo = self._geo
        if not self._piles:
            return [(0, 0)]
        height, touching, positions = self._height, self._touching, geo.positions
        capacity, width, span = self.rules.pile_capacity, geo.width, geo.size - 1
        row_min, row_max, col_min, col_max = self._box
        targets = []
        for row in range(row_max - span, row_min + span + 1):
            base = row * width
            for cell in range(base + col_max - span, base + col_min + span + 1):
                pile_height = height[cell]
                if pile_height:
                    if pile_height < capacity:
                        targets.append(positions[cell])
                elif touching[cell]:
                    targets.append(positions[cell])
        return targets

    def why_illegal(self, position: Position) -> str | None:
        """Why ``position`` is not a legal move now, in a sentence; ``None`` if it is legal."""
        if self._status is not Status.PLAYING:
            return "the game is over"
        if not _is_position(position):
            return f"a move is a (row, col) pair of integers, not {position!r}"
        geo = self._geo
        size, row, col = geo.size, position[0], position[1]
        if not (-geo.offset <= row <= geo.offset and -geo.offset <= col <= geo.offset):
            return f"({row}, {col}) is outside the {size}x{size} grid"
        if not self._piles:
            return None if (row, col) == (0, 0) else "the first card goes at (0, 0)"
        cell = (row + geo.offset) * geo.width + col + geo.offset
        if self._height[cell] >= self.rules.pile_capacity:
            return f"the pile at ({row}, {col}) is full ({self.rules.pile_capacity} cards)"
        if not self._height[cell] and not self._touching[cell]:
            kind = "next to" if self.rules.adjacency is Adjacency.EDGE else "touching"
            return f"({row}, {col}) is not {kind} any pile"
        row_min, row_max, col_min, col_max = self._box
        r, c = row + geo.offset, col + geo.offset
        if max(row_max, r) - min(row_min, r) >= size or max(col_max, c) - min(col_min, c) >= size:
            return f"({row}, {col}) would stretch the grid beyond {size}x{size}"
        return None

    # ---------------------------------------------------------------- changing

    def play(self, position: Position) -> tuple[Event, ...]:
        """Place the current card at ``position`` and return what happened.

        The events are the placement, then each flip (row first, then column), then
        :class:`GameOver` if the move ended the game. Raises :class:`IllegalMove` with a
        reason, leaving the game untouched, if the move is not allowed.
        """
        reason = self.why_illegal(position)
        if reason is not None:
            raise IllegalMove(reason)
        geo = self._geo
        cell = (position[0] + geo.offset) * geo.width + position[1] + geo.offset
        card_id = self._stock[len(self._moves)]
        flipped = self._place(cell, card_id)
        placed = Placed(DECK[card_id], (position[0], position[1]), self._height[cell])
        events: list[Event] = [placed]
        positions, top, up = geo.positions, self._top, self._up
        events.extend(Flipped(positions[f], DECK[top[f]], up[f]) for f in flipped)
        if self._status is not Status.PLAYING:
            events.append(GameOver(self._status, self._reason, self.score))
        return tuple(events)

    def _place(self, cell: int, card_id: int) -> list[int]:
        """Apply a legal move; return the cells whose top card flipped."""
        self._lay(cell, card_id, face_up=True)
        height, top, up, box = self._height, self._top, self._up, self._box
        width = self._geo.width
        row, col = divmod(cell, width)
        rank = _RANK[card_id]
        row_cells = range(row * width + box[2], row * width + box[3] + 1)
        col_cells = range(box[0] * width + col, box[1] * width + col + 1, width)
        flipped: list[int] = []
        for line in (row_cells, col_cells):
            others = [c for c in line if c != cell and height[c]]
            face_up_ranks = [_RANK[top[c]] for c in others if up[c]]
            if not face_up_ranks or rank > max(face_up_ranks) or rank < min(face_up_ranks):
                for other in others:
                    up[other] = not up[other]
                    self._down += -1 if up[other] else 1
                flipped.extend(others)

        self._end_turn()
        return flipped

    def _end_turn(self) -> None:
        rules = self.rules
        if self._down > rules.face_down_limit:
            self._status, self._reason = Status.LOST, LossReason.FACE_DOWN
        elif self._piles == rules.grid_size**2 and not self._down:
            self._status = Status.WON
        elif len(self._moves) == len(self._stock):
            self._status, self._reason = Status.LOST, LossReason.STOCK_EMPTY

    # ---------------------------------------------------------------- notation

    def notation(self) -> str:
        """The whole position on one line; :meth:`from_notation` reads it back.

        Fields, separated by spaces: the ruleset, the position of the box's top-left
        corner, the grid (rows top to bottom split by ``/``, cells split by ``.``, a pile
        as its cards bottom first, ``*`` after a face-down top, ``-`` for an empty cell),
        and the stock still to come, the card in hand first (``-`` when empty).

        >>> game = Game.new("foursquare")
        >>> for move in [(0, 0), (0, 1), (1, 1)]:
        ...     _ = game.play(move)
        >>> game.notation()[:40]
        '4x4c4f4e 0,0 4S*.3S*/-.TC 8H4D7D2HAH7C6S'
        """
        geo = self._geo
        if not self._piles:
            grid = "- -"
        else:
            stacks = {pos: pile for pos, pile in self.piles.items()}
            row_min, row_max, col_min, col_max = (v - geo.offset for v in self._box)
            rows = []
            for row in range(row_min, row_max + 1):
                cells = []
                for col in range(col_min, col_max + 1):
                    pile = stacks.get((row, col))
                    if pile is None:
                        cells.append("-")
                    else:
                        cells.append("".join(map(str, pile.cards)) + ("" if pile.face_up else "*"))
                rows.append(".".join(cells))
            grid = f"{row_min},{col_min} " + "/".join(rows)
        rest = self._stock[len(self._moves) :]
        stock = "".join(str(DECK[i]) for i in rest) or "-"
        return f"{self.rules.notation()} {grid} {stock}"

    @classmethod
    def from_notation(cls, text: str) -> Game:
        """Read a position written by :meth:`notation`.

        The game's :attr:`moves` then lay each pile bottom first in reading order: a
        position does not record the order in which its piles were built.

        >>> game = Game.new("0")
        >>> _ = game.play((0, 0))
        >>> Game.from_notation(game.notation()) == game
        True
        """
        fields = text.split()
        if len(fields) != 4:
            raise ValueError(
                f"a position has four fields: ruleset, corner, grid and stock, not {len(fields)}"
            )
        rules = Ruleset.parse(fields[0])
        corner, grid, stock_text = fields[1:]
        piles: list[tuple[Position, list[Card], bool]] = []
        if (corner == "-") != (grid == "-"):
            raise ValueError("an empty grid is written '- -'")
        if grid != "-":
            try:
                row0, col0 = (int(v) for v in corner.split(","))
            except ValueError:
                raise ValueError(f"the corner is written 'row,col', not {corner!r}") from None
            for dr, row_text in enumerate(grid.split("/")):
                for dc, cell_text in enumerate(row_text.split(".")):
                    if cell_text != "-":
                        cards = _parse_cards(cell_text.removesuffix("*"))
                        piles.append(((row0 + dr, col0 + dc), cards, not cell_text.endswith("*")))
        stock = [] if stock_text == "-" else _parse_cards(stock_text)
        return cls.from_piles(piles, stock, rules)

    @classmethod
    def from_piles(
        cls,
        piles: Iterable[tuple[Position, Sequence[Card], bool]],
        stock: Sequence[Card],
        rules: Ruleset = Ruleset(),
    ) -> Game:
        """The position with these piles (position, cards bottom first, whether the top is
        face up) and ``stock`` still to come, the card in hand first.

        As with :meth:`from_notation`, :attr:`moves` lay each pile bottom first in the
        order given; a position that play could not reach is refused with ``ValueError``.

        >>> from engine.cards import Card
        >>> game = Game.from_piles([((0, 0), [Card.parse("4S")], False)], [Card.parse("3S")])
        >>> str(game.card), game.face_down, game.cards_played
        ('3S', 1, 1)
        """
        piles = [(position, list(cards), face_up) for position, cards, face_up in piles]
        if any(not cards for _, cards, _ in piles):
            raise ValueError("a pile holds at least one card")
        _check_reachable(rules, [(pos, len(cards)) for pos, cards, _ in piles])
        game = cls([card for _, cards, _ in piles for card in cards] + list(stock), rules)
        geo = game._geo
        for (row, col), cards, face_up in piles:
            cell = (row + geo.offset) * geo.width + col + geo.offset
            for card in cards[:-1]:
                game._lay(cell, card.id, face_up=True)
            game._lay(cell, cards[-1].id, face_up)
        game._status, game._reason = Status.PLAYING, None
        game._end_turn()
        return game

    def _lay(self, cell: int, card_id: int, face_up: bool) -> None:
        """Put a card on a pile without flips or end-of-turn checks (to read positions)."""
        if not self._height[cell]:
            self._piles += 1
            touching = self._touching
            for neighbour in self._geo.neighbours[cell]:
                touching[neighbour] = True
            row, col = divmod(cell, self._geo.width)
            box = self._box
            box[0], box[1] = min(box[0], row), max(box[1], row)
            box[2], box[3] = min(box[2], col), max(box[3], col)
        elif not self._up[cell]:
            self._down -= 1
        self._height[cell] += 1
        self._top[cell] = card_id
        self._up[cell] = face_up
        if not face_up:
            self._down += 1
        self._moves.append(cell)

    def __repr__(self) -> str:
        return f"Game.from_notation({self.notation()!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Game):
            return NotImplemented
        return self.notation() == other.notation()

    __hash__ = None  # type: ignore[assignment]  # games are mutable


def _parse_cards(text: str) -> list[Card]:
    if not text or len(text) % 2:
        raise ValueError(f"a pile or stock is cards of two letters each, not {text!r}")
    return [Card.parse(text[i : i + 2]) for i in range(0, len(text), 2)]


def _check_reachable(rules: Ruleset, piles: list[tuple[Position, int]]) -> None:
    """A position must be one play could reach: first card at (0, 0), in the box, capacity."""
    if not piles:
        return
    positions = [pos for pos, _ in piles]
    if (0, 0) not in positions:
        raise ValueError("the first card is at (0, 0), so a grid always has a pile there")
    rows = [r for r, _ in positions]
    cols = [c for _, c in positions]
    size = rules.grid_size
    if max(rows) - min(rows) >= size or max(cols) - min(cols) >= size:
        raise ValueError(f"the piles do not fit in a {size}x{size} box")
    for pos, height in piles:
        if height > rules.pile_capacity:
            raise ValueError(f"the pile at {pos} holds more than {rules.pile_capacity} cards")


def _is_position(position: object) -> bool:
    return (
        isinstance(position, tuple | list)
        and len(position) == 2
        and type(position[0]) is int
        and type(position[1]) is int
    )


def replay(seed: str, moves: Iterable[Position], rules: Ruleset = Ruleset()) -> Game:
    """The game reached by playing ``moves`` from the deal of ``seed``.

    Raises :class:`ReplayError` (an :class:`IllegalMove`) naming the index of the first
    illegal move.

    >>> replay("foursquare", [(0, 0), (0, 1)]).face_down
    1
    """
    game = Game.new(seed, rules)
    for index, move in enumerate(moves):
        try:
            game.play(move)
        except IllegalMove as error:
            raise ReplayError(index, move, str(error), game) from None
    return game


class ReplayError(IllegalMove):
    """A replayed move list holds an illegal move.

    ``index`` counts from 0; ``game`` is the position just before the illegal move.
    """

    def __init__(self, index: int, move: Position, reason: str, game: Game):
        super().__init__(f"move {index + 1} {move}: {reason}")
        self.index = index
        self.move = move
        self.reason = reason
        self.game = game

