"""A test's racer or spectator: a real websockets client speaking the protocol.

Every message received is decoded with the client-side decoder (so the server's output
is checked as strictly as a client would) and kept in ``received``.
"""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from typing import TypeVar, cast

from websockets.asyncio.client import ClientConnection, connect

from engine import Card
from protocol import (
    Boards,
    CardToPlace,
    ClientMessage,
    Hello,
    Message,
    MovePlaced,
    RaceFinished,
    Role,
    ServerMessage,
    Welcome,
    decode_server,
    encode,
)
from protocol.daily import DailyClientMessage
from protocol.players import PlayerClientMessage
from tests.server.exposition import exposition_samples

M = TypeVar("M")

#: Long enough for a loaded machine, short enough that a hang fails the test.
TIMEOUT = 10.0


class WireClient:
    """One connection: ``await WireClient.connect(url, "ann")`` says hello and keeps the welcome."""

    def __init__(self, connection: ClientConnection, welcome: Welcome):
        self.connection = connection
        self.welcome = welcome
        self.received: list[ServerMessage] = [welcome]
        self._next_id = 100

    @classmethod
    async def connect(
        cls,
        url: str,
        name: str,
        *,
        bot: bool = False,
        role: Role = Role.PLAYER,
        resume: str | None = None,
    ) -> WireClient:
        """Open a connection and say hello; fails the test if no welcome comes."""
        connection = await connect(url, compression=None, max_size=None)
        await connection.send(encode(Hello(name=name, bot=bot, role=role, resume=resume, id=1)))
        welcome = decode_server(await asyncio.wait_for(connection.recv(), TIMEOUT))
        assert isinstance(welcome, Welcome), welcome
        return cls(connection, welcome)

    @property
    def racer_id(self) -> str:
        """This session's id, which is also its racer id."""
        return self.welcome.session

    def next_id(self) -> int:
        """A fresh request id."""
        self._next_id += 1
        return self._next_id

    async def send(
        self, message: ClientMessage | PlayerClientMessage | DailyClientMessage
    ) -> None:
        """Send one message."""
        await self.connection.send(encode(cast(Message, message)))

    async def receive(self) -> ServerMessage:
        """The next message, decoded strictly."""
        message = decode_server(await asyncio.wait_for(self.connection.recv(), TIMEOUT))
        self.received.append(message)
        return message

    async def expect(self, kind: type[M], **fields: object) -> M:
        """Read until a message of ``kind`` whose ``fields`` match; return it."""
        while True:
            message = await self.receive()
            if isinstance(message, kind) and all(
                getattr(message, name) == value for name, value in fields.items()
            ):
                return message

    def assert_nothing_undrawn(self, stock: list[Card]) -> None:
        """Check that nothing this racer received before the finish holds a card it had
        not drawn by then (``stock`` is the race's stock, top first)."""
        drawn = 0
        for message in self.received:
            if isinstance(message, RaceFinished):
                return  # the seed is revealed: everything may be shown
            if isinstance(message, CardToPlace):
                drawn = max(drawn, message.move)
            cards: list[Card] = []
            if isinstance(message, CardToPlace | MovePlaced):
                cards.append(message.card)
            if isinstance(message, Boards):
                # After a resume the racer's own board comes first: it holds what it placed.
                own = [b.shown for b in message.boards if b.racer == self.racer_id]
                drawn = max([drawn, *own])
                cards += [c for board in message.boards for pile in board.piles for c in pile.cards]
            assert set(cards) <= set(stock[:drawn]), (message, drawn)

    async def close(self) -> None:
        """Close the connection."""
        await self.connection.close()


def http_get(url: str) -> tuple[int, str, str]:
    """GET ``url`` (blocking: call it in a thread): the status, content type and body,
    whatever the status."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


async def read_metric(http_url: str, name: str) -> float:
    """The value of the unlabelled metric ``name`` in the server's ``/metrics`` now."""
    _, _, text = await asyncio.to_thread(http_get, http_url + "/metrics")
    value = exposition_samples(text).get((name, ()))
    if value is None:
        raise AssertionError(f"/metrics has no {name}")
    return value
