"""What a board looks like to the person watching it: the display model of every screen.

A :class:`BoardView` is built from a local :class:`~engine.Game` (solo play, or the
racer's own mirror of a network race) or from a spectator's board, where the fog hides
the faces of face-down cards. Widgets draw a ``BoardView`` and never touch a game.

>>> from engine import Game
>>> game = Game.new("foursquare")
>>> _ = game.play((0, 0))
>>> view = BoardView.from_game(game)
>>> str(view.card), view.targets, view.piles[(0, 0)].height
('3S', ((-1, 0), (0, -1), (0, 0), (0, 1), (1, 0)), 1)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from engine import DECK, Card, Game, Position, Ruleset, Status


@dataclass(frozen=True, slots=True)
class PileView:
    """A pile as the viewer may see it; ``top`` is ``None`` when its face is hidden."""

    top: Card | None
    face_up: bool
    height: int


@dataclass(frozen=True, slots=True)
class BoardView:
    """One racer's board: the piles, the card in hand and where it may go."""

    rules: Ruleset
    piles: Mapping[Position, PileView] = field(default_factory=dict)
    card: Card | None = None
    targets: tuple[Position, ...] = ()
    stock_left: int = len(DECK)
    face_down: int = 0
    cards_played: int = 0
    status: Status = Status.PLAYING
    score: int | None = None
    fogged: int = 0
    """Cards the racer has placed that the fog still hides from the viewer: where they
    lie is not known, so no empty spot of this board can be said to be empty."""

    @classmethod
    def from_game(cls, game: Game, stock_left: int | None = None) -> BoardView:
        """The board of ``game``; ``stock_left`` overrides the game's own count.

        The override serves a racer's mirror game, which holds only the cards seen so far.
        """
        piles = {
            position: PileView(pile.top, pile.face_up, pile.height)
            for position, pile in game.piles.items()
        }
        return cls(
            rules=game.rules,
            piles=piles,
            card=game.card,
            targets=tuple(game.legal_moves()),
            stock_left=game.stock_left if stock_left is None else stock_left,
            face_down=game.face_down,
            cards_played=game.cards_played,
            status=game.status,
            score=game.score,
        )

    def window(self) -> tuple[range, range]:
        """The rows and columns worth drawing: every pile and every legal target.

        The grid floats, so the window grows and shifts as play goes on; it never
        exceeds ``grid_size + 1`` either way, because targets must fit the box.
        """
        spots = [*self.piles, *self.targets] or [(0, 0)]
        rows = [row for row, _ in spots]
        cols = [col for _, col in spots]
        return range(min(rows), max(rows) + 1), range(min(cols), max(cols) + 1)
