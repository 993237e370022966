"""Deal analysis: ``par`` (the best score with the whole stock known) and ``seeds``."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from cli.game_commands import add_ruleset_arguments, ruleset_from, seed_text
from engine import Ruleset, format_moves
from engine.solver import NoWinnableSeed, Par, par, random_seed, winnable_seed

Subparsers = Any  # argparse's _SubParsersAction is private


def register(subparsers: Subparsers) -> None:
    """Add ``par`` and ``seeds`` to the ``foursquare`` command."""
    par_parser = subparsers.add_parser(
        "par", help="solve a deal with the whole stock known: its best score and a line"
    )
    par_parser.add_argument("seed", type=seed_text, help="the seed of the deal")
    par_parser.add_argument(
        "--budget", type=_positive_seconds, default=10.0, metavar="S",
        help="seconds to search before reporting the best line found (default 10)",
    )
    add_ruleset_arguments(par_parser)
    par_parser.set_defaults(run=run_par)

    seeds_parser = subparsers.add_parser(
        "seeds", help="print fresh seeds (128 random bits each), one a line"
    )
    seeds_parser.add_argument("-n", type=int, default=1, metavar="N", help="how many (default 1)")
    seeds_parser.add_argument(
        "--winnable", action="store_true",
        help="keep only seeds with a winning line found and replayed",
    )
    seeds_parser.add_argument(
        "--budget", type=_positive_seconds, default=1.0, metavar="S",
        help="with --winnable: seconds to look for a win on each seed (default 1)",
    )
    seeds_parser.add_argument(
        "--lines", action="store_true",
        help="with --winnable: print each seed's score and winning line after it",
    )
    add_ruleset_arguments(seeds_parser)
    seeds_parser.set_defaults(run=run_seeds)


def _positive_seconds(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a budget is a positive number of seconds, not {text}")
    return value


def _ruleset_or_complain(args: argparse.Namespace) -> Ruleset | None:
    """The ruleset from the options, or ``None`` after saying on stderr what is wrong."""
    try:
        return ruleset_from(args)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return None


def describe_par(result: Par) -> str:
    """The solver's verdict in words, e.g. ``par 24 (proven)``."""
    if result.score is None:
        return "unwinnable (proven)" if result.proven else "no winning line found in the budget"
    if result.proven:
        return f"par {result.score} (proven)"
    if result.at_most is not None and result.at_most > result.score:
        return (
            f"par {result.score} to {result.at_most} (the budget ran out before a proof; "
            f"no line beats {result.at_most})"
        )
    return f"par at least {result.score} (the budget ran out before a proof)"


def run_par(args: argparse.Namespace) -> int:
    """Solve the deal and print the verdict, the line and the search's size."""
    rules = _ruleset_or_complain(args)
    if rules is None:
        return 2
    result = par(args.seed, rules, args.budget)
    print(describe_par(result))
    if result.moves:
        print(f"cards used: {len(result.moves)}")
        print("line:", format_moves(result.moves))
    print(f"searched {result.nodes} positions in {result.seconds:.2f} s")
    return 0


def run_seeds(args: argparse.Namespace) -> int:
    """Print ``-n`` seeds; with ``--winnable`` only seeds shown winnable."""
    rules = _ruleset_or_complain(args)
    if rules is None:
        return 2
    if args.n < 0:
        print("error: -n cannot be negative", file=sys.stderr)
        return 2
    for _ in range(args.n):
        if not args.winnable:
            print(random_seed())
            continue
        try:
            found = winnable_seed(rules=rules, budget=args.budget)
        except NoWinnableSeed as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        if args.lines:
            print(found.seed, found.score, format_moves(found.line), sep="\t")
        else:
            print(found.seed)
    return 0
