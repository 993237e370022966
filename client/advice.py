"""The hint key's advice: what the default bot would play in the racer's place.

The bots know only what a racer knows, so asking them never leaks the stock's order.
"""

from __future__ import annotations

from client.bots import DEFAULT_STRATEGY, RacerView, get_strategy
from engine import Game, Position


def suggest(game: Game) -> Position | None:
    """The default strategy's move for ``game``, or ``None`` when the game is over."""
    if game.card is None:
        return None
    return get_strategy(DEFAULT_STRATEGY).choose(RacerView.from_game(game))
