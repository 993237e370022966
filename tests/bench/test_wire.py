"""The load generator's websocket client against the ``websockets`` server both targets use."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from http import HTTPStatus
from typing import Any

import pytest
from websockets.asyncio.server import ServerConnection, serve

from bench.wire import ACCEPT_GUID, Closed, HandshakeFailed, WireClient, connect

Handler = Callable[[ServerConnection], Awaitable[None]]


@contextlib.asynccontextmanager
async def server(handler: Handler, **options: Any) -> AsyncIterator[str]:
    """A ``websockets`` server on a free loopback port; yields its ``ws://`` URL."""
    async with serve(handler, "127.0.0.1", 0, compression=None, **options) as running:
        port = next(iter(running.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}/path"


async def echo(connection: ServerConnection) -> None:
    async for message in connection:
        await connection.send(message)


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65535, 65536, 300_000])
async def test_messages_of_every_length_encoding_go_and_come_back_intact(size: int) -> None:
    message = bytes(i % 251 for i in range(size))
    async with server(echo, max_size=None) as url:
        client = await connect(url, timeout=5)
        await client.send(message)
        assert await asyncio.wait_for(client.recv(), 5) == message
        await client.close()


async def test_many_messages_arrive_in_order() -> None:
    async def burst(connection: ServerConnection) -> None:
        for i in range(500):
            await connection.send(struct.pack("!I", i))
        await connection.wait_closed()

    async with server(burst) as url:
        client = await connect(url, timeout=5)
        received = [struct.unpack("!I", await asyncio.wait_for(client.recv(), 5))[0]
                    for _ in range(500)]
        assert received == list(range(500))
        await client.close()


async def test_a_message_hook_gets_every_message_in_order_and_recv_only_the_close() -> None:
    async def burst(connection: ServerConnection) -> None:
        await connection.recv()  # the hook is set
        for i in range(200):
            await connection.send(struct.pack("!I", i))
        await connection.close()

    async with server(burst) as url:
        client = await connect(url, timeout=5)
        hooked: list[int] = []
        client.on_message = lambda message: hooked.append(struct.unpack("!I", message)[0])
        await client.send(b"go")
        with pytest.raises(Closed):
            await asyncio.wait_for(client.recv(), 5)
        assert hooked == list(range(200))
        await client.close()


async def test_pings_are_answered_and_the_close_handshake_completes() -> None:
    close_codes: list[int | None] = []

    async def pinger(connection: ServerConnection) -> None:
        pong = await connection.ping(b"are you there")
        await asyncio.wait_for(pong, 5)
        await connection.send(b"pong received")
        await connection.wait_closed()
        close_codes.append(connection.close_code)

    async with server(pinger) as url:
        client = await connect(url, timeout=5)
        assert await asyncio.wait_for(client.recv(), 5) == b"pong received"
        await client.close()
    # Leaving the server's block waits for its handler, which records the close code.
    assert close_codes == [1000]


async def test_a_server_close_ends_iteration_and_refuses_sends() -> None:
    async def goodbye(connection: ServerConnection) -> None:
        await connection.send(b"last")
        await connection.close(1001)

    async with server(goodbye) as url:
        client = await connect(url, timeout=5)
        received = [message async for message in client]
        assert received == [b"last"]
        with pytest.raises(Closed):
            await client.recv()
        with pytest.raises(Closed):
            await client.send(b"too late")
        await client.close()


async def test_a_refused_upgrade_fails_the_connect() -> None:
    def refuse(connection: ServerConnection, request: Any) -> Any:
        return connection.respond(HTTPStatus.FORBIDDEN, "no\n")

    async with server(echo, process_request=refuse) as url:
        with pytest.raises(HandshakeFailed, match="403"):
            await connect(url, timeout=5)


async def test_an_upgrade_answered_after_the_timeout_is_dropped_quietly() -> None:
    answered = asyncio.Event()

    async def answer_late(connection: ServerConnection, request: Any) -> None:
        await asyncio.sleep(0.3)
        answered.set()

    errors: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, context: errors.append(context))
    async with server(echo, process_request=answer_late) as url:
        with pytest.raises(TimeoutError):
            await connect(url, timeout=0.05)
        await answered.wait()
        await asyncio.sleep(0.2)  # the answer reaches a client nobody waits for any more
    assert errors == []


class Recorder(asyncio.Transport):
    """A transport that keeps what is written to it."""

    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.aborted = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def abort(self) -> None:
        self.aborted = True


async def test_frames_split_anywhere_are_reassembled() -> None:
    client = WireClient("h:1", "/")
    transport = Recorder()
    client.connection_made(transport)
    accept = base64.b64encode(hashlib.sha1(client.key + ACCEPT_GUID).digest())
    answer = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    big = bytes(range(256)) * 300
    frames = (b"\x82\x03abc" + b"\x82\x7e" + struct.pack("!H", 200) + b"x" * 200
              + b"\x82\x7f" + struct.pack("!Q", len(big)) + big)
    for i in range(len(answer + frames)):
        client.data_received((answer + frames)[i:i + 1])
    assert client.handshake.done() and client.handshake.exception() is None
    assert [await client.recv() for _ in range(3)] == [b"abc", b"x" * 200, big]
    assert not transport.aborted
    assert transport.written.startswith(b"GET / HTTP/1.1\r\n")
