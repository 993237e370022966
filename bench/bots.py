"""Bots: win rate, mean score and time per move over seeded deals, and the gap to par.

Every strategy plays the same deals (seeds ``bots-F``, ``bots-F+1``, ... from ``--first``
F, 0 by default) through the real
engine, seeing only a :class:`~client.bots.RacerView`. Losses score 0 in the mean. The
gap to par compares the mean score with the mean par of the same deals (par found with
the whole stock known, within ``--par-budget``; an unproven par is a lower bound).

``one-ply`` is greedy checking no placement one card further (plain one ply), the
baseline the look-ahead of ``greedy`` is measured against in the same run. Moves are
timed in this process's CPU time and in wall time; expectimax's per-move budget is CPU
time unless ``--wall`` is given (on a shared machine, wall time also counts the other
processes' turns on the cores, and the bot would search less when the machine is busy).

Run: ``python -m bench.bots [--games N] [--strong-games N] [--budget S] [--strategies LIST]
[--wall] [--write]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, field

from bench.report import machine_line, markdown_table, update_section
from client.bots import RacerView, Strategy, get_strategy
from engine import Game, deal
from engine.solver import Par, solve


@dataclass
class Record:
    """One strategy's results."""

    name: str
    games: int = 0
    wins: int = 0
    score_total: int = 0
    moves: int = 0
    seconds: float = 0.0
    """Wall time spent choosing moves."""
    cpu_seconds: float = 0.0
    """This process's CPU time spent choosing moves: what a move costs, whatever else
    the machine runs (wall time on a shared machine also counts the others' turns)."""
    slowest_move: float = 0.0
    gaps: list[int] = field(default_factory=list)
    """For each deal won: its par less the score (a par not proven counts as at least
    the bot's score)."""

    def play(self, bot: Strategy, seed: str, deal_par: Par) -> int:
        """Play one deal; returns the score (0 for a loss)."""
        game = Game.new(seed)
        while not game.is_over():
            view = RacerView.from_game(game)
            start, cpu_start = time.perf_counter(), time.process_time()
            move = bot.choose(view)
            spent = time.perf_counter() - start
            self.cpu_seconds += time.process_time() - cpu_start
            self.seconds += spent
            self.slowest_move = max(self.slowest_move, spent)
            self.moves += 1
            game.play(move)
        score = game.score or 0
        self.games += 1
        self.wins += game.score is not None
        self.score_total += score
        if game.score is not None:
            self.gaps.append(max(deal_par.score or 0, score) - score)
        return score

    def row(self, mean_par: float | None) -> list[str]:
        mean = self.score_total / self.games
        gap = f"{mean_par - mean:.2f}" if mean_par is not None else ""
        return [
            f"`{self.name}`",
            str(self.games),
            f"{self.wins / self.games:.1%}",
            f"{mean:.2f}",
            gap,
            f"{statistics.mean(self.gaps):.2f}" if self.gaps else "",
            f"{self.cpu_seconds / self.moves * 1000:.2f}",
            f"{self.seconds / self.moves * 1000:.2f}",
            f"{self.slowest_move * 1000:.0f}",
        ]


def mean_par(pars: list[Par]) -> float | None:
    """The mean par of ``pars`` (an unproven par counts as its lower bound), if any."""
    return statistics.mean(p.score or 0 for p in pars) if pars else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=1000, help="deals for random and greedy")
    parser.add_argument(
        "--strong-games", type=int, default=1000, help="deals for expectimax (the slow one)"
    )
    parser.add_argument(
        "--budget", type=float, default=0.25, help="expectimax seconds per move at most"
    )
    parser.add_argument(
        "--par-budget", type=float, default=0.5, help="solver seconds per deal for the gap to par"
    )
    parser.add_argument(
        "--strategies",
        default="random,one-ply,greedy,expectimax",
        help="which to run, comma-separated (one-ply: greedy checking no move further, the "
        "baseline greedy is measured against)",
    )
    parser.add_argument(
        "--wall", action="store_true", help="expectimax's budget in wall time, not CPU time"
    )
    parser.add_argument(
        "--first", type=int, default=0, help="the first deal's number (seeds bots-FIRST on)"
    )
    parser.add_argument(
        "--progress", type=int, default=0, help="print the figures so far every N deals"
    )
    parser.add_argument("--write", action="store_true", help="update docs/performance.md")
    args = parser.parse_args()

    chosen = args.strategies.split(",")
    clock = time.perf_counter if args.wall else time.process_time
    plans: list[tuple[str, Strategy, int]] = [
        (label, get_strategy(name, **options), games)
        for label, name, options, games in (
            ("random", "random", {"seed": 1}, args.games),
            ("one-ply", "greedy", {"seed": 1, "checked": 1}, args.games),
            ("greedy", "greedy", {"seed": 1}, args.games),
            (
                "expectimax",
                "expectimax",
                {"budget": args.budget, "seed": 1, "clock": clock},
                args.strong_games,
            ),
        )
        if label in chosen
    ]
    most = max(games for _, _, games in plans)
    seeds = [f"bots-{args.first + i}" for i in range(most)]
    records = [Record(label) for label, _, _ in plans]
    pars: list[Par] = []
    # Deal by deal, every strategy on it in turn: a run stopped early has its figures on
    # the same deals for all of them (printed every --progress deals).
    for number, seed in enumerate(seeds, 1):
        pars.append(solve(deal(seed), budget=args.par_budget, clock=time.process_time))
        for record, (_, bot, games) in zip(records, plans, strict=True):
            if number <= games:
                record.play(bot, seed, pars[-1])
        if args.progress and number % args.progress == 0 and number < most:
            for record in records:
                print(number, record.row(mean_par(pars[: record.games])), flush=True)
    rows = [record.row(mean_par(pars[: record.games])) for record in records]
    for row in rows:
        print(row, flush=True)
    header = [
        "strategy", "deals", "wins", "mean score", "gap to par", "gap on won deals",
        "CPU ms/move", "wall ms/move", "slowest wall ms",
    ]
    proven = sum(p.proven for p in pars)
    command = (
        f"python -m bench.bots --games {args.games} --strong-games {args.strong_games} "
        f"--budget {args.budget:g} --par-budget {args.par_budget:g} --strategies {args.strategies}"
        f"{f' --first {args.first}' if args.first else ''}{' --wall' if args.wall else ''}"
    )
    text = (
        f"{markdown_table(header, rows)}\n\n"
        f"Mean par of the {most} deals (`{seeds[0]}` to `{seeds[-1]}`): "
        f"{statistics.mean(p.score or 0 for p in pars):.2f} ({proven} of {most} proven within "
        f"{args.par_budget:g} s of CPU time; the rest are lower bounds, so the gaps are if "
        f"anything understated). The gap on won deals is the mean of par less score over the "
        f"deals the bot won. Expectimax budget {args.budget:g} s of "
        f"{'wall' if args.wall else 'CPU'} time per move. Command: `{command}` "
        f"({machine_line()})."
    )
    print(text)
    if args.write:
        update_section("bots", text)


if __name__ == "__main__":
    main()
