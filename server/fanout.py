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

A message is framed once (:func:`binary_frame`), not once per recipient: a progress
update goes to every racer and spectator of a race as the same bytes.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from websockets.protocol import State

from server.logs import log_event

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection


def binary_frame(payload: bytes) -> bytes:
    """``payload`` as one unmasked, final binary websocket frame (RFC 6455, 5.2), as a
    server sends it with no extension negotiated (the server turns compression off)."""
    return _frame_header(len(payload)) + payload


def _frame_header(size: int) -> bytes:
    """The header of a binary frame of ``size`` bytes of payload."""
    if size < 126:
        return bytes((0x82, size))
    if size < 1 << 16:
        return b"\x82\x7e" + size.to_bytes(2, "big")
    return b"\x82\x7f" + size.to_bytes(8, "big")


Part = bytes | memoryview
"""A piece of what is written to a connection: frames, or a frame's parts."""


class Frames:
    """Encoded frames for connections, written when :meth:`flush` is called: each
    connection's frames in order, in one write."""

    def __init__(self, limit: int):
        self._limit = limit
        self._pending: dict[ServerConnection, list[Part]] = {}

    def add(self, connections: Collection[ServerConnection], message: bytes) -> None:
        """Queue ``message`` (one encoded message) for every connection in ``connections``."""
        frame = binary_frame(message)
        pending = self._pending
        for connection in connections:
            frames = pending.get(connection)
            if frames is None:
                pending[connection] = [frame]
            else:
                frames.append(frame)

    def add_parts(self, connection: ServerConnection, *payload: Part) -> None:
        """Queue one message for ``connection`` whose encoding is ``payload``'s parts in
        order (see :func:`protocol.codec.with_field`): framed without joining them, so a
        part shared by many recipients is not copied for each."""
        frames = self._pending.setdefault(connection, [])
        frames.append(_frame_header(sum(len(part) for part in payload)))
        frames.extend(payload)

    def flush(self) -> None:
        """Write everything queued, then forget it."""
        pending, self._pending = self._pending, {}
        for connection, frames in pending.items():
            _write(connection, frames, self._limit)


def send(connections: Collection[ServerConnection], message: bytes, limit: int) -> None:
    """Send one encoded ``message`` to every connection now; abort those holding more
    than ``limit`` unsent bytes afterwards."""
    frames = (binary_frame(message),)
    for connection in connections:
        _write(connection, frames, limit)


def _write(connection: ServerConnection, frames: Collection[Part], limit: int) -> None:
    """Write ``frames`` (whole websocket frames) to ``connection`` at once.

    Straight to the transport: for a data frame in the open state, ``websockets``'
    protocol object would only have framed it and queued the bytes, and every write to
    a connection (these, and its own pings, pongs and close) is a whole frame written
    from the event loop's thread, so frames never interleave.
    """
    if connection.protocol.state is not State.OPEN:
        return  # closing or closed: what it would have been sent no longer matters
    transport = connection.transport
    transport.writelines(frames)
    buffered = transport.get_write_buffer_size()
    if buffered > limit and not transport.is_closing():
        log_event("slow_reader", connection=str(connection.id), buffered=buffered, limit=limit)
        transport.abort()
