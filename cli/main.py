"""``foursquare``: the dispatcher. Each subcommand module exposes ``register(subparsers)``.

The modules are listed by name so that the dispatcher sits above every package without
the packages importing one another (the client never imports the server, nor the reverse).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

#: Modules that add subcommands, in the order they appear in ``--help``.
COMMAND_MODULES = (
    "cli.game_commands",
    "cli.client_commands",
    "cli.player_commands",
    "cli.daily_commands",
    "cli.server_commands",
    "cli.tournament_commands",
    "cli.analysis_commands",
)


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="foursquare",
        description="Foursquare Race: race the solitaire card game Foursquare on identical deals.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def _version() -> str:
    """The installed package's version (what ``pip`` installed from pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("foursquare-race")
    except PackageNotFoundError:
        return "(not installed)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
