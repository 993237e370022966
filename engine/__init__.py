"""The rules of Foursquare, as a pure library: no I/O, deterministic, fast enough for search.

>>> from engine import Game
>>> game = Game.new("my seed")
>>> game.play(game.legal_moves()[0])[0].position
(0, 0)
"""

from engine.cards import DECK, Card, commitment, deal
from engine.game import (
    Event,
    Flipped,
    Game,
    GameOver,
    IllegalMove,
    LossReason,
    Pile,
    Placed,
    Position,
    ReplayError,
    Status,
    replay,
)
from engine.notation import format_move, format_moves, parse_move, parse_moves
from engine.rules import Adjacency, Ruleset

__all__ = [
    "DECK",
    "Adjacency",
    "Card",
    "Event",
    "Flipped",
    "Game",
    "GameOver",
    "IllegalMove",
    "LossReason",
    "Pile",
    "Placed",
    "Position",
    "ReplayError",
    "Ruleset",
    "Status",
    "commitment",
    "deal",
    "format_move",
    "format_moves",
    "parse_move",
    "parse_moves",
    "replay",
]
