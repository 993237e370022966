"""``foursquare tournament``: create and host a tournament, show standings, export, verify.

``create`` prints the join code and the secret host token; the host commands (``open``,
``start-round``, ``remove``, ``pause``, ``resume``, ``end``) take the token from
``--token`` or the ``FOURSQUARE_HOST_TOKEN`` environment variable. ``export`` asks a
server (``--server``) or reads the server's database file directly (``--db``), and
``verify`` checks an exported record game by game.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from cli.client_commands import ca_file_argument, server_argument

if TYPE_CHECKING:
    from protocol.tournament import TournamentClientMessage, TournamentExport, TournamentState

Subparsers = Any  # argparse's _SubParsersAction is private
Request = Callable[["TournamentClientMessage"], Awaitable[object]]
"""Send one request on a conversation's connection; its answer (:func:`converse`)."""
Answer = TypeVar("Answer")

TOKEN_VARIABLE = "FOURSQUARE_HOST_TOKEN"
#: Seconds to wait for the server's answer.
ANSWER_TIMEOUT = 30.0

#: Host commands: the subcommand, its help, and the wire action.
HOST_COMMANDS = (
    ("open", "open registration", "open"),
    ("start-round", "start the next round (or the arena's window)", "start"),
    ("remove", "remove an entrant", "remove"),
    ("pause", "start nothing new until resumed", "pause"),
    ("resume", "lift a pause", "resume"),
    ("end", "end: races in progress finish and count", "end"),
)


class CommandFailed(Exception):
    """The server refused, or could not be reached; the message says why."""


def register(subparsers: Subparsers) -> None:
    """Add ``tournament`` and its subcommands to the ``foursquare`` command."""
    parser = subparsers.add_parser("tournament", help="host a tournament: rounds or an arena")
    commands = parser.add_subparsers(dest="tournament_command", metavar="ACTION", required=True)

    create = commands.add_parser("create", help="create a tournament; prints code and token")
    _server_argument(create)
    create.add_argument("--name", required=True, help="the tournament's name")
    create.add_argument("--format", choices=("rounds", "arena"), default="rounds")
    create.add_argument(
        "--seeds",
        choices=("random", "winnable"),
        default="random",
        help="deal any seed, or only seeds the solver has found winnable",
    )
    create.add_argument("--rounds", type=int, default=3, help="rounds format: how many rounds")
    create.add_argument("--race-size", type=int, default=8, help="at most this many per race")
    create.add_argument("--time-limit", type=int, default=300, help="seconds per race")
    create.add_argument(
        "--arena-minutes",
        type=int,
        default=30,
        help="arena format: minutes during which races form",
    )
    create.add_argument(
        "--rated",
        action="store_true",
        help="rate its races (claimed players, in their rules' pool); unrated by default",
    )
    create.set_defaults(run=run_create)

    for name, help_text, _ in HOST_COMMANDS:
        command = commands.add_parser(name, help=help_text)
        _server_argument(command)
        command.add_argument("code", metavar="CODE", help="the tournament's join code")
        if name == "remove":
            command.add_argument(
                "entrant", metavar="ENTRANT",
                help="the entrant's name or id (both are in 'tournament standings')",
            )
        command.add_argument("--token", help=f"the host token (default: ${TOKEN_VARIABLE})")
        command.set_defaults(run=run_host_command, host_command=name)

    standings = commands.add_parser("standings", help="print the standings")
    _server_argument(standings)
    standings.add_argument("code", metavar="CODE")
    standings.set_defaults(run=run_standings)

    export = commands.add_parser("export", help="standings plus every game, as JSON or CSV")
    export.add_argument("code", metavar="CODE")
    source = export.add_mutually_exclusive_group()
    server_argument(source, "ask this server")
    source.add_argument(
        "--db", help="read the server's store instead: its SQLite journal file or its "
        "postgresql:// URL"
    )
    ca_file_argument(export)
    export.add_argument("--format", choices=("json", "csv"), default="json")
    export.add_argument("-o", "--output", type=Path, help="write here (default: stdout)")
    export.add_argument(
        "--games-dir", type=Path, help="also write each game's result to DIR/RACE.json for 'verify'"
    )
    export.set_defaults(run=run_export)

    verify = commands.add_parser("verify", help="check an exported tournament game by game")
    verify.add_argument("file", type=Path, help="the JSON export")
    verify.set_defaults(run=run_verify)


def _server_argument(parser: argparse.ArgumentParser) -> None:
    server_argument(parser)
    ca_file_argument(parser)


# ------------------------------------------------------------------ commands


def run_create(args: argparse.Namespace) -> int:
    """Create a tournament and print its join code and host token."""
    from protocol.messages import SeedPolicy
    from protocol.tournament import (
        CreateTournament,
        TournamentCreated,
        TournamentFormat,
        TournamentOptions,
    )

    try:
        options = TournamentOptions(
            name=args.name,
            format=TournamentFormat(args.format),
            rounds=args.rounds,
            race_size=args.race_size,
            time_limit=args.time_limit,
            arena_duration=args.arena_minutes * 60,
            seed_policy=SeedPolicy(args.seeds),
            rated=args.rated,
        )
        answer = ask(args.server, CreateTournament(options=options, id=1), args.ca_file)
    except CommandFailed as error:
        return _fail(error)
    assert isinstance(answer, TournamentCreated)
    print(f"join code:  {answer.tournament}")
    print(f"host token: {answer.host_token}")
    print(
        f"keep the token secret: it opens, starts, removes, pauses and ends. "
        f"export {TOKEN_VARIABLE}={answer.host_token}"
    )
    return 0


def run_host_command(args: argparse.Namespace) -> int:
    """Send one host action; print the tournament's state after it."""
    from protocol.tournament import HostAction, TournamentControl, TournamentState

    token = args.token or os.environ.get(TOKEN_VARIABLE)
    if not token:
        print(f"error: give the host token with --token or ${TOKEN_VARIABLE}", file=sys.stderr)
        return 2
    if not is_token(token):
        print(
            "error: that is not a host token: a host token is the 16 to 128 letters, digits, "
            "'-' and '_' that 'tournament create' printed",
            file=sys.stderr,
        )
        return 2
    action = {name: wire for name, _, wire in HOST_COMMANDS}[args.host_command]
    code = args.code.upper()
    try:
        named = getattr(args, "entrant", None)  # only ``remove`` names an entrant
        entrant = None if named is None else _entrant_id(args.server, code, named, args.ca_file)
        answer = ask(args.server, TournamentControl(
            tournament=code, host_token=token, action=HostAction(action), entrant=entrant, id=1,
        ), args.ca_file)
    except CommandFailed as error:
        return _fail(error)
    assert isinstance(answer, TournamentState)
    print(describe(answer))
    return 0


def run_standings(args: argparse.Namespace) -> int:
    """Print the tournament's state and standings."""
    from protocol.tournament import TournamentState, WatchTournament

    try:
        answer = ask(
            args.server, WatchTournament(tournament=args.code.upper(), id=1), args.ca_file
        )
    except CommandFailed as error:
        return _fail(error)
    assert isinstance(answer, TournamentState)
    print(describe(answer))
    return 0


def run_export(args: argparse.Namespace) -> int:
    """Write the record (standings plus every game) as JSON or CSV."""
    from server.journal_file import JournalRefused
    from server.tournament_export import document_from, to_csv, to_json

    try:
        export = (
            _export_from_db(args.db, args.code.upper())
            if args.db
            else _export_from_server(args.server, args.code.upper(), args.ca_file)
        )
    except CommandFailed as error:
        return _fail(error)
    except JournalRefused as refusal:  # as every command that reads a journal refuses it
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    document = document_from(export)
    text = to_json(document) + "\n" if args.format == "json" else to_csv(document)
    try:
        if args.output:
            args.output.write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        if args.games_dir:
            args.games_dir.mkdir(parents=True, exist_ok=True)
            for game in export.games:
                path = args.games_dir / f"{game.race}.json"
                path.write_text(game.to_result().to_json() + "\n", encoding="utf-8")
    except OSError as error:
        where = error.filename if error.filename is not None else args.output
        print(f"error: cannot write {where}: {error.strerror or error}", file=sys.stderr)
        return 2
    return 0


def run_verify(args: argparse.Namespace) -> int:
    """Check an exported record; exit 0 if it holds up, 1 if not, 2 if unreadable."""
    from cli.server_commands import parse_json
    from server.tournament_export import games_of, verify_document

    try:
        document = parse_json(args.file.read_text(encoding="utf-8"))
        games = games_of(document)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        print(f"error: cannot read a tournament record from {args.file}: {error}", file=sys.stderr)
        return 2
    from client.wording import plural

    problems = verify_document(document)
    info = document["tournament"]
    print(
        f"tournament {info['code']} ({info['name']}): {plural(len(games), 'game')}, "
        f"{plural(len(document['standings']), 'entrant')}"
    )
    if not problems:
        print(
            "verified: every game replays from its revealed seed, and the games give the standings"
        )
        return 0
    for problem in problems:
        print(f"REFUTED: {problem}")
    return 1


# ---------------------------------------------------------- talking and telling


def is_token(text: str) -> bool:
    """Whether ``text`` has the shape of a token, by the protocol's own rule (checked here
    so that a mistyped token is told in words, not as the server's field path)."""
    from protocol import ProtocolError
    from protocol.messages import TOKEN

    try:
        TOKEN.decode(text, "the host token", True)
    except ProtocolError:
        return False
    return True


def _entrant_id(server: str, code: str, entrant: str, ca_file: str | None) -> str:
    """The id of the entrant named ``entrant`` (or ``entrant`` itself when it is an id),
    read from the standings; :class:`CommandFailed` when no entrant or several have it."""
    from protocol.tournament import TournamentState, WatchTournament

    answer = ask(server, WatchTournament(tournament=code, id=1), ca_file)
    assert isinstance(answer, TournamentState)
    return entrant_id_in(answer, entrant)


def entrant_id_in(state: TournamentState, entrant: str) -> str:
    """``entrant`` as an id of ``state``'s standings: an id as it is, or a name (in any
    case); :class:`CommandFailed` says so when no entrant has that name, or several do."""
    ids = [line.entrant for line in state.standings]
    if entrant in ids:
        return entrant
    named = [line.entrant for line in state.standings if line.name.casefold() == entrant.casefold()]
    if len(named) == 1:
        return named[0]
    if named:
        raise CommandFailed(
            f"{len(named)} entrants are called {entrant!r} ({', '.join(named)}): give the id"
        )
    raise CommandFailed(
        f"no entrant of {state.tournament} is called {entrant!r}: "
        "'tournament standings' lists every entrant's name and id"
    )


def describe(state: TournamentState) -> str:
    """The state and standings as lines of text; tied places are marked ``=``."""
    from client.wording import plural

    flags = "".join(
        f", {flag}" for flag, on in (("paused", state.paused), ("ending", state.ending)) if on
    )
    progress = (
        f"round {state.round} of {state.rounds}" if state.format.value == "rounds" else "arena"
    )
    lines = [
        f"{state.name} [{state.tournament}]: {state.status.value}{flags}, {progress}, "
        f"{plural(len(state.races), 'race')} running"
    ]
    for line in state.standings:
        place = f"{'=' if line.tied else ' '}{line.place}"
        bot = " [bot]" if line.bot else ""
        left = "" if line.state.value == "active" else f" ({line.state.value})"
        lines.append(
            f"{place:>4}  {line.name}{bot}{left}: {plural(line.points, 'point')}, "
            f"{line.stock_left} stock left, {line.time_ms / 1000:.1f} s, "
            f"{plural(line.games, 'game')}  [{line.entrant}]"
        )
    return "\n".join(lines)


def ask(server: str, message: TournamentClientMessage, ca_file: str | None = None) -> object:
    """Say hello to ``server``, send ``message``, and return the answer to it
    (``ca_file``: a CA to trust for a ``wss://`` server, besides the system's).

    Raises :class:`CommandFailed` with the server's words if it answers with an error.
    """
    return converse(server, lambda request: request(message), ca_file)


def converse(
    server: str, talk: Callable[[Request], Awaitable[Answer]], ca_file: str | None = None
) -> Answer:
    """Say hello to ``server``, then run ``talk``, which sends requests on that one
    connection and gets the answer to each (each within :data:`ANSWER_TIMEOUT`).

    Raises :class:`CommandFailed` with the server's words if it answers with an error,
    or if it cannot be reached or sends what this client cannot read.
    """
    import asyncio

    from client.connection import server_addresses, tls_options

    server = server_addresses(server)[0]  # one conversation: the first node answers it
    try:
        tls = tls_options(server, ca_file)
    except ValueError as error:
        raise CommandFailed(str(error)) from None
    return asyncio.run(_converse(server, talk, tls))


async def _converse(
    server: str, talk: Callable[[Request], Awaitable[Answer]], tls: dict[str, Any]
) -> Answer:
    import asyncio

    from websockets.asyncio.client import connect
    from websockets.exceptions import WebSocketException

    from client.wording import describe_error, describe_unreachable
    from protocol import Error, Hello, ProtocolError, Welcome, decode_server, encode
    from protocol.tournament import encode_tournament

    try:
        async with connect(server, compression=None, max_size=None, **tls) as connection:
            async with asyncio.timeout(ANSWER_TIMEOUT):
                await connection.send(
                    encode(Hello(name="host", bot=False, client="foursquare-cli"))
                )
                welcome = decode_server(await connection.recv())
            if not isinstance(welcome, Welcome):
                raise CommandFailed(f"the server at {server} did not welcome this client")

            async def request(message: TournamentClientMessage) -> object:
                async with asyncio.timeout(ANSWER_TIMEOUT):
                    await connection.send(encode_tournament(message))
                    while True:
                        answer: object = decode_server(await connection.recv())
                        if isinstance(answer, Error):
                            raise CommandFailed(describe_error(answer))
                        if getattr(answer, "reply_to", None) == message.id:
                            return answer

            return await talk(request)
    except (OSError, TimeoutError, WebSocketException) as error:
        raise CommandFailed(describe_unreachable(server, error)) from None
    except ProtocolError as error:
        raise CommandFailed(
            f"the server at {server} sent what this client cannot read: {error}"
        ) from None


def _export_from_server(server: str, code: str, ca_file: str | None) -> TournamentExport:
    from server.tournament_export import fetch_export

    async def pages(request: Request) -> TournamentExport:
        try:
            return await fetch_export(code, request)
        except ValueError as error:
            raise CommandFailed(str(error)) from None

    return converse(server, pages, ca_file)


def _export_from_db(db: str, code: str) -> TournamentExport:
    import time

    from server.store import load_tournaments, shown
    from server.tournament_host import tournament_export

    found = load_tournaments(db, code=code)
    if not found:
        raise CommandFailed(f"there is no tournament {code} in {shown(db)}")
    return tournament_export(found[0], time.time())


def _fail(error: CommandFailed) -> int:
    print(f"error: {error}", file=sys.stderr)
    return 1
