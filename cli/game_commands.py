"""Offline commands on the engine alone: ``deal``, ``replay`` and the line-mode ``solo``."""

from __future__ import annotations

import argparse
import secrets
import string
import sys
from collections.abc import Callable
from typing import Any, TextIO

from engine import (
    Adjacency,
    Flipped,
    Game,
    GameOver,
    IllegalMove,
    Position,
    ReplayError,
    Ruleset,
    Status,
    commitment,
    deal,
    format_move,
    format_moves,
    parse_move,
    replay,
)

Subparsers = Any  # argparse's _SubParsersAction is private


def register(subparsers: Subparsers) -> None:
    """Add ``deal``, ``replay`` and ``solo`` to the ``foursquare`` command."""
    deal_parser = subparsers.add_parser(
        "deal", help="print the stock dealt from a seed, and the seed's commitment"
    )
    deal_parser.add_argument(
        "seed", type=seed_text, help="any text; the same seed always deals the same stock"
    )
    deal_parser.set_defaults(run=run_deal)

    replay_parser = subparsers.add_parser(
        "replay", help="replay moves from a seed and print the final position and result"
    )
    replay_parser.add_argument("seed", type=seed_text)
    replay_parser.add_argument("moves", nargs="*", metavar="MOVE", help="moves like r0c0 r-1c0")
    add_ruleset_arguments(replay_parser)
    replay_parser.set_defaults(run=run_replay)

    solo_parser = subparsers.add_parser("solo", help="play a game on your own, offline")
    solo_parser.add_argument(
        "--seed", type=seed_text, help="the seed to deal from (default: a random one)"
    )
    solo_parser.add_argument(
        "--lines", action="store_true", help="use the plain line interface, not the full screen"
    )
    add_ruleset_arguments(solo_parser)
    solo_parser.set_defaults(run=run_solo)


def seed_text(argument: str) -> str:
    """A seed from the command line: any text, but text. A seed is dealt from its UTF-8
    bytes, and an argument that is not UTF-8 (Python keeps its bytes as lone surrogates)
    has none."""
    try:
        argument.encode("utf-8")
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(
            "a seed is text, and this one holds bytes that are not UTF-8"
        ) from None
    return argument


def add_ruleset_arguments(parser: argparse.ArgumentParser) -> None:
    """The ruleset options shared by every command that plays a game."""
    default = Ruleset()
    group = parser.add_argument_group("ruleset (defaults are the published game)")
    group.add_argument("--grid-size", type=int, default=default.grid_size)
    group.add_argument("--pile-capacity", type=int, default=default.pile_capacity)
    group.add_argument("--face-down-limit", type=int, default=default.face_down_limit)
    group.add_argument(
        "--adjacency", choices=[a.value for a in Adjacency], default=default.adjacency.value
    )


def ruleset_from(args: argparse.Namespace) -> Ruleset:
    """The ruleset given by :func:`add_ruleset_arguments` options."""
    return Ruleset(
        grid_size=args.grid_size,
        pile_capacity=args.pile_capacity,
        face_down_limit=args.face_down_limit,
        adjacency=Adjacency(args.adjacency),
    )


def run_deal(args: argparse.Namespace) -> int:
    """Print the stock, top first, and the commitment."""
    stock = deal(args.seed)
    print("stock:", " ".join(map(str, stock)))
    print("commitment:", commitment(args.seed))
    return 0


def run_replay(args: argparse.Namespace) -> int:
    """Replay the moves; report an illegal move by its number and exit non-zero."""
    try:
        rules = ruleset_from(args)
        moves = [parse_move(text) for text in args.moves]
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        game = replay(args.seed, moves, rules)
    except ReplayError as error:
        print(
            f"illegal move {error.index + 1} ({format_move(error.move)}): {error.reason}",
            file=sys.stderr,
        )
        print(render_grid(error.game), file=sys.stderr)
        return 1
    print(render_grid(game))
    print("position:", game.notation())
    print("result:", describe_result(game))
    return 0


def describe_result(game: Game) -> str:
    """One line on how the game stands, for people."""
    from client.wording import plural

    if game.status is Status.WON:
        return f"won with {plural(game.score or 0, 'card')} left in the stock (score {game.score})"
    if game.status is Status.LOST:
        reason = game.loss_reason.sentence if game.loss_reason else "lost"
        return f"lost: {reason}"
    return (
        f"playing: {plural(game.cards_played, 'card')} placed, {game.stock_left} left in the stock"
    )


def render_grid(game: Game, labels: dict[Position, str] | None = None) -> str:
    """The grid as text: ``8Hx2`` is a face-up 8H on a pile of two, ``##x1`` face down.

    Shows every position a card could still reach, so the floating box is visible.
    """
    labels = labels or {}
    piles = game.piles
    spots = list(piles) + list(labels)
    if not spots:
        return "  (empty grid: the first card goes at r0c0)"
    rows = [r for r, _ in spots]
    cols = [c for _, c in spots]
    col_range = range(min(cols), max(cols) + 1)
    lines = ["      " + "".join(f"c{col}".ljust(6) for col in col_range)]
    for row in range(min(rows), max(rows) + 1):
        cells = []
        for col in col_range:
            pile = piles.get((row, col))
            label = labels.get((row, col), "")
            if pile is None:
                cells.append(f"[{label}]" if label else " .")
            else:
                face = str(pile.top) if pile.face_up else "##"
                cells.append(f"{face}x{pile.height}" + (f"[{label}]" if label else ""))
        lines.append(f"r{row}".ljust(6) + "".join(cell.ljust(6) for cell in cells).rstrip())
    return "\n".join(lines)


def run_solo(args: argparse.Namespace) -> int:
    """Play offline. The full-screen client takes over when available and not ``--lines``."""
    try:
        rules = ruleset_from(args)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not args.lines:
        from cli.client_commands import run_solo_screen

        return run_solo_screen(args.seed, rules)
    seed = args.seed if args.seed is not None else secrets.token_hex(16)
    return play_lines(Game.new(seed, rules), input, sys.stdout)


_HELP = """\
Place each card drawn from the stock on the grid. Type the letter of a target shown in
[brackets], or a position such as r0c1 (row, column; the first card is at r0c0).
A card may go on a pile of fewer than {capacity} cards, or on an empty spot next to a pile,
as long as everything fits in a {size}x{size} box.
After a card is placed, its row is checked: if it is higher than every face-up card in the
row, or lower than every one (or there are none), every other card in the row flips over.
Then the same for its column. More than {limit} face-down cards loses; {piles} face-up piles
wins, and the score is the number of cards left in the stock.
Commands: help, moves (the moves so far), quit."""


def play_lines(game: Game, read: Callable[[str], str], out: TextIO) -> int:
    """The plain line interface: show the grid, read a move, say what happened."""
    rules = game.rules
    print(f"Foursquare, seed {game.seed!r}. Type 'help' for the rules.", file=out)
    while game.card is not None:
        targets = game.legal_moves()
        labels = dict(zip(targets, string.ascii_lowercase, strict=False))
        print("", render_grid(game, labels), sep="\n", file=out)
        print(
            f"Card: {game.card}   stock left: {game.stock_left}   "
            f"face down: {game.face_down} of {rules.face_down_limit}",
            file=out,
        )
        try:
            answer = read("Place it where? ").strip()
        except EOFError:
            answer = "quit"
        by_letter = {letter: pos for pos, letter in labels.items()}
        if answer in ("quit", "q", "exit"):
            print("Bye. Moves:", format_moves(game.moves), file=out)
            return 0
        if answer in ("help", "h", "?"):
            print(_HELP.format(capacity=rules.pile_capacity, size=rules.grid_size,
                               limit=rules.face_down_limit, piles=rules.grid_size**2), file=out)
            continue
        if answer == "moves":
            print(format_moves(game.moves) or "(none yet)", file=out)
            continue
        try:
            move = by_letter[answer] if answer in by_letter else parse_move(answer)
            events = game.play(move)
        except (ValueError, IllegalMove) as error:
            print(f"Not there: {error}.", file=out)
            continue
        flips = [e for e in events if isinstance(e, Flipped)]
        if flips:
            turned = ", ".join(
                f"{format_move(f.position)} {'up' if f.face_up else 'down'}" for f in flips
            )
            print(f"Flipped: {turned}", file=out)
        for event in events:
            if isinstance(event, GameOver):
                print("", render_grid(game), sep="\n", file=out)
                print(describe_result(game).capitalize() + ".", file=out)
    print("Moves:", format_moves(game.moves), file=out)
    print(f"Seed: {game.seed}  (replay with: foursquare replay {game.seed} ...)", file=out)
    return 0
