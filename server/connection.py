"""A websockets server connection that hands each message to its handler as it arrives.

``websockets``' asyncio connection queues every incoming message for ``recv()``, and a
handler reading in a loop keeps, between two messages, a chain of three coroutines and a
future waiting on the queue, then a task wake-up to take the next one. A racer thinks
for a second or so between moves, so at 5,000 racers those waiting objects were more than
half of what the garbage collector's middle generation held and scanned (a census of
``gc.get_objects(1)``: 134,000 objects, 75,000 of them this machinery).

:class:`RaceConnection` keeps ``websockets``' protocol, handshake, keepalive and closing
as they are, and changes only where a data frame goes once parsed: the whole message is
handed to a callback (:meth:`RaceConnection.deliver_to`) from the same network callback
that parsed it. Nothing waits between two messages.

Once the connection is open it also splits the incoming bytes into frames itself: a whole,
unfragmented, masked binary frame (a client's every message, nearly) is unmasked and
handed over directly, and every other frame (control frames, text, fragments, anything
malformed) goes to ``websockets``' parser whole, so that parser is always at a frame
boundary and decides as before. Its parser builds a generator, a frame and two lists
for each message, which at 5,000 racers kept 20,000 objects in the collector's middle
generation (one message's worth per connection) and cost a few microseconds a message.

Splitting reads parts of ``websockets``' protocol object that are not its public API
(its reader's buffer, its parser generator, ``current_size``), and their names changed
between releases. So ``pyproject.toml`` admits only the releases this was tested on
(:data:`TESTED_WEBSOCKETS`), and :func:`check_websockets` refuses to start the server on
any other, with a sentence, rather than run without the fast path unseen: measured at
1,000 racers, going through ``websockets``' parser for every frame cost 8% more server
CPU a move (docs/performance.md).

Answers that need to wait (a journal write, a search) call :meth:`RaceConnection.hold`:
messages then wait in arrival order until :meth:`RaceConnection.release`, and past
:data:`MAX_WAITING` of them the connection stops reading from the network, as
``websockets``' own queue does, until they are down to :data:`RESUME_AT`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

import websockets
from websockets.asyncio.server import ServerConnection
from websockets.frames import DATA_OPCODES, CloseCode, Frame, Opcode
from websockets.protocol import Event, State
from websockets.server import ServerProtocol

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets built without its C extension
    from websockets.utils import apply_mask

Message = bytes | bytearray | memoryview | str
"""A whole incoming message: binary as received, text decoded (the protocol refuses text
frames with ``bad_frame``, so invalid UTF-8 is replaced rather than fatal)."""

#: Messages held before the connection stops reading (``websockets``' ``max_queue``).
MAX_WAITING = 16
#: Held messages below which reading resumes.
RESUME_AT = 4
#: Frames one message may be split into; more fails the connection (1009), as
#: ``websockets`` does past its own limit. ``max_size`` bounds a message's bytes, but
#: not how many empty fragments it comes in.
MAX_FRAGMENTS = 64

#: The first byte of a final binary frame with no extension bits (RFC 6455, 5.2).
_FINAL_BINARY = 0x80 | Opcode.BINARY.value
#: The mask bit of the second byte, set on every client frame.
_MASKED = 0x80
#: What splitting reads of ``websockets``' protocol object besides its public API.
_PARSER_STATE = ("reader", "parser", "current_size", "max_message_size", "extensions")

#: The ``websockets`` releases splitting was tested on (the test suite runs on the one
#: installed): the only ones ``pyproject.toml`` admits, and the only ones the server starts on.
TESTED_WEBSOCKETS = ("17.4",)


def check_websockets() -> None:
    """Refuse (``ValueError``, with a sentence) to run on a ``websockets`` release that
    splitting was not tested on, or whose protocol object lacks what it reads."""
    version = websockets.version.version
    protocol = ServerProtocol()
    missing = [name for name in _PARSER_STATE if not hasattr(protocol, name)]
    if not hasattr(getattr(protocol, "reader", None), "buffer"):
        missing.append("reader.buffer")
    if version in TESTED_WEBSOCKETS and not missing:
        return
    lacks = f" (it lacks {', '.join(missing)})" if missing else ""
    raise ValueError(
        f"websockets {version} is installed{lacks}, but the server reads parts of websockets' "
        f"frame parser that are tested only with websockets {' or '.join(TESTED_WEBSOCKETS)}: "
        "install the version pyproject.toml names (pip install -e .)"
    )


class _Inbox:
    """A connection's state for handing over messages (one slotted object: a
    ``websockets`` connection already has 25 attributes, and past 30 every instance's
    attribute dictionary stops sharing its keys, at 1.3 KiB more per connection)."""

    __slots__ = ("client_address", "fragments", "handler", "held", "on_lost", "partial",
                 "reading_paused", "splitting", "text", "waiting")

    def __init__(self) -> None:
        self.client_address: str | None = None
        self.on_lost: Callable[[], None] | None = None
        self.handler: Callable[[Message], None] | None = None
        self.held = True
        self.waiting: deque[Message] | None = None
        """Messages held, oldest first (``None`` when there are none)."""
        self.reading_paused = False
        self.fragments: list[Any] = []
        self.text = False
        """Whether the fragmented message being assembled is text."""
        self.splitting: bool | None = None
        """Whether this connection splits incoming frames itself (``None`` until the
        first data after the handshake decides)."""
        self.partial: bytearray | None = None
        """The start of a frame whose end has not arrived yet (when splitting)."""


class RaceConnection(ServerConnection):
    """A server connection whose messages go to a callback, not to ``recv()``.

    Until :meth:`deliver_to` is called, messages are held (a client may send its first
    message before the handler has started).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._inbox = _Inbox()

    @property
    def splits_frames(self) -> bool:
        """Whether this connection splits its incoming frames itself (see the module's
        docstring); ``False`` until the first data after the handshake, and for good
        once anything unusual came."""
        return bool(self._inbox.splitting)

    @property
    def client_address(self) -> str | None:
        """The client's address as admitted (from a trusted proxy's header, or the peer's)."""
        return self._inbox.client_address

    def admitted(self, client_address: str | None, on_lost: Callable[[], None]) -> None:
        """Record whom this connection was admitted for, and call ``on_lost`` once it is
        gone, whether or not its handshake completed (the count it holds is given back)."""
        self._inbox.client_address = client_address
        self._inbox.on_lost = on_lost

    def connection_lost(self, exc: Exception | None) -> None:
        """The TCP connection is gone: ``websockets``' bookkeeping, then ``on_lost``."""
        try:
            super().connection_lost(exc)
        finally:
            on_lost, self._inbox.on_lost = self._inbox.on_lost, None
            if on_lost is not None:
                on_lost()

    def deliver_to(self, handler: Callable[[Message], None]) -> None:
        """Hand every message to ``handler`` from now on, starting with any held."""
        self._inbox.handler = handler
        self.release()

    def hold(self) -> None:
        """Keep messages, in order, until :meth:`release`."""
        self._inbox.held = True

    def release(self) -> None:
        """Hand over the held messages, in order, and then each as it arrives (the
        handler may hold again: the rest then wait for the next release)."""
        inbox = self._inbox
        inbox.held = False
        waiting, handler = inbox.waiting, inbox.handler
        if waiting is None or handler is None:
            return
        while waiting and not inbox.held:
            handler(waiting.popleft())
        if not waiting:
            inbox.waiting = None
        if inbox.reading_paused and len(waiting) <= RESUME_AT:
            inbox.reading_paused = False
            if not self.transport.is_closing():
                self.transport.resume_reading()

    def data_received(self, data: bytes) -> None:
        """Split ``data`` into frames (see the module's docstring), or, before the
        handshake is done or once anything unusual came, hand it all to ``websockets``."""
        inbox = self._inbox
        if inbox.splitting is None and self.protocol.state is State.OPEN:
            inbox.splitting = self._at_frame_boundary()
        if not inbox.splitting:
            super().data_received(data)
            return
        buffer: bytes | bytearray = data
        if inbox.partial is not None:
            inbox.partial += data
            buffer, inbox.partial = inbox.partial, None
        protocol = self.protocol
        limit = protocol.max_message_size
        end = len(buffer)
        start = 0
        while start < end:
            if end - start < 2:
                self._keep(buffer, start)
                return
            second = buffer[start + 1]
            size = second & 0x7F
            header = 2
            if size == 126:
                header = 4
                size = int.from_bytes(buffer[start + 2 : start + 4], "big")
            elif size == 127:
                header = 10
                size = int.from_bytes(buffer[start + 2 : start + 10], "big")
            if end - start < header:
                self._keep(buffer, start)
                return
            if limit is not None and size > limit:
                # Not buffered here: websockets' parser takes over, and refuses it (1009).
                self._stop_splitting(bytes(buffer[start:]))
                return
            payload_at = start + header + (4 if second & _MASKED else 0)
            frame_end = payload_at + size
            if frame_end > end:
                self._keep(buffer, start)
                return
            if (
                buffer[start] == _FINAL_BINARY
                and second & _MASKED
                and protocol.state is State.OPEN
                and protocol.current_size is None
            ):
                mask = buffer[payload_at - 4 : payload_at]
                self._deliver(apply_mask(buffer[payload_at:frame_end], mask))
            else:
                super().data_received(bytes(buffer[start:frame_end]))  # one whole frame
                if protocol.state is not State.OPEN:
                    self._stop_splitting(bytes(buffer[frame_end:]))
                    return
            start = frame_end

    def _keep(self, buffer: bytes | bytearray, start: int) -> None:
        """Keep ``buffer`` from ``start`` on (the beginning of a frame) for the next read:
        the same buffer when it is all of it, so a frame that comes a byte at a time
        costs time in proportion to its size, not to its size squared."""
        if start == 0 and isinstance(buffer, bytearray):
            self._inbox.partial = buffer
        else:
            self._inbox.partial = bytearray(memoryview(buffer)[start:])

    def _at_frame_boundary(self) -> bool:
        """Whether ``websockets``' parser is waiting for the first byte of a frame with
        nothing buffered: only then may frames bypass it (it must never see half of
        one). A client that sent frames before the handshake's answer may have left it
        mid-frame; that connection's frames all go through the parser."""
        protocol: Any = self.protocol  # internals: check_websockets vouched for them
        if protocol.reader.buffer or protocol.extensions or protocol.current_size is not None:
            return False
        parser = protocol.parser
        while getattr(parser, "gi_yieldfrom", None) is not None:
            parser = parser.gi_yieldfrom
        return getattr(getattr(parser, "gi_code", None), "co_name", None) == "at_eof"

    def _stop_splitting(self, rest: bytes) -> None:
        """Hand ``rest`` and everything after it to ``websockets``' parser."""
        self._inbox.splitting = False
        if rest:
            super().data_received(rest)

    def process_event(self, event: Event) -> None:
        """A data frame goes to the handler once its message is whole; everything else
        (the handshake request, control frames) is ``websockets``' as before."""
        if self.request is None or not isinstance(event, Frame) or event.opcode not in DATA_OPCODES:
            super().process_event(event)
            return
        message = self._assemble(event)
        if message is not None:
            self._deliver(message)

    def _deliver(self, message: Message) -> None:
        """Hand a whole message to the handler, or keep it while messages are held."""
        inbox = self._inbox
        if inbox.held or inbox.waiting is not None or inbox.handler is None:
            if inbox.waiting is None:
                inbox.waiting = deque()
            inbox.waiting.append(message)
            if len(inbox.waiting) > MAX_WAITING and not inbox.reading_paused:
                inbox.reading_paused = True
                self.transport.pause_reading()
            return
        inbox.handler(message)

    def _assemble(self, frame: Frame) -> Message | None:
        """The message ``frame`` completes, or ``None`` while it is still in fragments.
        (``websockets``' protocol has already checked that fragments come in order and
        that a message stays within ``max_size``.)"""
        inbox = self._inbox
        if frame.opcode is not Opcode.CONT:
            if frame.fin:
                return _text(frame.data) if frame.opcode is Opcode.TEXT else frame.data
            inbox.fragments = [frame.data]
            inbox.text = frame.opcode is Opcode.TEXT
            return None
        inbox.fragments.append(frame.data)
        if len(inbox.fragments) > MAX_FRAGMENTS:
            inbox.fragments = []
            self.protocol.fail(CloseCode.MESSAGE_TOO_BIG, "too many fragments")
            self.send_data()
            return None
        if not frame.fin:
            return None
        data = b"".join(inbox.fragments)
        inbox.fragments = []
        return _text(data) if inbox.text else data


def _text(data: Any) -> str:
    return bytes(data).decode(errors="replace")
