"""Bots: strategies that play Foursquare from a racer's view, with no sight of the stock.

A strategy has a ``name`` and ``choose(view) -> (row, col)``; it is given a
:class:`RacerView` (the ruleset, the cards drawn so far, its own moves) and nothing else.
``foursquare bot``, the hint key in ``solo`` and the demo all pick one by name here.

>>> from engine import Game
>>> game = Game.new("foursquare")
>>> bot = get_strategy("greedy")
>>> while not game.is_over():
...     _ = game.play(bot.choose(RacerView.from_game(game)))
>>> game.status.value in ("won", "lost")
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from client.bots.expectimax import ExpectimaxStrategy
from client.bots.strategies import GreedyStrategy, RandomStrategy
from client.bots.view import RacerView
from engine import Position


class Strategy(Protocol):
    """A way of playing: picks a legal move from what a racer can see."""

    name: str

    def choose(self, view: RacerView) -> Position:
        """The position to place ``view.card`` on; always one of ``view.legal_moves()``."""
        ...


#: Every strategy by name, mapped to a factory taking the strategy's own options.
STRATEGIES: dict[str, Callable[..., Strategy]] = {
    "random": RandomStrategy,
    "greedy": GreedyStrategy,
    "expectimax": ExpectimaxStrategy,
}

#: The strongest strategy: the default for ``foursquare bot``, hints and the demo.
DEFAULT_STRATEGY = "expectimax"


def get_strategy(name: str = DEFAULT_STRATEGY, **options: Any) -> Strategy:
    """A new strategy by name, e.g. ``get_strategy("expectimax", budget=0.05)``.

    Raises ``ValueError`` naming the known strategies if ``name`` is not one of them.
    """
    try:
        factory = STRATEGIES[name]
    except KeyError:
        known = ", ".join(sorted(STRATEGIES))
        raise ValueError(f"unknown strategy {name!r}: choose one of {known}") from None
    return factory(**options)


__all__ = [
    "DEFAULT_STRATEGY",
    "STRATEGIES",
    "ExpectimaxStrategy",
    "GreedyStrategy",
    "RacerView",
    "RandomStrategy",
    "Strategy",
    "get_strategy",
]
