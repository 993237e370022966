"""The client's link to the server: hello, messages in and out, reconnect and resume.

:meth:`Connection.messages` is an async iterator over everything the server sends,
``welcome`` first. When the connection drops after a welcome, it waits with exponential
backoff, connects again and says hello with the resume token, so the session (and the
race) carries on; the iterator just goes on yielding. Every change of link state is
reported through ``on_state`` with a sentence for the screen. What cannot be retried
(unreachable at first, version mismatch, name taken, token refused) ends the iterator
with :class:`ConnectionFailed`, whose message is a sentence, never a traceback.
"""

from __future__ import annotations

import asyncio
import random
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, cast

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from client.wording import describe_error, describe_unreachable, refusal_sentence
from protocol import (
    PROTOCOL_VERSION,
    ClientMessage,
    CloseCode,
    Error,
    ErrorCode,
    Hello,
    Limits,
    Message,
    ProtocolError,
    Role,
    ServerMessage,
    Welcome,
    decode_server,
    encode,
)
from protocol.daily import DailyClientMessage
from protocol.players import PlayerClientMessage
from protocol.tournament import TournamentClientMessage

CLIENT_NAME = "foursquare-tui/0.1"
DEFAULT_SERVER = "ws://127.0.0.1:8765"


def tls_options(url: str, ca_file: str | None) -> dict[str, Any]:
    """Keyword arguments for ``websockets``' ``connect`` to trust ``ca_file`` (a PEM file
    of certificates: a private CA's, or a self-signed server's) besides the system's
    trust store, for a ``wss://`` address. Without ``ca_file`` a ``wss://`` address is
    checked against the system's store alone (and ``SSL_CERT_FILE``, which replaces it).

    Raises ``ValueError`` with a sentence when ``ca_file`` cannot be read.
    """
    if ca_file is None or not url.lower().startswith("wss://"):
        return {}
    context = ssl.create_default_context()
    try:
        context.load_verify_locations(cafile=ca_file)
    except (OSError, ssl.SSLError) as error:
        raise ValueError(f"cannot read certificates from {ca_file}: {error}") from None
    return {"ssl": context}


def server_addresses(given: str | Sequence[str]) -> tuple[str, ...]:
    """The server addresses ``given`` names: one, several separated by commas, or a list
    of either (``--server`` repeated). Raises ``ValueError`` when it names none.

    >>> server_addresses(["ws://a:8765,ws://b:8765", "ws://c:8765"])
    ('ws://a:8765', 'ws://b:8765', 'ws://c:8765')
    """
    items = [given] if isinstance(given, str) else list(given)
    addresses = tuple(
        address.strip() for item in items for address in item.split(",") if address.strip()
    )
    if not addresses:
        raise ValueError("no server address given")
    return addresses


class LinkState(Enum):
    """Where the link to the server stands."""

    CONNECTING = "connecting"
    ONLINE = "online"
    RECONNECTING = "reconnecting"
    CLOSED = "closed"


class ConnectionFailed(Exception):
    """The session cannot go on; ``str(error)`` is a sentence for the player, and
    ``code`` the server's refusal when there was one (a taken name can be chosen again)."""

    def __init__(self, sentence: str, code: ErrorCode | None = None) -> None:
        super().__init__(sentence)
        self.code = code


class _StaleToken(Exception):
    """The server does not know the token saved from an earlier run: start anew."""


@dataclass(frozen=True, slots=True)
class Backoff:
    """Waits between rounds of reconnection attempts: ``first``, doubling, at most
    ``ceiling``, each shortened by a random share of up to ``jitter`` of it.

    The jitter is for the many: when a node of a cluster dies, every client it held loses
    its connection in the same instant, and without it they would all knock on the next
    node together, again and again at the same doubling delays.

    >>> list(Backoff(first=0.5, ceiling=3.0, attempts=5, jitter=0).delays())
    [0.5, 1.0, 2.0, 3.0, 3.0]
    >>> list(Backoff(first=0.5, ceiling=3.0, attempts=3).delays(draw=lambda: 1.0))
    [0.25, 0.5, 1.0]
    """

    first: float = 0.5
    ceiling: float = 8.0
    attempts: int = 10
    """Rounds of attempts (each tries every address once: :meth:`waits`)."""
    jitter: float = 0.5

    def delays(self, draw: Callable[[], float] = random.random) -> Iterator[float]:
        """One delay per round allowed; ``draw`` gives a number in [0, 1) for each."""
        delay = self.first
        for _ in range(self.attempts):
            yield min(delay, self.ceiling) * (1.0 - self.jitter * draw())
            delay *= 2

    def waits(self, addresses: int, draw: Callable[[], float] = random.random
              ) -> Iterator[float]:
        """The wait before each attempt of a reconnection that tries ``addresses``
        addresses in turn: a delay (:meth:`delays`) before the first of each round, and
        none before the others. An address that fails is most often a node that died
        (refused at once), so the next one is tried without waiting; the waits double
        only once every address has failed.

        >>> list(Backoff(first=0.5, attempts=3, jitter=0).waits(2))
        [0.5, 0.0, 1.0, 0.0, 2.0, 0.0]
        """
        for delay in self.delays(draw):
            yield delay
            for _ in range(addresses - 1):
                yield 0.0


DEFAULT_BACKOFF = Backoff()
#: Seconds to open a connection (TCP, the websocket upgrade) and to be answered ``hello``
#: before the attempt counts as failed and the next address is tried.
OPEN_TIMEOUT = 5.0

Sleep = Callable[[float], Awaitable[None]]
StateListener = Callable[[LinkState, str], None]

#: Close codes after which trying again cannot help.
_FINAL_CLOSES = {
    CloseCode.NORMAL: "The server closed the connection.",
    CloseCode.VERSION_MISMATCH: "This client speaks another protocol version than the server.",
    CloseCode.INVALID_TOKEN: "The server no longer knows this session (it may have restarted).",
    CloseCode.REPLACED: "This session was resumed from another window, so this one stopped.",
    CloseCode.PROTOCOL_ERROR: "The server closed the connection: it could not read this client.",
}


class Connection:
    """One player's (or spectator's, or bot's) session with the server."""

    def __init__(
        self,
        url: str | Sequence[str],
        name: str,
        *,
        bot: bool = False,
        role: Role = Role.PLAYER,
        backoff: Backoff = DEFAULT_BACKOFF,
        sleep: Sleep = asyncio.sleep,
        on_state: StateListener | None = None,
        open_timeout: float = OPEN_TIMEOUT,
        protocol_version: int = PROTOCOL_VERSION,
        ca_file: str | None = None,
        resume: str | None = None,
        player_key: str | None = None,
    ) -> None:
        """``url`` is the server's address, or several (a list, or one string with commas):
        the addresses of a cluster's nodes, any of which serves the session. The first is
        tried first; when it cannot be reached, or the connection to it is lost, the next
        one is (round the list, with the backoff between rounds of reconnection).
        ``ca_file`` is trusted besides the system's store for a ``wss://`` address (see
        :func:`tls_options`); with ``player_key`` a new session plays as that claimed
        player (:mod:`client.player_keys`)."""
        self.urls = server_addresses(url)
        self.url = self.urls[0]
        """The address in use (or tried last)."""
        self._tls = {address: tls_options(address, ca_file) for address in self.urls}
        self.name = name
        self.bot = bot
        self.role = role
        self.backoff = backoff
        self.sleep = sleep
        self.on_state = on_state or (lambda state, sentence: None)
        self.open_timeout = open_timeout
        self.protocol_version = protocol_version
        """The version said in ``hello``; only tests say another."""
        self.welcome: Welcome | None = None
        self.saved_token = resume
        """A token saved by an earlier run, said in the first ``hello``; dropped quietly
        if the server no longer knows it."""
        self.player_key = player_key
        self.state = LinkState.CLOSED
        self._socket: ClientConnection | None = None
        self._closing = False
        self.reconnects = 0
        """How many times the session was resumed on a new connection."""

    def _set_state(self, state: LinkState, sentence: str) -> None:
        self.state = state
        self.on_state(state, sentence)

    async def messages(self) -> AsyncIterator[ServerMessage]:
        """Every message from the server, across reconnections; ``welcome`` comes first
        (again after each resume). Raises :class:`ConnectionFailed` when it must stop.
        """
        delays = self.backoff.waits(len(self.urls))
        self._set_state(LinkState.CONNECTING, f"Connecting to {self.url}…")
        untried = len(self.urls)
        """Addresses not yet tried since the last welcome (the first connection tries
        each before giving up)."""
        while not self._closing:
            socket: ClientConnection | None = None
            refusal: str | None = None
            try:
                async with connect(
                    self.url,
                    max_size=Limits().max_server_frame,
                    open_timeout=self.open_timeout,
                    close_timeout=1.0,
                    **self._tls[self.url],
                ) as socket:
                    welcome = await self._greet(socket)
                    delays = self.backoff.waits(len(self.urls))
                    untried = len(self.urls)
                    self._socket = socket
                    self._set_state(LinkState.ONLINE, f"Connected to {self.url} as {welcome.name}.")
                    yield welcome
                    async for frame in socket:
                        try:
                            message = decode_server(frame)
                        except ProtocolError:
                            continue  # one unreadable message must not end the session
                        yield message
            except _StaleToken:
                continue  # say hello again at once, as a new session
            except ConnectionClosed:
                pass  # the close code decides below
            except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as error:
                refusal = refusal_sentence(error)
                untried -= 1
                if self.welcome is None and untried <= 0:
                    self._set_state(LinkState.CLOSED, "")
                    raise ConnectionFailed(describe_unreachable(self.url, error)) from None
            finally:
                self._socket = None
            if self._closing:
                break
            self._stop_if_final(socket)
            self._next_address()
            if self.welcome is None and refusal is not None:
                continue  # the first connection: the next address at once
            try:
                delay = next(delays)
            except StopIteration:
                self._set_state(LinkState.CLOSED, "")
                raise ConnectionFailed(
                    f"Lost the connection to {self.url} and could not get it back "
                    f"after {self.backoff.attempts * len(self.urls)} tries."
                ) from None
            lost = f"{refusal} Trying again" if refusal else "Connection lost; trying again"
            if delay > 0:
                self._set_state(LinkState.RECONNECTING, f"{lost} in {delay:.1f} s…")
            else:
                self._set_state(LinkState.RECONNECTING, f"{lost} at {self.url}…")
            await self.sleep(delay)
            self.reconnects += 1
        self._set_state(LinkState.CLOSED, "Disconnected.")

    def _next_address(self) -> None:
        """Use the next address of the list from now on (the same one if there is one)."""
        self.url = self.urls[(self.urls.index(self.url) + 1) % len(self.urls)]

    def _stop_if_final(self, socket: ClientConnection | None) -> None:
        """Raise :class:`ConnectionFailed` if the way the socket closed rules out a retry."""
        code = socket.close_code if socket is not None else None
        if code is not None and code in _FINAL_CLOSES:
            self._set_state(LinkState.CLOSED, "")
            sentence = _FINAL_CLOSES[CloseCode(code)]
            reason = socket.close_reason if socket is not None else ""
            raise ConnectionFailed(f"{sentence} ({reason})" if reason else sentence)

    async def _greet(self, socket: ClientConnection) -> Welcome:
        """Say hello (resuming if we can) and read the answer."""
        resume = self.welcome.resume if self.welcome is not None else self.saved_token
        hello = Hello(name=self.name, bot=self.bot, role=self.role, resume=resume,
                      player_key=None if resume else self.player_key,
                      client=CLIENT_NAME, protocol_version=self.protocol_version)
        await socket.send(encode(hello))
        try:
            answer = decode_server(await asyncio.wait_for(socket.recv(), self.open_timeout))
        except ProtocolError as error:
            raise ConnectionFailed(
                f"The server answered in a way this client cannot read: {error}."
            ) from None
        if isinstance(answer, Error):
            if answer.code is ErrorCode.INVALID_TOKEN and self.welcome is None and resume:
                self.saved_token = None
                raise _StaleToken
            self._set_state(LinkState.CLOSED, "")
            raise ConnectionFailed(describe_error(answer), answer.code)
        if not isinstance(answer, Welcome):
            raise ConnectionFailed(f"The server answered hello with {answer.TYPE!r}, not welcome.")
        if self.welcome is not None and not answer.resumed:
            raise ConnectionFailed("The server could not resume this session; start again.")
        self.welcome = answer
        return answer

    @property
    def local_port(self) -> int | None:
        """This end's TCP port while connected (to tell connections apart in logs and tests)."""
        socket = self._socket
        if socket is None:
            return None
        port: int = socket.local_address[1]
        return port

    async def send(
        self,
        message: ClientMessage | TournamentClientMessage | PlayerClientMessage
        | DailyClientMessage,
    ) -> bool:
        """Send ``message`` if the link is up; ``False`` if it could not be sent now."""
        socket = self._socket
        if socket is None:
            return False
        try:
            # Tournament messages are registered with the same codec (protocol.tournament).
            await socket.send(encode(cast(Message, message)))
        except ConnectionClosed:
            return False
        return True

    async def close(self) -> None:
        """End the session cleanly; :meth:`messages` then stops."""
        self._closing = True
        socket = self._socket
        if socket is not None:
            await socket.close()
