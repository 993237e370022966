"""Handing frames to connections, and cutting off a connection that stops reading.

A frame goes into the connection's write buffer at once, never waiting for the client
(as ``websockets.broadcast`` does): that is what keeps a race from waiting on its slowest
racer. But a client that stops reading would let its buffer grow without end (the
keepalive ping only notices after its timeout), so every write here is bounded: a
connection whose unsent bytes pass the limit is aborted at once. The client sees the
connection drop (1006) and may resume with its token, which sends it the current state
afresh instead of the backlog.

:class:`Frames` gathers the frames of one delivery (a move's ``placed``, the next
``card`` and the progress update, for the racer who moved) and hands each connection its
frames in one write: one system call instead of one per frame, which under load was a
quarter of the event loop's time.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from websockets.protocol import State

from server.logs import log_event

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection


class Frames:
    """Encoded frames for connections, written when :meth:`flush` is called: each
    connection's frames in order, in one write."""

    def __init__(self, limit: int):
        self._limit = limit
        self._pending: dict[ServerConnection, list[bytes]] = {}

    def add(self, connections: Collection[ServerConnection], frame: bytes) -> None:
        """Queue ``frame`` (one encoded message) for every connection in ``connections``."""
        pending = self._pending
        for connection in connections:
            frames = pending.get(connection)
            if frames is None:
                pending[connection] = [frame]
            else:
                frames.append(frame)

    def flush(self) -> None:
        """Write everything queued, then forget it."""
        pending, self._pending = self._pending, {}
        for connection, frames in pending.items():
            _write(connection, frames, self._limit)


def send(connections: Collection[ServerConnection], frame: bytes, limit: int) -> None:
    """Send one encoded ``frame`` to every connection now; abort those holding more than
    ``limit`` unsent bytes afterwards."""
    for connection in connections:
        _write(connection, (frame,), limit)


def _write(connection: ServerConnection, frames: Collection[bytes], limit: int) -> None:
    """Frame ``frames`` as binary messages and write them to ``connection`` at once."""
    protocol = connection.protocol
    if protocol.state is not State.OPEN:
        return  # closing or closed: what it would have been sent no longer matters
    for frame in frames:
        protocol.send_binary(frame)
    data = protocol.data_to_send()
    transport = connection.transport
    # Only binary frames were queued in the open state, so there is no end-of-stream
    # marker (an empty chunk) among them: they can all go in one write.
    transport.writelines(data)
    buffered = transport.get_write_buffer_size()
    if buffered > limit and not transport.is_closing():
        log_event("slow_reader", connection=str(connection.id), buffered=buffered, limit=limit)
        transport.abort()
