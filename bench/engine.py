"""Engine speed: random play with :class:`engine.Game` beside the naive reference engine.

Both engines play the same random games (same seeds, same move choices) in the same run,
so the ratio survives a noisy, shared machine. Each figure is the median of ``--repeats``
rounds. A second measure times what a search does at every node: ``copy()`` then ``play``.

Run: ``python -m bench.engine [--games N] [--repeats R] [--write]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from bench.report import machine_line, markdown_table, update_section
from engine import Game
from engine.reference import ReferenceGame


def play_engine(seeds: list[str]) -> int:
    """Random games on the real engine; returns the number of moves made."""
    moves = 0
    for seed in seeds:
        chooser = random.Random(seed)
        game = Game.new(seed)
        while not game.is_over():
            game.play(chooser.choice(game.legal_moves()))
            moves += 1
    return moves


def play_reference(seeds: list[str]) -> int:
    """The same random games on the naive reference engine."""
    moves = 0
    for seed in seeds:
        chooser = random.Random(seed)
        game = ReferenceGame(list(Game.new(seed).stock))
        while game.status == "playing":
            game = game.play(chooser.choice(game.legal_moves()))
            moves += 1
    return moves


def search_nodes(seeds: list[str]) -> int:
    """Expand every legal move of every position of each game (copy + play): search's inner loop."""
    nodes = 0
    for seed in seeds:
        chooser = random.Random(seed)
        game = Game.new(seed)
        while not game.is_over():
            moves = game.legal_moves()
            for move in moves:
                game.copy().play(move)
                nodes += 1
            game.play(chooser.choice(moves))
    return nodes


def measure(run: Callable[[list[str]], int], seeds: list[str], repeats: int) -> tuple[float, int]:
    """Median units per second over ``repeats`` runs, and the unit count of one run."""
    rates = []
    count = 0
    for _ in range(repeats):
        start = time.perf_counter()
        count = run(seeds)
        rates.append(count / (time.perf_counter() - start))
    return statistics.median(rates), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=300, help="random games per round")
    parser.add_argument("--repeats", type=int, default=5, help="rounds; the median is reported")
    parser.add_argument("--write", action="store_true", help="update docs/performance.md")
    args = parser.parse_args()

    seeds = [f"bench-{i}" for i in range(args.games)]
    engine_rate, moves = measure(play_engine, seeds, args.repeats)
    reference_rate, reference_moves = measure(play_reference, seeds, args.repeats)
    node_rate, _ = measure(search_nodes, seeds[: max(1, args.games // 5)], args.repeats)
    assert moves == reference_moves, "the two engines played different games"
    games_per_move = args.games / moves

    rows = [
        ["engine (`engine.Game`)", f"{engine_rate:,.0f}", f"{engine_rate * games_per_move:,.0f}"],
        [
            "naive reference (`engine.reference`)",
            f"{reference_rate:,.0f}",
            f"{reference_rate * games_per_move:,.0f}",
        ],
        ["ratio", f"{engine_rate / reference_rate:.1f}x", ""],
    ]
    command = f"python -m bench.engine --games {args.games} --repeats {args.repeats}"
    table = markdown_table(["random play", "moves/s", "games/s"], rows)
    report = (
        f"{table}\n\nSearch inner loop (`copy()` + `play()` per legal move): "
        f"{node_rate:,.0f} nodes/s.\n\n"
        f"{args.games} random games ({moves:,} moves) per round, median of {args.repeats} "
        f"rounds. Command: `{command}` ({machine_line()})."
    )
    print(report)
    if args.write:
        update_section("engine", report)


if __name__ == "__main__":
    main()
