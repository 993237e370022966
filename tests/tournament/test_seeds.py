"""Winnable seeds for tournaments: found ahead of time, each one really winnable."""

from __future__ import annotations

import itertools

from engine import Game, Ruleset, deal
from engine.solver import solve
from server.tournament_host import WinnableSeeds


def test_winnable_seeds_are_seeds_the_solver_wins() -> None:
    counter = itertools.count()
    seeds = WinnableSeeds(lambda: f"candidate-{next(counter)}", Ruleset(), ready=2)
    for _ in range(2):
        seed = seeds()
        line = solve(deal(seed), budget=10.0, prove=False)
        game = Game.new(seed)
        for move in line.moves:
            game.play(move)
        assert game.status.value == "won"
