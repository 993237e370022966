"""The floor for the load test: a bare websockets server that does no game work.

It runs on the same stack as the race server (``websockets`` asyncio server, compression
off, the event loop chosen with ``--loop`` as for ``foursquare serve``) and carries the
same message pattern: each frame is sent back to its sender (the ``placed``/``card``
answer to a ``place``), and also broadcast, once encoded, to every other connection on
the same path (the ``progress`` fan-out to a race's racers and spectators). Whatever the
race server adds on top of this is its cost.

    python -m bench.echo_server --port 8766 [--loop uvloop]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from collections import defaultdict

from websockets import broadcast
from websockets.asyncio.server import ServerConnection, serve

from cli.server_commands import LOOPS, event_loop_factory

MAX_FRAME = 4 * 1024 * 1024


async def run(host: str, port: int) -> None:
    """Serve until SIGTERM or SIGINT."""
    groups: defaultdict[str, set[ServerConnection]] = defaultdict(set)

    async def handle(connection: ServerConnection) -> None:
        path = connection.request.path if connection.request else "/"
        group = groups[path]
        group.add(connection)
        try:
            async for frame in connection:
                await connection.send(frame)
                if path != "/" and len(group) > 1:
                    broadcast((c for c in group if c is not connection), frame)
        finally:
            group.discard(connection)
            if not group:
                groups.pop(path, None)

    stop = asyncio.get_running_loop().create_future()
    for sig in (signal.SIGTERM, signal.SIGINT):
        asyncio.get_running_loop().add_signal_handler(sig, stop.set_result, None)
    async with serve(
        handle, host, port, compression=None, max_size=MAX_FRAME, ping_interval=20
    ):
        await stop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--loop", choices=LOOPS, default="asyncio",
                        help="event loop, as for `foursquare serve --loop`")
    args = parser.parse_args(argv)
    try:
        loop_factory = event_loop_factory(args.loop)
    except ValueError as error:
        parser.error(str(error))
    with contextlib.suppress(KeyboardInterrupt), asyncio.Runner(loop_factory=loop_factory) as r:
        r.run(run(args.host, args.port))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
