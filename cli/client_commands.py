"""The full-screen client's commands: ``play``, ``watch`` and ``bot``; and the ``solo`` screen.

Textual and websockets are imported inside the run functions so that ``foursquare --help``
and the offline commands stay quick to start.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import Ruleset

if TYPE_CHECKING:
    from client.app import FoursquareApp

Subparsers = Any  # argparse's _SubParsersAction is private

DEFAULT_SERVER = "ws://127.0.0.1:8765"


def register(subparsers: Subparsers) -> None:
    """Add ``play``, ``watch`` and ``bot`` to the ``foursquare`` command."""
    play = subparsers.add_parser("play", help="race other players on a server (full screen)")
    _add_server_argument(play)
    play.add_argument("--name", help="your name in races (default: your login name)")
    play.add_argument(
        "--guest", action="store_true",
        help="play as a guest even if this machine has a player key for the server",
    )
    start = play.add_mutually_exclusive_group()
    start.add_argument("--quick", action="store_true", help="join a public race at once")
    start.add_argument("--daily", action="store_true",
                       help="race today's daily deal (once a day: see foursquare daily)")
    start.add_argument("--race", metavar="CODE", help="join the race with this code")
    start.add_argument("--create", action="store_true", help="open a private race")
    start.add_argument(
        "--tournament", metavar="CODE", type=tournament_code,
        help="enter the tournament with this join code",
    )
    play.set_defaults(run=run_play)

    watch = subparsers.add_parser(
        "watch", help="watch a race (a finished one again, move by move): every board and "
        "the leaderboard",
    )
    _add_server_argument(watch)
    what = watch.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "code", metavar="CODE", nargs="?",
        help="the race's code; a finished race (by its id) is replayed from its result",
    )
    what.add_argument(
        "--tournament", metavar="TCODE", type=tournament_code,
        help="watch a tournament: standings and its races",
    )
    what.add_argument(
        "--file", metavar="FILE", type=Path,
        help="replay a finished race offline from its result: what 'foursquare result' "
        "prints, or a 'finished' message saved as JSON",
    )
    watch.add_argument("--name", default="spectator", help="your name as a spectator")
    watch.set_defaults(run=run_watch)

    bot = subparsers.add_parser("bot", help="send bots to race on a server")
    _add_server_argument(bot)
    where = bot.add_mutually_exclusive_group(required=True)
    where.add_argument("--quick", action="store_true", help="join a public race")
    where.add_argument("--race", metavar="CODE", help="join the race with this code")
    where.add_argument(
        "--tournament", metavar="TCODE", type=tournament_code,
        help="enter a tournament and race until it ends",
    )
    from client.bots import DEFAULT_STRATEGY, STRATEGIES

    bot.add_argument(
        "--strategy", choices=sorted(STRATEGIES), default=DEFAULT_STRATEGY,
        help=f"how the bots play: {', '.join(sorted(STRATEGIES))} "
        f"(default {DEFAULT_STRATEGY}, the strongest)",
    )
    bot.add_argument("-n", type=int, default=1, metavar="N", help="how many bots (default 1)")
    bot.add_argument(
        "--pace", type=seconds_to_wait, default=0.5, metavar="SECONDS",
        help="seconds each bot waits before a move, so people can keep up (default 0.5)",
    )
    bot.set_defaults(run=run_bot)


class ServerAddresses(argparse.Action):
    """``--server``, repeated or comma-separated: every address given, in order, joined
    with commas (what :class:`client.connection.Connection` takes); the default stands
    only while none is given."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        given = [*getattr(namespace, f"{self.dest}_given", []), str(values)]
        setattr(namespace, f"{self.dest}_given", given)
        setattr(namespace, self.dest, ",".join(given))


def server_argument(parser: Any, what: str = "the server's address") -> None:
    """Add ``--server`` (repeatable) to ``parser`` (or to a group of exclusive options)."""
    parser.add_argument(
        "--server", default=DEFAULT_SERVER, action=ServerAddresses, metavar="URL",
        help=f"{what} (default {DEFAULT_SERVER}); the nodes of a cluster: repeat it or "
        "separate addresses with commas, and the next is tried when one cannot be reached",
    )


def _add_server_argument(parser: argparse.ArgumentParser) -> None:
    server_argument(parser)
    ca_file_argument(parser)


def ca_file_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--ca-file``: certificates to trust for a ``wss://`` server."""
    parser.add_argument(
        "--ca-file", metavar="FILE",
        help="for a wss:// server: a PEM file of certificates to trust besides the system's "
        "(a private CA, or the server's own self-signed certificate)",
    )


def _refuse_ca_file(args: argparse.Namespace) -> bool:
    """Say why ``--ca-file`` cannot be used before connecting; whether it cannot."""
    from client.connection import tls_options

    try:
        tls_options(args.server, args.ca_file)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return True
    return False


def seconds_to_wait(text: str) -> float:
    """A pause in seconds: a number, zero or more.

    >>> seconds_to_wait("0.25")
    0.25
    """
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"a pace is zero or more seconds, not {text}")
    return seconds


def tournament_code(text: str) -> str:
    """A join code as typed, upper-cased; refused before connecting if the protocol would
    refuse it (4 to 16 letters and digits, as ``protocol.tournament.TOURNAMENT_CODE``).

    >>> tournament_code("k7q2mx")
    'K7Q2MX'
    """
    code = text.strip().upper()
    if not (4 <= len(code) <= 16 and code.isascii() and code.isalnum()):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a tournament code: those are 4 to 16 letters and digits"
        )
    return code


def _name_to_send(typed: str) -> str | None:
    """``typed`` as the server will use it (:func:`client.wording.usable_name`); or, when
    the server would refuse it, ``None`` after saying why."""
    from client.wording import usable_name
    from protocol.names import BadName

    try:
        return usable_name(typed)
    except BadName as refusal:
        print(f"error: the name {refusal}", file=sys.stderr)
        return None


def _default_name() -> str:
    from protocol.names import MAX_NAME_LENGTH

    try:
        return getpass.getuser()[:MAX_NAME_LENGTH] or "player"
    except (KeyError, OSError):
        return "player"


def run_solo_screen(seed: str | None, rules: Ruleset) -> int:
    """Open the full-screen solo game; returns the exit status."""
    from client.app import FoursquareApp
    from client.screens.solo import SoloScreen

    app = FoursquareApp(lambda: SoloScreen(seed, rules))
    return app.run() or 0


def run_play(args: argparse.Namespace) -> int:
    """``foursquare play``: the lobby, or straight into a race (or back into the race the
    last run left)."""
    app = play_app(args)
    return 2 if app is None else app.run() or 0


def play_app(args: argparse.Namespace) -> FoursquareApp | None:
    """The app ``play`` runs, or ``None`` after saying why the name will not do.

    A session saved on this server while racing is resumed, so a racer who quit comes
    back to its race; unless ``--name`` names someone else.
    """
    from client.connection import Connection
    from client.network_app import NetworkApp, Plan
    from client.player_keys import KeyStore
    from client.saved_session import SessionStore

    name = _name_to_send(args.name if args.name is not None else _default_name())
    if name is None or _refuse_ca_file(args):
        return None
    if args.tournament:
        from client.tournament_app import TournamentApp

        connection = Connection(args.server, name, ca_file=args.ca_file)
        return TournamentApp(connection, args.tournament, playing=True)
    if args.quick:
        plan = Plan.quick()
    elif args.daily:
        plan = Plan.daily()
    elif args.race:
        plan = Plan.join(args.race)
    elif args.create:
        plan = Plan.create()
    else:
        plan = Plan()
    sessions = SessionStore.default()
    saved = sessions.load(args.server)
    if saved is not None and args.name is not None and saved.name != name:
        saved = None  # another player on this account: leave that race alone
    key = None if args.guest else KeyStore.default().load(args.server)
    if saved is not None:
        connection = Connection(args.server, saved.name, resume=saved.resume,
                                ca_file=args.ca_file)
    elif key is not None:  # the claimed player: its name, its rating
        connection = Connection(args.server, key.name, player_key=key.key, ca_file=args.ca_file)
    else:
        connection = Connection(args.server, name, ca_file=args.ca_file)
    return NetworkApp(connection, plan, sessions=sessions)


def run_watch(args: argparse.Namespace) -> int:
    """``foursquare watch CODE``, ``foursquare watch --tournament CODE`` and ``foursquare
    watch --file FILE``."""
    if args.file is not None:
        return run_replay_file(args.file)
    from client.connection import Connection
    from client.network_app import NetworkApp, Plan
    from client.tournament_app import TournamentApp
    from protocol import Role

    name = _name_to_send(args.name)
    if name is None or _refuse_ca_file(args):
        return 2
    connection = Connection(args.server, name, role=Role.SPECTATOR, ca_file=args.ca_file)
    if args.tournament:
        return TournamentApp(connection, args.tournament, playing=False).run() or 0
    return NetworkApp(connection, Plan.spectate(args.code)).run() or 0


def run_replay_file(path: Path) -> int:
    """Replay the race of the result in ``path``, with no server; exit 2 if there is none
    to replay."""
    app = replay_app(path)
    return 2 if app is None else app.run() or 0


def replay_app(path: Path) -> FoursquareApp | None:
    """The app replaying the result in ``path``; or ``None`` after saying why there is
    none to replay."""
    from cli.server_commands import read_result_file
    from client.app import FoursquareApp
    from client.replay import Replay, ReplayError
    from client.screens.replay import ReplayScreen

    if str(path) == "-":  # the screen reads its keys there
        print("error: watch --file needs a file, not standard input", file=sys.stderr)
        return None
    result = read_result_file(path)
    if result is None:
        return None
    try:
        replay = Replay(result)
    except ReplayError as error:
        print(f"error: race {result.race_id} cannot be replayed: {error}", file=sys.stderr)
        return None
    return FoursquareApp(lambda: ReplayScreen(replay))


def _say_now(line: str) -> None:
    """One line of a bot's report, out at once (a tournament can take an evening)."""
    print(line, flush=True)


def run_bot(args: argparse.Namespace) -> int:
    """``foursquare bot``: the bots play one race (or a whole tournament), printing a line
    as each race ends; in a tournament, where each finished too."""
    import asyncio

    from client.bot_runner import run_bots
    from protocol import JoinRace, QuickRace

    strategy = args.strategy
    if not 1 <= args.n <= 100:
        print("error: -n must be from 1 to 100", file=sys.stderr)
        return 2
    if _refuse_ca_file(args):
        return 2
    if args.tournament:
        from client.tournament_bot import run_tournament_bots

        entered = asyncio.run(run_tournament_bots(
            args.server, args.tournament, strategy, args.n, pace=args.pace,
            ca_file=args.ca_file, report=_say_now,
        ))
        for entry in entered:
            print(entry.describe())
        return 0 if all(entry.standing is not None for entry in entered) else 1
    request = JoinRace(race=args.race) if args.race else QuickRace()
    results = asyncio.run(
        run_bots(args.server, args.n, request, strategy, pace=args.pace, ca_file=args.ca_file,
                 report=_say_now)
    )
    for result in results:
        if result.standing is None:  # the others said how their race went as it ended
            print(result.describe())
    return 0 if all(result.standing is not None for result in results) else 1
