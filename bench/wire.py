"""A lean websocket client for the load generator: RFC 6455 framing on an asyncio protocol.

The load generator runs thousands of clients in one process on one core, and with the
``websockets`` client most of its time went to that library's per-frame machinery (a
generator-based parser, an assembler and a future per message), not to the load: at
5,000 racers the generator ran out of core before the server did. This client speaks the
same protocol on the wire (an HTTP/1.1 upgrade without extensions, so compression off;
binary frames; client frames masked with a fresh random key; pings answered; the close
handshake) with a fraction of the work per frame. Both targets, the race server and the
echo floor, are driven through it alike. It is a benchmark client: it does not split or
reassemble fragmented messages (neither target sends any) and has no flow control.

    client = await connect("ws://127.0.0.1:8765/", timeout=10)
    await client.send(frame)
    async for frame in client: ...
    await client.close()
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import hashlib
import os
import struct
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Self, cast
from urllib.parse import urlsplit

try:
    from websockets.speedups import apply_mask  # C, in websockets' wheels
except ImportError:  # a build without its C extension
    from websockets.utils import apply_mask

#: The GUID RFC 6455 appends to the key to compute ``Sec-WebSocket-Accept``.
ACCEPT_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
BINARY, CLOSE, PING, PONG = 0x2, 0x8, 0x9, 0xA
MAX_HEADER = 64 * 1024


class Closed(Exception):
    """The connection is closed (by either side, or lost)."""


class HandshakeFailed(Exception):
    """The server did not switch protocols."""


def frame_header(opcode: int, length: int) -> bytes:
    """The header of a final, masked client frame of ``length`` payload bytes."""
    if length < 126:
        return struct.pack("!BB", 0x80 | opcode, 0x80 | length)
    if length < 1 << 16:
        return struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, length)
    return struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, length)


def client_frame(opcode: int, payload: bytes) -> bytes:
    """A whole masked client frame: header, a fresh random key, the masked payload."""
    key = os.urandom(4)
    return frame_header(opcode, len(payload)) + key + apply_mask(payload, key)


class Frames(ABC):
    """``async for`` over a connection's ``recv``: its messages in order, until it is
    closed (:class:`Closed`)."""

    @abstractmethod
    async def recv(self) -> bytes:
        """The next message; raises :class:`Closed` once none is left and it is closed."""

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        try:
            return await self.recv()
        except Closed:
            raise StopAsyncIteration from None


class WireClient(Frames, asyncio.Protocol):
    """One client connection. ``recv``/``async for`` give binary messages, in order."""

    def __init__(self, host: str, path: str) -> None:
        self.request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        )
        self.key = base64.b64encode(os.urandom(16))
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.messages: collections.deque[bytes] = collections.deque()
        self.waiter: asyncio.Future[None] | None = None
        self.on_message: Callable[[bytes], None] | None = None
        """When set, each binary message is handed to it from ``data_received`` instead of
        being queued for :meth:`recv` (which then only says when the connection closes):
        no future set and no task woken per message."""
        self.upgraded = False
        self.closed = False
        self.close_sent = False
        loop = asyncio.get_running_loop()
        self.handshake: asyncio.Future[None] = loop.create_future()
        self.lost: asyncio.Future[None] = loop.create_future()

    # ------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's is not a subclass of asyncio.Transport, hence no check).
        self.transport = cast(asyncio.Transport, transport)
        request = f"{self.request}Sec-WebSocket-Key: {self.key.decode()}\r\n\r\n"
        self.transport.write(request.encode())

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.upgraded and not self._upgrade():
            return
        self._parse()
        messages, on_message = self.messages, self.on_message
        if on_message is not None:
            while messages:
                on_message(messages.popleft())
        elif messages:
            self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if not self.handshake.done():
            self.handshake.set_exception(Closed("connection lost during the handshake"))
        if not self.lost.done():
            self.lost.set_result(None)
        self._wake()

    # ------------------------------------------------------------------- the API

    async def recv(self) -> bytes:
        """The next message; raises :class:`Closed` once none is left and it is closed."""
        while not self.messages:
            if self.closed:
                raise Closed("closed")
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter
        return self.messages.popleft()

    async def send(self, message: bytes) -> None:
        """Send one binary message (a coroutine, like the ``websockets`` client's)."""
        if self.closed or self.close_sent or self.transport is None:
            raise Closed("closed")
        self.transport.write(client_frame(BINARY, message))

    async def close(self, timeout: float = 2.0) -> None:
        """The close handshake: send a close frame, wait for the server to end the TCP
        connection (at most ``timeout`` seconds), then drop it."""
        if self.transport is None:
            return
        if not self.closed and not self.close_sent:
            self.close_sent = True
            self.transport.write(client_frame(CLOSE, struct.pack("!H", 1000)))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.lost), timeout)
        self.transport.close()

    # ---------------------------------------------------------------- internals

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def _fail(self, reason: str) -> None:
        if not self.handshake.done():
            self.handshake.set_exception(HandshakeFailed(reason))
        assert self.transport is not None
        self.transport.abort()

    def _upgrade(self) -> bool:
        """Read the server's answer to the upgrade; whether the connection is now open."""
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > MAX_HEADER:
                self._fail("the handshake answer is too long")
            return False
        head = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        del self.buffer[:end + 4]
        status = head[0].split(" ", 2)
        if len(status) < 2 or status[1] != "101":
            self._fail(f"the server answered {head[0]!r}")
            return False
        headers = {
            name.strip().lower(): value.strip()
            for name, _, value in (line.partition(":") for line in head[1:])
        }
        accept = base64.b64encode(hashlib.sha1(self.key + ACCEPT_GUID).digest()).decode()
        if headers.get("sec-websocket-accept") != accept:
            self._fail("wrong Sec-WebSocket-Accept")
            return False
        if headers.get("sec-websocket-extensions"):
            self._fail("the server chose an extension that was not offered")
            return False
        if self.handshake.done():  # whoever waited gave up (its timeout): nobody owns this
            self._fail("the handshake answer came after the wait for it ended")
            return False
        self.upgraded = True
        self.handshake.set_result(None)
        return True

    def _parse(self) -> None:
        """Take every whole frame out of the buffer (one deletion for all of them)."""
        buffer, at, size = self.buffer, 0, len(self.buffer)
        while size - at >= 2:
            first, second = buffer[at], buffer[at + 1]
            length, start = second & 0x7F, at + 2
            if second & 0x80:
                self._fail("the server masked a frame")
                return
            if length == 126:
                if size - start < 2:
                    break
                (length,) = struct.unpack_from("!H", buffer, start)
                start += 2
            elif length == 127:
                if size - start < 8:
                    break
                (length,) = struct.unpack_from("!Q", buffer, start)
                start += 8
            end = start + length
            if end > size:
                break
            payload = bytes(buffer[start:end])
            at = end
            opcode = first & 0x0F
            if not first & 0x80 or opcode == 0:
                self._fail("fragmented messages are not supported")
                return
            if opcode == BINARY:
                self.messages.append(payload)
            elif opcode == PING:
                if not self.close_sent and self.transport is not None:
                    self.transport.write(client_frame(PONG, payload))
            elif opcode == CLOSE:
                if not self.close_sent and self.transport is not None:
                    self.close_sent = True
                    self.transport.write(client_frame(CLOSE, payload[:2]))
                self.closed = True
            elif opcode != PONG:
                self._fail(f"unexpected opcode {opcode}")
                return
        del buffer[:at]


async def connect(url: str, timeout: float) -> WireClient:
    """Open ``url`` (``ws://host:port/path``) and complete the upgrade within ``timeout``.

    Raises ``OSError``, ``TimeoutError``, :class:`HandshakeFailed` or :class:`Closed`.
    """
    parts = urlsplit(url)
    hostname = parts.hostname
    if parts.scheme != "ws" or hostname is None:
        raise ValueError(f"not a ws:// URL: {url!r}")
    port = parts.port or 80
    loop = asyncio.get_running_loop()

    async def opened() -> WireClient:
        _, client = await loop.create_connection(
            lambda: WireClient(f"{hostname}:{port}", parts.path or "/"), hostname, port
        )
        await client.handshake
        return client

    return await asyncio.wait_for(opened(), timeout)
