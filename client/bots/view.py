"""What a racer knows, and nothing more: the ruleset, the cards drawn so far, its moves.

A bot is handed a :class:`RacerView`, never a :class:`~engine.Game`: a game holds the
whole stock, and a racer may not see the cards still to come.

>>> from engine import Game
>>> game = Game.new("foursquare")
>>> view = RacerView.from_game(game)
>>> str(view.card), view.moves, view.legal_moves()
('4S', (), [(0, 0)])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine import DECK, Card, Game, Position, Ruleset
from engine.board import Board

#: How many cards of each rank the deck holds (index 0 unused).
RANKS = range(1, 11)


@dataclass(frozen=True, slots=True)
class RacerView:
    """The racer's knowledge at the moment it must place ``cards[-1]``.

    ``cards`` are the cards drawn so far in order (the last one is in hand); ``moves``
    are the positions where the earlier ones went, so ``len(moves) == len(cards) - 1``.
    """

    rules: Ruleset
    cards: tuple[Card, ...]
    moves: tuple[Position, ...]

    def __post_init__(self) -> None:
        if len(self.cards) != len(self.moves) + 1:
            raise ValueError("a racer view holds one more card drawn than moves made")
        if len(set(self.cards)) != len(self.cards):
            raise ValueError("the same card was drawn twice")

    @classmethod
    def from_game(cls, game: Game) -> RacerView:
        """The view of the racer playing ``game`` now; only drawn cards are copied."""
        card = game.card
        if card is None:
            raise ValueError("the game is over: there is no card to place")
        drawn = game.stock[: game.cards_played]
        return cls(game.rules, (*drawn, card), tuple(game.moves))

    @classmethod
    def from_wire(
        cls, rules: Ruleset, cards: Iterable[int | Card], moves: Iterable[Sequence[int]]
    ) -> RacerView:
        """A view from wire data: card ids (or cards) drawn so far, and the racer's moves.

        Raises ``ValueError`` on malformed data (a card id out of range, a move that is
        not a pair); :meth:`board` raises it for moves the rules do not allow.
        """
        parsed_moves = []
        for move in moves:
            if len(move) != 2:
                raise ValueError(f"a move is a (row, col) pair, not {move!r}")
            parsed_moves.append((int(move[0]), int(move[1])))
        return cls(
            rules,
            tuple(card if isinstance(card, Card) else Card.from_id(card) for card in cards),
            tuple(parsed_moves),
        )

    @property
    def card(self) -> Card:
        """The card to place now."""
        return self.cards[-1]

    def board(self) -> Board:
        """A search board after the racer's moves, the card in hand not yet placed.

        Raises ``ValueError`` if the moves are not a legal game for these cards.
        """
        return Board.replayed(self.rules, (card.rank for card in self.cards[:-1]), self.moves)

    def legal_moves(self) -> list[Position]:
        """Where the card in hand may go, sorted like :meth:`Game.legal_moves`."""
        board = self.board()
        return [board.position(cell) for cell in board.targets()]

    def unseen_ranks(self) -> list[int]:
        """How many cards of each rank are still in the stock: index ``rank`` (1..10).

        The racer has seen every drawn card, so the rest of the deck is what may come.
        """
        counts = [0] + [0] * len(RANKS)
        for card in DECK:
            counts[card.rank] += 1
        for card in self.cards:
            counts[card.rank] -= 1
        return counts

    def stock_left(self) -> int:
        """Cards still in the stock after the one in hand."""
        return len(DECK) - len(self.cards)
