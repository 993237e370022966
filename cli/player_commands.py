"""``foursquare key``: claim a name on a server and keep its player key; show, export and
import the key (to play as the same player on another machine). ``foursquare profile
NAME``: a claimed player's profile, full screen.

The key is kept by :mod:`client.player_keys` in the user's config directory, readable by
its owner only; ``play`` then says hello with it on that server.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.client_commands import DEFAULT_SERVER, ca_file_argument

Subparsers = Any  # argparse's _SubParsersAction is private


def register(subparsers: Subparsers) -> None:
    """Add ``key`` (``claim``, ``show``, ``export``, ``import``) to ``foursquare``."""
    key = subparsers.add_parser(
        "key", help="claim your name on a server; show, export or import its player key"
    )
    actions = key.add_subparsers(dest="action", metavar="ACTION", required=True)

    claim = actions.add_parser("claim", help="claim a name on the server and keep its key")
    claim.add_argument("name", help="the name to claim (it must be free on that server)")
    _server(claim)
    ca_file_argument(claim)
    claim.set_defaults(run=run_claim)

    show = actions.add_parser("show", help="which player this machine plays as on the server")
    _server(show)
    show.set_defaults(run=run_show)

    export = actions.add_parser("export", help="write the key, to import on another machine")
    _server(export)
    export.add_argument("file", metavar="FILE", type=Path,
                        help="where to write it (created readable by you only)")
    export.set_defaults(run=run_export)

    imported = actions.add_parser("import", help="keep a key exported on another machine")
    imported.add_argument("file", metavar="FILE", type=Path, help="the exported key")
    imported.set_defaults(run=run_import)

    profile = subparsers.add_parser(
        "profile", help="a player's profile: rating and its history, counts, recent races"
    )
    profile.add_argument("name", help="the claimed player's name (case and look-alike letters "
                         "do not matter)")
    _server(profile)
    ca_file_argument(profile)
    profile.set_defaults(run=run_profile)


def _server(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--server", default=DEFAULT_SERVER, help=f"the server's address (default {DEFAULT_SERVER})"
    )


def run_claim(args: argparse.Namespace) -> int:
    """``foursquare key claim NAME``: say hello as NAME, claim it, keep the key."""
    import asyncio

    from client.connection import ConnectionFailed
    from client.player_keys import KEEP_IT_SAFE, KeyStore
    from client.wording import usable_name
    from protocol.names import BadName

    try:
        name = usable_name(args.name)
    except BadName as refusal:
        print(f"error: the name {refusal}", file=sys.stderr)
        return 2
    keys = KeyStore.default()
    if keys.load(args.server) is not None:
        print(f"error: this machine already has a player key for {args.server} "
              "(foursquare key show)", file=sys.stderr)
        return 2
    try:
        saved = asyncio.run(claim_key(args.server, name, args.ca_file))
    except (ConnectionFailed, ValueError) as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    keys.save(saved)
    print(f"You are {saved.name} on {saved.server} (player {saved.player}).")
    print(f"Your key is kept in {keys.path}. {KEEP_IT_SAFE}")
    print("To play as you on another machine: foursquare key export FILE, then "
          "foursquare key import FILE there.")
    return 0


async def claim_key(server: str, name: str, ca_file: str | None = None) -> Any:
    """Claim ``name`` on ``server``: the :class:`~client.player_keys.SavedKey` to keep.
    Raises :class:`~client.connection.ConnectionFailed` with the server's refusal."""
    from client.connection import Connection, ConnectionFailed
    from client.player_keys import SavedKey
    from client.wording import describe_error
    from protocol import Error, Welcome
    from protocol.players import ClaimName, PlayerKey

    connection = Connection(server, name, ca_file=ca_file)
    try:
        async for message in connection.messages():
            answer: object = message  # players' messages are not in ServerMessage's union
            if isinstance(answer, Welcome):
                await connection.send(ClaimName(id=1))
            elif isinstance(answer, PlayerKey):
                return SavedKey(server, answer.player, answer.name, answer.key)
            elif isinstance(answer, Error) and answer.in_reply_to == ClaimName.TYPE:
                raise ConnectionFailed(describe_error(answer), answer.code)
    finally:
        await connection.close()
    raise ConnectionFailed("The server closed the connection before it answered.")


def run_show(args: argparse.Namespace) -> int:
    """``foursquare key show``: the player this machine plays as (never the key)."""
    from client.player_keys import KeyStore

    keys = KeyStore.default()
    saved = keys.load(args.server)
    if saved is None:
        print(f"No player key for {args.server}: you play as a guest there "
              "(foursquare key claim NAME).")
        return 1
    print(f"You are {saved.name} on {saved.server} (player {saved.player}); "
          f"the key is in {keys.path}.")
    return 0


def run_export(args: argparse.Namespace) -> int:
    """``foursquare key export FILE``: the key of this server, in a private file."""
    from client.player_keys import KEEP_IT_SAFE, KeyStore
    from client.saved_session import write_private

    saved = KeyStore.default().load(args.server)
    if saved is None:
        print(f"error: no player key for {args.server}", file=sys.stderr)
        return 1
    write_private(args.file, saved.to_document())
    print(f"Wrote the key of {saved.name} on {saved.server} to {args.file}. {KEEP_IT_SAFE}")
    return 0


def run_import(args: argparse.Namespace) -> int:
    """``foursquare key import FILE``: keep a key exported on another machine."""
    from client.player_keys import KEEP_IT_SAFE, KeyStore, SavedKey

    try:
        saved = SavedKey.from_json(args.file.read_text(encoding="utf-8"))
    except OSError as error:
        print(f"error: cannot read {args.file}: {error.strerror}", file=sys.stderr)
        return 1
    except ValueError as error:
        print(f"error: {args.file}: {error}", file=sys.stderr)
        return 1
    keys = KeyStore.default()
    keys.save(saved)
    print(f"You are {saved.name} on {saved.server} from now on (player {saved.player}). "
          f"{KEEP_IT_SAFE}")
    return 0


def run_profile(args: argparse.Namespace) -> int:
    """``foursquare profile NAME``: the profile screen of the claimed player NAME (asked
    for as a spectator: nothing is raced, no name is taken)."""
    from client.connection import Connection
    from client.network_app import NetworkApp, Plan
    from client.wording import usable_name
    from protocol import Role
    from protocol.names import BadName

    try:
        name = usable_name(args.name)
    except BadName as refusal:
        print(f"error: the name {refusal}", file=sys.stderr)
        return 2
    connection = Connection(args.server, "profile", role=Role.SPECTATOR, ca_file=args.ca_file)
    return NetworkApp(connection, Plan.player(name)).run() or 0
