"""The hint key's advice: what the default bot would play in the racer's place.

The bots know only what a racer knows, so asking them never leaks the stock's order.
"""

from __future__ import annotations

import importlib
from typing import Any

from engine import Game, Position


def _bots() -> Any | None:
    """The bots package, or ``None`` in a build that does not ship it."""
    try:
        return importlib.import_module("client.bots")
    except ImportError:
        return None


def suggest(game: Game) -> Position | None:
    """The default strategy's move for ``game``, or ``None`` when there is none to give."""
    bots = _bots()
    if bots is None or game.card is None:
        return None
    strategy = bots.get_strategy(bots.DEFAULT_STRATEGY)
    row, col = strategy.choose(bots.RacerView.from_game(game))
    return int(row), int(col)
