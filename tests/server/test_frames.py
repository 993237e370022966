"""Incoming frames as the network delivers them: in pieces, several at once, mixed with
control frames, malformed, or sent before the handshake's answer.

The server splits a client's bytes into frames itself once the connection is open (see
``server.connection``), so these check that it answers exactly as the websockets parser
did: every message once, in order, and every malformed frame refused.
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

import pytest
import websockets.version
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode as WebSocketCloseCode
from websockets.frames import Frame, Opcode
from websockets.protocol import Event

from bench.wire import BINARY, PING, client_frame
from bench.wire import WireClient as RawClient
from protocol import (
    Error,
    ErrorCode,
    Hello,
    Ping,
    Pong,
    ServerMessage,
    Welcome,
    decode_server,
    encode,
)
from server.app import RaceServer
from server.connection import RaceConnection
from tests.conftest import LiveServer, fast_config
from tests.server.wire_client import TIMEOUT

#: Not msgpack: each of these payloads is answered with ``bad_frame``.
NOT_MSGPACK = b"\xc1"

#: Piece sizes the stream is cut into, in turn: from one byte to more than a frame.
PIECES = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597]


class PongRecordingConnection(ClientConnection):
    """A client connection that keeps the payload of every pong it is sent."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.pongs: list[bytes] = []

    def process_event(self, event: Event) -> None:
        if isinstance(event, Frame) and event.opcode is Opcode.PONG:
            self.pongs.append(bytes(event.data))
        super().process_event(event)


def stream() -> tuple[bytes, list[type[ServerMessage] | int]]:
    """Frames at each payload-length boundary the server reads (125: the last 7-bit
    length, 126: the first 16-bit one, 4,096: the limit), a control frame between two
    messages, and what the server must answer: a ``pong`` by request id, or an error."""
    frames = [
        client_frame(BINARY, encode(Ping(id=1))),
        client_frame(BINARY, NOT_MSGPACK * 125),
        client_frame(PING, b"still there?"),
        client_frame(BINARY, encode(Ping(id=2))),
        client_frame(BINARY, NOT_MSGPACK * 126),
        client_frame(BINARY, NOT_MSGPACK * 4096),
        client_frame(BINARY, encode(Ping(id=3))),
    ]
    return b"".join(frames), [1, Error, 2, Error, Error, 3]


def splitting(live_server: LiveServer) -> list[bool]:
    """Whether each of the server's connections splits its frames itself."""
    assert live_server.server is not None
    connections = live_server.server.socket_tier.connections
    return [c.splits_frames for c in connections if isinstance(c, RaceConnection)]


async def hello(connection: ClientConnection, name: str) -> None:
    await connection.send(encode(Hello(name=name, bot=True, id=0)))
    assert isinstance(decode_server(await connection.recv()), Welcome)


async def answers(connection: ClientConnection, count: int) -> list[type[ServerMessage] | int]:
    """The next ``count`` messages: a pong as its request id, anything else as its type
    (an error must say ``bad_frame``)."""
    seen: list[type[ServerMessage] | int] = []
    for _ in range(count):
        message = decode_server(await asyncio.wait_for(connection.recv(), TIMEOUT))
        if isinstance(message, Pong):
            assert message.reply_to is not None
            seen.append(message.reply_to)
        else:
            assert isinstance(message, Error) and message.code is ErrorCode.BAD_FRAME, message
            seen.append(type(message))
    return seen


@pytest.mark.parametrize("turn", range(0, len(PIECES), 3))
async def test_frames_in_any_pieces_are_answered_once_each_in_order(
    live_server: LiveServer, turn: int
) -> None:
    data, expected = stream()
    async with connect(
        live_server.url, compression=None, create_connection=PongRecordingConnection
    ) as connection:
        assert isinstance(connection, PongRecordingConnection)
        await hello(connection, f"pieces{turn}")
        sizes = itertools.cycle(PIECES[turn:] + PIECES[:turn])
        at = 0
        while at < len(data):
            size = next(sizes)
            connection.transport.write(data[at : at + size])
            at += size
            await asyncio.sleep(0.002)  # a piece of its own, as far as the network goes
        assert await answers(connection, len(expected)) == expected
        assert connection.pongs == [b"still there?"]
        assert splitting(live_server) == [True]


async def test_many_frames_in_one_piece_are_answered_in_order(live_server: LiveServer) -> None:
    data, expected = stream()
    async with connect(live_server.url, compression=None) as connection:
        await hello(connection, "together")
        connection.transport.write(data * 3)
        assert await answers(connection, 3 * len(expected)) == expected * 3
        assert splitting(live_server) == [True]


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(bytes((0x82, 5)) + b"hello", id="unmasked"),
        pytest.param(bytes((0xC2, 0x80)) + b"1234", id="reserved-bit"),
        pytest.param(bytes((0x83, 0x80)) + b"1234", id="unknown-opcode"),
    ],
)
async def test_a_malformed_frame_closes_the_connection_with_1002(
    live_server: LiveServer, frame: bytes
) -> None:
    async with connect(live_server.url, compression=None) as connection:
        await hello(connection, "malformed")
        connection.transport.write(client_frame(BINARY, encode(Ping(id=1))) + frame)
        assert await answers(connection, 1) == [1]
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(connection.recv(), TIMEOUT)
        assert connection.close_code == WebSocketCloseCode.PROTOCOL_ERROR


class EagerClient(RawClient):
    """A raw client that sends its first frames right behind the upgrade request, before
    the server has answered it."""

    early = client_frame(BINARY, encode(Hello(name="eager", bot=True, id=1))) + client_frame(
        BINARY, encode(Ping(id=2))
    )

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert self.transport is not None
        self.transport.write(self.early[:5])  # ends mid-frame, before the answer
        asyncio.get_running_loop().call_later(0.05, self.transport.write, self.early[5:])


async def test_frames_sent_before_the_handshake_answer_are_answered(
    live_server: LiveServer,
) -> None:
    host, port = live_server.url.removeprefix("ws://").rstrip("/").split(":")
    loop = asyncio.get_running_loop()
    _, client = await loop.create_connection(lambda: EagerClient(f"{host}:{port}", "/"),
                                             host, int(port))
    await asyncio.wait_for(client.handshake, TIMEOUT)
    welcome = decode_server(await asyncio.wait_for(client.recv(), TIMEOUT))
    pong = decode_server(await asyncio.wait_for(client.recv(), TIMEOUT))
    assert isinstance(welcome, Welcome)
    assert isinstance(pong, Pong) and pong.reply_to == 2
    assert splitting(live_server) == [False]  # its frames all went through the parser
    await client.send(encode(Ping(id=3)))  # and what follows is read as well
    pong = decode_server(await asyncio.wait_for(client.recv(), TIMEOUT))
    assert isinstance(pong, Pong) and pong.reply_to == 3
    await client.close()


async def test_the_server_refuses_to_start_on_a_websockets_release_it_was_not_tested_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Splitting frames reads websockets' parser internals: on another release the server
    # says so and does not start, rather than run without its fast path unseen.
    monkeypatch.setattr(websockets.version, "version", "16.0")
    server = RaceServer(fast_config(tmp_path / "db"))
    with pytest.raises(ValueError, match=r"websockets 16\.0 is installed.*tested only with"):
        await server.start()
    assert not (tmp_path / "db").exists()  # refused before the journal was opened
