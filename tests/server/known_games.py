"""Whole games from the engine's conformance data, so tests can play known wins and losses."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from engine import Adjacency, Position, Ruleset

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


def hopeless_rules(pile_capacity: int = 2, grid_size: int = 5) -> Ruleset:
    """Rules under which no deal is won and a search for a winning line takes its whole
    budget: no face-down card is allowed, and diagonal neighbours widen the search.
    Each ``pile_capacity`` from 2 to 10 (and grid sizes 5 and 6) gives another ruleset."""
    return Ruleset(
        grid_size=grid_size, pile_capacity=pile_capacity, face_down_limit=0,
        adjacency=Adjacency.ANY,
    )


#: The rules an attacker used to freeze the server: a search for a winnable deal never ends.
HOPELESS = hopeless_rules()
