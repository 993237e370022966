"""Whole games from the engine's conformance data, so tests can play known wins and losses."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from engine import Position

_GAMES = Path(__file__).resolve().parent.parent / "conformance" / "games.json"


@cache
def conformance_game(seed: str) -> tuple[str, tuple[Position, ...]]:
    """The recorded result (``won``/``lost``) and moves of the conformance game for ``seed``."""
    for game in json.loads(_GAMES.read_text())["games"]:
        if game["seed"] == seed:
            moves = tuple((step["move"][0], step["move"][1]) for step in game["steps"])
            return game["result"], moves
    raise KeyError(seed)


#: A seed whose recorded game is won with 2 cards left, and one that is lost.
WON_SEED = "vector-5"
LOST_SEED = "vector-0"
