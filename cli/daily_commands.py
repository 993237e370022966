"""``foursquare daily``: a day's board of the daily deal, read from a server; once the day
is revealed, every line checked here (the seed against the commitment, every line's moves
replayed) and, with ``--export``, the board written for ``foursquare verify``.

Racing the deal is ``foursquare play --daily`` (or Daily in the lobby).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.client_commands import DEFAULT_SERVER, ca_file_argument

Subparsers = Any  # argparse's _SubParsersAction is private


def register(subparsers: Subparsers) -> None:
    """Add ``daily`` to ``foursquare``."""
    daily = subparsers.add_parser(
        "daily", help="the daily deal's board; after the day, its seed and every line checked"
    )
    daily.add_argument("--day", metavar="YYYY-MM-DD",
                       help="the UTC day (default: today on the server)")
    daily.add_argument(
        "--server", default=DEFAULT_SERVER, help=f"the server's address (default {DEFAULT_SERVER})"
    )
    ca_file_argument(daily)
    daily.add_argument("--export", metavar="FILE", type=Path,
                       help="once revealed: write the whole board as a result for verify")
    daily.set_defaults(run=run_daily)


def run_daily(args: argparse.Namespace) -> int:
    """``foursquare daily``: print the day's board; check it once it is revealed."""
    import asyncio

    from client.connection import ConnectionFailed
    from client.screens.daily import board_summary, entry_row

    try:
        board = asyncio.run(read_board(args.server, args.day, args.ca_file))
    except ConnectionFailed as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    print(board_summary(board))
    for entry in board.entries:
        print("  ".join(cell for cell in entry_row(entry) if cell))
    if args.export is not None:
        if board.seed is None:
            print(f"error: the board of {board.day} is sealed until the day is revealed",
                  file=sys.stderr)
            return 1
        args.export.write_text(board.to_result().to_json() + "\n", encoding="utf-8")
        print(f"Wrote the board to {args.export} (check it with: foursquare verify "
              f"{args.export}).")
    if board.seed is not None:
        from protocol.result import verify_result

        return 0 if verify_result(board.to_result()).ok else 1
    return 0


async def read_board(server: str, day: str | None, ca_file: str | None) -> Any:
    """The whole board of ``day`` on ``server`` (every page), as one ``daily`` message.
    Raises :class:`~client.connection.ConnectionFailed` with the server's refusal."""
    import dataclasses

    from client.connection import Connection, ConnectionFailed
    from client.wording import describe_error
    from protocol import Error, Role, Welcome
    from protocol.daily import DAILY_PAGE_LIMIT, Daily, GetDaily

    # A spectator's session: reading a board races nothing and takes no name.
    connection = Connection(server, "daily", role=Role.SPECTATOR, ca_file=ca_file)
    pages: list[Daily] = []
    try:
        async for message in connection.messages():
            answer: object = message  # daily messages are not in ServerMessage's union
            if isinstance(answer, Welcome):
                await connection.send(GetDaily(day=day, limit=DAILY_PAGE_LIMIT, id=1))
            elif isinstance(answer, Daily):
                pages.append(answer)
                got = sum(len(page.entries) for page in pages)
                if got >= answer.total or not answer.entries:
                    lines = tuple(entry for page in pages for entry in page.entries)
                    return dataclasses.replace(pages[0], entries=lines)
                # The day the first page named, even if midnight passes meanwhile.
                await connection.send(GetDaily(day=answer.day, offset=got,
                                               limit=DAILY_PAGE_LIMIT, id=len(pages) + 1))
            elif isinstance(answer, Error) and answer.in_reply_to == GetDaily.TYPE:
                raise ConnectionFailed(describe_error(answer), answer.code)
    finally:
        await connection.close()
    raise ConnectionFailed("The server closed the connection before it answered.")
