"""Handing frames to connections, and cutting off a connection that stops reading.

``websockets.broadcast`` never waits for a client: a frame goes into the connection's
write buffer at once. That is what keeps a race from waiting on its slowest racer, but a
client that stops reading would let its buffer grow without end (the keepalive ping only
notices after its timeout). :func:`send` bounds it: a connection whose unsent bytes pass
the limit is aborted at once. The client sees the connection drop (1006) and may resume
with its token, which sends it the current state afresh instead of the backlog.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from websockets import broadcast

from server.logs import log_event

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection


def send(connections: Collection[ServerConnection], frame: bytes, limit: int) -> None:
    """Send one encoded ``frame`` to every connection; abort those holding more than
    ``limit`` unsent bytes afterwards."""
    broadcast(connections, frame)
    for connection in connections:
        transport = connection.transport
        if transport.get_write_buffer_size() > limit and not transport.is_closing():
            log_event(
                "slow_reader",
                connection=str(connection.id),
                buffered=transport.get_write_buffer_size(),
                limit=limit,
            )
            transport.abort()
