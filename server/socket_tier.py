"""The socket tier: connections, hello and resume, decoding, rate limits, admission,
liveness, and the fan-out of the race tier's events to local connections.

:class:`SocketTier` speaks websockets (and HTTP on the same port) to clients and the
bus (:mod:`server.bus`) to the race tier, and nothing else: a decoded request goes out
as a :class:`~server.bus.Request`, and what comes back is events addressed to sessions
and feeds. The tier keeps, for each feed its connections follow (a race, a tournament),
which local connections listen to it as members and which as watchers, so an update is
published once per feed and framed here once for all of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Collection, Coroutine, Sequence
from typing import Any

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request as HttpRequest
from websockets.http11 import Response

import protocol
from protocol import (
    PROTOCOL_VERSION,
    ClientMessage,
    CloseCode,
    ErrorCode,
    Limits,
    ProtocolError,
    Role,
    ServerMessage,
    decode_client,
    encode,
    millis,
)
from protocol.codec import with_field
from protocol.daily import DailyRace, GetDaily, encode_daily
from protocol.names import lookalike_keys
from protocol.players import encode_players
from protocol.schema import show
from server import admission, fanout
from server.admission import Admission
from server.bus import (
    Attach,
    Audience,
    Bus,
    CheckExpiry,
    ClientRequest,
    Deliver,
    Detach,
    Done,
    Event,
    ExpiryChecked,
    Follow,
    Refuse,
    Request,
    ToSession,
    Unfollow,
    answered_with_done,
    session_channel,
)
from server.config import ServerConfig
from server.connection import Message, RaceConnection
from server.daily_desk import DAILY_REQUESTS, DailyDesk
from server.expiry import SessionExpiry, SessionRecords
from server.http_routes import HttpRoutes, WebFiles
from server.journal import PlayerRecord, PlayerSeen
from server.journal_file import JournalRefused
from server.logs import LogBudget, failure, log_event
from server.metrics import Metrics
from server.player_desk import PLAYER_REQUESTS, PlayerDesk, Refusal, refusal
from server.player_store import ClaimedPlayer, find_player, key_digest, name_claimed
from server.rate_limit import TokenBucket
from server.sessions import Session, SessionRegistry, SharedSessions, token_digest
from server.store import StoreError

SERVER_INFO = protocol.ServerInfo(name="foursquare", version="0.1.0")

#: The requests that seat a session in a race: in a cluster, its node checks the store
#: first for a race on another node that ties it (:mod:`server.seats`).
_JOINS = (protocol.QuickRace, protocol.CreateRace, protocol.JoinRace, DailyRace)

#: Said when a request cannot be checked against the cluster's store now.
_STORE_DOWN = "the cluster's database cannot be reached now: send it again shortly"


class _Feed:
    """The local connections that follow one feed, by session."""

    __slots__ = ("members", "watchers")

    def __init__(self) -> None:
        self.members: dict[str, ServerConnection] = {}
        self.watchers: dict[str, ServerConnection] = {}


class SocketTier:
    """Every connection of one server, and what they follow."""

    def __init__(
        self,
        config: ServerConfig,
        metrics: Metrics,
        bus: Bus,
        records: SessionRecords,
        shared: SharedSessions | None = None,
        node_id: str = "",
    ) -> None:
        self.config = config
        self.limits = Limits()
        self.metrics = metrics
        self._bus = bus
        self._records = records
        self._shared = shared
        """A cluster's store of what every node's sessions hold (names, seats); ``None``
        for one process, whose memory sees all of it."""
        self._node_id = node_id
        self._tasks: set[asyncio.Task[Any]] = set()
        self._unreleased: set[str] = set()
        """Sessions of this node whose names' keys could not be let go (see
        :meth:`_release_names`)."""
        self.sessions = SessionRegistry()
        self.players = PlayerDesk(records, config.clock)
        """Claims, leaderboards and profiles, answered from the store."""
        self.daily = DailyDesk(self.players, config)
        """Days' boards of the daily deal, answered from the store."""
        self.admission = Admission(config, refused=metrics.refused)
        metrics.open_connections = lambda: len(self.connections)
        metrics.sessions = lambda: len(self.sessions)
        _show_limits(config, metrics)
        self.connections: set[ServerConnection] = set()
        self._log_budgets: dict[ServerConnection, LogBudget] = {}
        """How many more error lines each open connection may log."""
        self._feeds: dict[str, _Feed] = {}
        self._closing: set[asyncio.Task[None]] = set()
        """Connections being closed in the background (held so the tasks are not lost)."""
        self._tickets = 0
        self._waiting: dict[int, asyncio.Future[None]] = {}
        """Requests the race tier answers with a :class:`~server.bus.Done`, by ticket."""
        self._expiry: SessionExpiry | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.stopping = False
        self.http = HttpRoutes(
            WebFiles({}),
            stopping=lambda: self.stopping,
            metrics=metrics if config.metrics_port is None else None,
        )
        """Plain HTTP on the game port; the server reads the web client's files into it
        at start."""

    # ------------------------------------------------------------ lifecycle

    def start(self, players: Sequence[PlayerRecord]) -> None:
        """Know the stored sessions (loaded in the order they were last seen), start
        expiring idle ones, and take the race tier's events."""
        for player in players:
            self._know(player)
        self._loop = asyncio.get_running_loop()
        self._expiry = SessionExpiry(
            self.config, self.sessions, self._records, self.metrics, self._ask_expiry
        )

    def _know(self, player: PlayerRecord) -> Session:
        """Register a stored session (it has no connection yet)."""
        session = Session(
            player.player_id, player.token_hash, player.name, player.bot, player.role,
            player.claimed_by,
        )
        self.sessions.add(
            session,
            idle_since=player.created_at if player.last_seen is None else player.last_seen,
        )
        return session

    def attach_again(self, session_ids: Collection[str] | None = None) -> None:
        """Send the race tier these sessions again, those connected here (``None``: every
        connected session: the lobby of a cluster changed hands, or this node's bus is
        back after a cut): it learns who is present, and sends each where it stands (a
        node of a cluster took their races over). After a change of every session,
        whatever waited for an answer from the race tier before is let go (that answer
        may never come)."""
        if session_ids is None:
            self._release_waiting()
            sessions = list(self.sessions.connected())
        else:
            found = (self.sessions.get(session_id) for session_id in session_ids)
            sessions = [s for s in found if s is not None and s.connection is not None]
        for session in sessions:
            ticket, _ = self._ticket()
            self._bus.send(Attach(session.caller, True, ticket, session.attached_at))

    def _release_waiting(self) -> None:
        waiting, self._waiting = self._waiting, {}
        for done in waiting.values():
            if not done.done():
                done.set_result(None)

    def begin_stopping(self) -> None:
        """Answer no more requests (each is refused with ``shutting_down``), expire no
        more sessions."""
        self.stopping = True
        if self._expiry is not None:
            self._expiry.stop()

    def seen_now(self) -> list[PlayerSeen]:
        """A record for each connected session: seen until now (their idle time starts
        at a shutdown)."""
        now = self._now()
        return [PlayerSeen(s.session_id, now) for s in self.sessions.connected()]

    async def close_all(self, code: CloseCode, reason: str) -> None:
        """Close every connection, waiting at most ``close_timeout`` for them all, then
        drop the ones still open; and stop waiting for answers that will not come.

        A connection's own ``close_timeout`` bounds the wait for an answer to its close
        frame, but not the wait before it: a client that stopped reading leaves the
        close frame behind a full write buffer, and websockets waits for that to drain
        first, for as long as the client does not read.
        """
        self._release_waiting()
        connections = list(self.connections)
        closing = [asyncio.create_task(c.close(code, reason)) for c in connections]
        if not closing:
            return
        _, late = await asyncio.wait(closing, timeout=self.config.close_timeout)
        for task in late:
            task.cancel()
        for connection in connections:
            if connection.transport is not None and not connection.transport.is_closing():
                connection.transport.abort()
        await asyncio.gather(*closing, return_exceptions=True)

    # ----------------------------------------------------------------- HTTP

    def process_request(
        self, connection: ServerConnection, request: HttpRequest
    ) -> Response | None:
        """Answer plain HTTP (health, metrics, the web client: :mod:`server.http_routes`);
        admit a websocket handshake, or refuse it at a cap."""
        answer = self.http.answer(request)
        if answer is not None:
            return answer
        assert isinstance(connection, RaceConnection)  # serve() builds them (see RaceServer)
        address = self.admission.client_address(
            _peer_host(connection), request.headers.get_all("X-Forwarded-For")
        )
        refusal = self.admission.admit(address)
        if refusal is not None:
            # Counted in /metrics, not logged: a client refused at a cap could otherwise
            # write a log line per request.
            return connection.respond(refusal.status, refusal.sentence + "\n")
        connection.admitted(address, lambda: self.admission.release(address))
        return None

    # ------------------------------------------------------------ websocket

    async def handle(self, connection: ServerConnection) -> None:
        """Serve one websocket connection until it closes."""
        assert isinstance(connection, RaceConnection)  # serve() builds them (see RaceServer)
        self.connections.add(connection)
        self.metrics.connections_total += 1
        log_budget = self._log_budgets[connection] = LogBudget(
            self.config.logged_errors_per_connection
        )
        log_event("connection_open", logging.INFO, connection=str(connection.id),
                  **_remote(connection))
        conversation = _Conversation(self, connection)
        try:
            await conversation.run()
        finally:
            self.connections.discard(connection)
            del self._log_budgets[connection]
            session = conversation.session
            if session is not None and session.connection is connection:
                self._detach(session)
            log_event(
                "connection_close",
                connection=str(connection.id),
                session=session.session_id if session else None,
                code=connection.close_code,
                reason=show(connection.close_reason),  # the client's words, as it closed
                errors_not_logged=log_budget.not_logged,
            )

    def log_error(
        self, connection: ServerConnection, event: str, level: int = logging.INFO, **fields: Any
    ) -> None:
        """Log an error a connection caused, within its budget (see :class:`LogBudget`)."""
        budget = self._log_budgets.get(connection)
        if budget is None or budget.spend():
            log_event(event, level, connection=str(connection.id), **fields)

    def close_later(self, connection: ServerConnection, code: CloseCode, reason: str) -> None:
        """Close ``connection`` in the background (the closing handshake takes a round trip)."""
        closing = asyncio.create_task(connection.close(code, reason))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)

    def _name_taken(self, hello: protocol.Hello) -> ProtocolError | None:
        """The refusal of a new human player's name that looks the same as a connected
        human player's (ignoring case and look-alike letters: ``Ann`` with a Cyrillic A
        is ``Ann``).

        Two people called "ann" in one race could not tell themselves apart. Bots are
        labelled as bots wherever their names show and are named by programs (two
        ``foursquare bot`` runs both start at ``bot-1``), and spectators never show in a
        race, so only human players need distinct names. A resume keeps its name.
        """
        if (
            hello.resume is not None
            or hello.player_key is not None  # its name is the player's: see _player_of
            or not _named(hello.bot, hello.role)
            or not self.sessions.name_in_use(hello.name)
        ):
            return None
        return ProtocolError(
            ErrorCode.NAME_TAKEN,
            f"the name {show(hello.name)} looks the same as a connected player's name "
            "(ignoring case and look-alike letters): choose another",
            in_reply_to="hello",
            reply_to=hello.id,
        )

    async def _player_of(self, hello: protocol.Hello) -> tuple[str, bool, str | None]:
        """The name, bot flag and claimed player a new session plays under: the player
        ``hello.player_key`` belongs to (its name; a bot once, a bot always), or a guest
        under ``hello.name``, which no claimed player's name may look like. Raises
        :class:`Refusal` for an unknown key, or a name in use or claimed."""
        if hello.player_key is None:
            name, bot, player = hello.name, hello.bot, None
            if _named(bot, hello.role) and await self.players.job(
                functools.partial(name_claimed, name), hello
            ):
                raise refusal(
                    ErrorCode.NAME_TAKEN,
                    f"the name {show(name)} looks the same as a claimed player's name "
                    "(ignoring case and look-alike letters): present that player's key "
                    "(hello.player_key), or choose another",
                    hello,
                )
        else:
            found: ClaimedPlayer | None = await self.players.job(
                functools.partial(find_player, key_digest(hello.player_key)), hello
            )
            if found is None:
                raise refusal(
                    ErrorCode.UNKNOWN_PLAYER_KEY,
                    "no player has this key (the value is not repeated): check it, or say "
                    "hello without hello.player_key to play as a guest",
                    hello,
                )
            name, bot, player = found.name, hello.bot or found.bot, found.player_id
        # Checked again after the store's answer: another hello may have come meanwhile.
        if _named(bot, hello.role) and self.sessions.name_in_use(name):
            raise refusal(
                ErrorCode.NAME_TAKEN,
                f"the name {show(name)} looks the same as a connected player's name "
                "(ignoring case and look-alike letters): "
                + ("your player is connected elsewhere" if player else "choose another"),
                hello,
            )
        return name, bot, player

    def _too_many_new_sessions(
        self, connection: RaceConnection, hello: protocol.Hello
    ) -> ProtocolError | None:
        """The refusal of a new session past its address's allowance
        (``ServerConfig.new_sessions_per_minute``); a resume is never refused here."""
        if hello.resume is not None:
            return None
        if self.admission.allow_new_session(connection.client_address, self._now()):
            return None
        return ProtocolError(
            ErrorCode.SERVER_BUSY,
            "too many new sessions from your address in the last minute; try again soon",
            in_reply_to="hello",
            reply_to=hello.id,
        )

    async def _hello(self, connection: ServerConnection, hello: protocol.Hello) -> Session | None:
        if self.stopping:
            await self._refuse_and_close(
                connection,
                ProtocolError(ErrorCode.SHUTTING_DOWN, "the server is shutting down"),
                CloseCode.GOING_AWAY,
            )
            return None
        resumed = hello.resume is not None
        if hello.resume is not None:
            found = self.sessions.resume(hello.resume)
            if found is None and self.config.cluster is not None:
                # Made on another node of the cluster: every node reads sessions from the
                # shared store.
                try:
                    stored = await self._records.read_player(token_digest(hello.resume))
                except JournalRefused:
                    await self._refuse_and_close(
                        connection,
                        ProtocolError(
                            ErrorCode.UNAVAILABLE,
                            "sessions cannot be read now (the database cannot be reached): "
                            "resume again shortly",
                            in_reply_to="hello",
                            reply_to=hello.id,
                        ),
                        CloseCode.GOING_AWAY,
                    )
                    return None
                if stored is not None and self.sessions.get(stored.player_id) is None:
                    self._know(stored)
                # Looked up again even if it was known meanwhile: an earlier hello with
                # this token (its connection closed while its read waited, a failover's
                # resumes being many) may have registered it during this read.
                found = self.sessions.resume(hello.resume)
            if found is None:
                await self._refuse_and_close(
                    connection,
                    ProtocolError(
                        ErrorCode.INVALID_TOKEN,
                        "this resume token is unknown or expired: say hello without it",
                        in_reply_to="hello",
                        reply_to=hello.id,
                    ),
                    CloseCode.INVALID_TOKEN,
                )
                return None
            session, token = found, hello.resume
            previous = session.connection
            if previous is not None and previous is not connection:
                self._detach(session, replaced=True)
                self.close_later(previous, CloseCode.REPLACED, "resumed elsewhere")
            self._records.submit(PlayerSeen(session.session_id, self._now()))
            if self._shared is not None and _named(session.bot, session.role):
                self._background(self._hold_names_again(session))
        else:
            name, bot, player = await self._player_of(hello)
            now = self._now()
            session, token = self.sessions.create(name, bot, hello.role, now, player)
            holds_name = self._shared is not None and _named(bot, hello.role)
            if holds_name:
                await self._hold_new_name(session, hello)
            try:
                await self._records.write(
                    PlayerRecord(
                        session.session_id,
                        session.token_hash,
                        session.name,
                        session.bot,
                        now,
                        session.role,
                        last_seen=now,
                        claimed_by=player,
                    )
                )
            except BaseException:
                if holds_name:
                    self.sessions.reserve_name(session.name, False)
                    self._background(self._release_names(session.session_id))
                raise
            if holds_name:
                self.sessions.reserve_name(session.name, False)  # counted as connected now
        session.attached_at, session.moved_at = self._now(), None
        self.sessions.attach(session, connection)
        self._bus.subscribe(session_channel(session.session_id))
        log_event(
            "hello",
            connection=str(connection.id),
            session=session.session_id,
            name=session.name,
            bot=session.bot,
            role=session.role.value,
            resumed=resumed,
            client=hello.client,
        )
        welcome = protocol.Welcome(
            session=session.session_id,
            resume=token,
            name=session.name,
            role=session.role,
            bot=session.bot,
            protocol_version=PROTOCOL_VERSION,
            server=SERVER_INFO,
            server_time=millis(self._now()),
            resumed=resumed,
            player=session.player,
            reply_to=hello.id,
        )
        self._send(connection, welcome)
        # The race tier follows its feeds again and, after a resume, sends where it stands.
        ticket, done = self._ticket()
        self._bus.send(Attach(session.caller, resumed, ticket, session.attached_at))
        await done
        return session

    async def _hold_new_name(self, session: Session, hello: protocol.Hello) -> None:
        """In a cluster: hold the new ``session``'s name in the store for it, every
        look-alike key or none, counted here as a connected player's meanwhile (and until
        the caller lets the reservation go). Raises :class:`Refusal` (the session
        forgotten) when a session connected to another node that lives holds one, or the
        store cannot be written."""
        assert self._shared is not None
        self.sessions.reserve_name(session.name)
        try:
            held: bool | None = await self._claim_name(session)
        except StoreError:
            held = None
        if held:
            if self._unreleased:
                self._background(self._release_names())  # the store answers again
            return
        self.sessions.reserve_name(session.name, False)
        self.sessions.remove(session)
        if held is None:
            raise refusal(ErrorCode.UNAVAILABLE, _STORE_DOWN, hello)
        raise refusal(
            ErrorCode.NAME_TAKEN,
            f"the name {show(session.name)} looks the same as a connected player's name "
            "(ignoring case and look-alike letters): "
            + ("your player is connected elsewhere" if session.player else "choose another"),
            hello,
        )

    async def _claim_name(self, session: Session) -> bool:
        """Hold every look-alike key of ``session``'s name for it, or none. A key held
        by a session of this node that is not connected here any more (its release was
        lost: the store was down as it left) is let go first."""
        assert self._shared is not None
        looks = lookalike_keys(session.name)
        for attempt in (1, 2):
            if await self._shared.claim_names(
                session.session_id, self._node_id, looks, all_or_none=True
            ):
                return True
            if attempt == 2:
                break
            stale = [
                player_id for player_id, node in await self._shared.name_holders(looks)
                if node == self._node_id and self._left_here(player_id)
            ]
            if not stale:
                break
            for player_id in stale:
                await self._shared.release_names(player_id, self._node_id)
        return False

    def _connected_here(self, session_id: str) -> bool:
        found = self.sessions.get(session_id)
        return found is not None and found.connection is not None

    def _left_here(self, session_id: str) -> bool:
        """Whether ``session_id`` left this node and holds nothing here: not connected,
        nor moved to another node lately (whose store is about to hold its name for it
        there: :meth:`_hold_names_again`)."""
        found = self.sessions.get(session_id)
        if found is None:
            return True
        moved = found.moved_at is not None and (
            self._now() - found.moved_at < self.config.failover_wait
        )
        return found.connection is None and not moved

    async def _hold_names_again(self, session: Session) -> None:
        """In a cluster: a resumed session holds its name's keys again, here (those no
        other connected session holds: a resume keeps its name, as on one server)."""
        assert self._shared is not None
        with contextlib.suppress(StoreError):
            await self._shared.claim_names(
                session.session_id, self._node_id, lookalike_keys(session.name),
                all_or_none=False,
            )

    async def _release_names(self, session_id: str | None = None) -> None:
        """In a cluster: ``session_id`` holds its name's keys here no more, nor do the
        sessions whose release failed before and that are not connected here again (a
        store that cannot be written now leaves them for the next release or claim on
        this node; they are free anyway once this node is gone, and let go by its next
        hello of such a name: :meth:`_claim_name`)."""
        assert self._shared is not None
        if session_id is not None:
            self._unreleased.add(session_id)
        for player_id in list(self._unreleased):
            if self._connected_here(player_id):
                self._unreleased.discard(player_id)  # (back here: its keys are its own)
                continue
            try:
                await self._shared.release_names(player_id, self._node_id)
            except StoreError:
                return
            self._unreleased.discard(player_id)

    def attached_elsewhere(self, attach: Attach) -> None:
        """In a cluster: session ``attach.caller`` resumed on another node. A connection
        of it here that said hello before is closed with 4006, as a resume on one server
        closes the old connection (a re-sent Attach of an older connection closes
        nothing newer)."""
        session = self.sessions.get(attach.caller.session_id)
        if session is None or session.connection is None or session.attached_at >= attach.since:
            return
        previous = session.connection
        self._detach(session, replaced=True)
        session.moved_at = self._now()
        self.close_later(previous, CloseCode.REPLACED, "resumed elsewhere")

    def _background(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run ``work`` as a task of its own (held, so it is not lost)."""
        assert self._loop is not None
        task = self._loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _detach(self, session: Session, replaced: bool = False) -> None:
        """The session's connection is gone (or ``replaced`` by another): stop feeding
        it, and tell the race tier."""
        now = self._now()
        self.sessions.detach(session, now)
        self._bus.unsubscribe(session_channel(session.session_id))
        for feed_id in session.feeds:
            feed = self._feeds.get(feed_id)
            if feed is not None:
                feed.members.pop(session.session_id, None)
                feed.watchers.pop(session.session_id, None)
                self._drop_if_unfollowed(feed_id, feed)
        session.feeds.clear()
        if self.stopping:
            return  # (the shutdown journals every session at once, and races stand still)
        if not replaced:
            self._records.submit(PlayerSeen(session.session_id, now))
            if self._shared is not None and _named(session.bot, session.role):
                self._background(self._release_names(session.session_id))
        self._bus.send(Detach(session.session_id, replaced))

    # ------------------------------------------------------------- requests

    def answer(
        self,
        connection: ServerConnection,
        session: Session,
        message: ClientMessage,
        received_at: float,
    ) -> asyncio.Future[None] | None:
        """Answer ``message``: here (a ``ping``, a second ``hello``, anything while the
        server stops), or by the race tier. Returns what to wait for before the
        connection's next message, if anything."""
        if self.stopping:
            self._refuse_request(connection, message, ErrorCode.SHUTTING_DOWN,
                                 "the server is shutting down")
            return None
        if isinstance(message, protocol.Ping):
            pong = protocol.Pong(server_time=millis(self._now()), reply_to=message.id)
            self._send(connection, pong)
            return None
        if isinstance(message, protocol.Hello):
            self._refuse_request(connection, message, ErrorCode.ALREADY_WELCOMED,
                                 "this connection has already said hello")
            return None
        if isinstance(message, (*PLAYER_REQUESTS, *DAILY_REQUESTS)):
            assert self._loop is not None
            return self._loop.create_task(self._answer_player(connection, session, message))
        if self._shared is not None and isinstance(message, _JOINS):
            assert self._loop is not None
            return self._loop.create_task(self._join_anywhere(connection, session, message))
        if answered_with_done(message):
            ticket, done = self._ticket()
            self._bus.send(Request(session.caller, message, None, ticket))
            return done
        self._bus.send(Request(
            session.caller, message, received_at if isinstance(message, protocol.Place) else None
        ))
        return None

    async def _join_anywhere(
        self,
        connection: ServerConnection,
        session: Session,
        message: protocol.QuickRace | protocol.CreateRace | protocol.JoinRace | DailyRace,
    ) -> None:
        """In a cluster: refuse a join (``already_joined``) when the store says a race on
        any node ties the session, as one server's race tier does; otherwise send it, and
        hold the connection's next message until its seat is stored (at most
        ``failover_wait``), so that a second join is checked against it."""
        assert self._shared is not None
        try:
            seat = await self._shared.seat_of(session.session_id)
        except (StoreError, JournalRefused):
            self._refuse_request(connection, message, ErrorCode.UNAVAILABLE, _STORE_DOWN)
            return
        joining = message.race.upper() if isinstance(message, protocol.JoinRace) else None
        if seat is not None and seat != joining and session.role is Role.PLAYER:
            # (In the race it asks to join, its race tier answers: "already in this race".)
            self._refuse_request(
                connection, message, ErrorCode.ALREADY_JOINED,
                f"you are already in race {seat}: leave or finish it first",
            )
            return
        ticket, done = self._ticket()
        self._bus.send(Request(session.caller, message, None, ticket))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(done), self.config.failover_wait)
        self._waiting.pop(ticket, None)

    async def _answer_player(
        self, connection: ServerConnection, session: Session, message: ClientRequest
    ) -> None:
        """Answer a players' request (:class:`~server.player_desk.PlayerDesk`) or a
        day's board (:class:`~server.daily_desk.DailyDesk`), from the store."""
        try:
            if isinstance(message, GetDaily):
                frame = encode_daily(await self.daily.answer(session, message))
            else:
                frame = encode_players(await self.players.answer(session, message))
        except Refusal as refused:
            self._refuse(connection, refused.error)
            return
        fanout.send((connection,), frame, self.config.send_buffer_limit)

    def _refuse_request(
        self, connection: ServerConnection, message: ClientRequest, code: ErrorCode, text: str
    ) -> None:
        """Answer ``message`` with an ``error`` (``code``, ``text``)."""
        error = ProtocolError(code, text, in_reply_to=message.TYPE, reply_to=message.id)
        self._refuse(connection, error)

    def _ticket(self) -> tuple[int, asyncio.Future[None]]:
        """A new ticket, and the future its :class:`~server.bus.Done` resolves."""
        assert self._loop is not None, "the socket tier has not started"
        self._tickets += 1
        done = self._waiting[self._tickets] = self._loop.create_future()
        return self._tickets, done

    def refusal(self, connection: ServerConnection, error: ProtocolError) -> protocol.Error:
        """The ``error`` message answering ``error`` on ``connection``, counted and logged.

        Every refusal goes through here (the race tier's too). The sentence it logs
        and sends quotes what the client sent only through :func:`protocol.schema.show`,
        and never a secret field's value (see :class:`protocol.schema.Token`).
        """
        self.metrics.errors[error.code.value] += 1
        self.log_error(
            connection,
            "error_sent",
            code=error.code.value,
            message=error.message,
            in_reply_to=error.in_reply_to,
        )
        return protocol.Error(
            code=error.code,
            message=error.message[:1000],
            in_reply_to=error.in_reply_to,
            reply_to=error.reply_to,
        )

    def _refuse(self, connection: ServerConnection, error: ProtocolError) -> None:
        """Send ``error`` as an ``error`` message."""
        # Like every other answer, without waiting for the client to read: a client that
        # stops reading must be cut off (see fanout), not hold its handler here for good.
        self._send(connection, self.refusal(connection, error))

    async def _refuse_and_close(
        self, connection: ServerConnection, error: ProtocolError, close_code: CloseCode
    ) -> None:
        """Send ``error``, then close the connection with ``close_code``."""
        self._refuse(connection, error)
        await connection.close(close_code, error.code.value)

    def _send(self, connection: ServerConnection, message: ServerMessage) -> None:
        fanout.send((connection,), encode(message), self.config.send_buffer_limit)

    # --------------------------------------------------------------- events

    def on_events(self, events: Sequence[Event]) -> None:
        """Carry out a batch of the race tier's events: each connection's frames of the
        batch go in one write."""
        frames = fanout.Frames(self.config.send_buffer_limit)
        try:
            for event in events:
                try:
                    self._on_event(event, frames)
                except Exception as error:  # one bad event must not cost the batch
                    log_event("internal_error", logging.ERROR, error=failure(error))
        finally:
            frames.flush()

    def _on_event(self, event: Event, frames: fanout.Frames) -> None:
        if isinstance(event, Deliver):
            if isinstance(event.to, ToSession):
                self._to_session(event, event.to.session_id, frames)
            else:
                feed = self._feeds.get(event.to.feed)
                if feed is not None:
                    self._to_feed(event, feed, event.to.audience, frames)
        elif isinstance(event, Refuse):
            self._refused(event, frames)
        elif isinstance(event, Follow):
            self._follow(event)
        elif isinstance(event, Unfollow):
            self._unfollow(event)
        elif isinstance(event, Done):
            waiting = self._waiting.pop(event.ticket, None)
            if waiting is not None and not waiting.done():
                waiting.set_result(None)
        elif isinstance(event, ExpiryChecked) and self._expiry is not None:
            if self._shared is not None and event.forget:
                self._background(self._expiry_checked_anywhere(event))
            else:
                self._expiry.checked(event.keep, event.forget)

    async def _expiry_checked_anywhere(self, event: ExpiryChecked) -> None:
        """In a cluster: this node's race tier answered for its own races; the store
        answers for the others' (a race on any node that ties a session, a tournament not
        over that it is entered in). Every session is kept when it cannot be read."""
        assert self._shared is not None and self._expiry is not None
        try:
            held = await self._shared.held(event.forget)
        except (StoreError, JournalRefused):
            held = set(event.forget)
        self._expiry.checked(
            (*event.keep, *(s for s in event.forget if s in held)),
            tuple(s for s in event.forget if s not in held),
        )

    def _to_session(self, event: Deliver, session_id: str, frames: fanout.Frames) -> None:
        session = self.sessions.get(session_id)
        connection = session.connection if session is not None else None
        if connection is None:
            return
        if event.you:
            frames.add_parts(connection, *with_field(event.payload, "you", session_id))
        else:
            frames.add((connection,), event.payload)
        if event.received_at is not None:
            self.metrics.moves_total += 1
            self.metrics.move_latency.observe(self._loop_time() - event.received_at)

    def _to_feed(
        self, event: Deliver, feed: _Feed, audience: Audience, frames: fanout.Frames
    ) -> None:
        """Frame ``event`` for the feed's listeners: members (each with its own ``you``
        if the event says so), and watchers (but the members among them, for everyone)."""
        payload, skip = event.payload, event.skip
        members: Collection[ServerConnection] = ()
        if audience is not Audience.WATCHERS:
            if event.you:
                for session_id, connection in feed.members.items():
                    if session_id != skip:
                        frames.add_parts(connection, *with_field(payload, "you", session_id))
            elif skip is None:
                members = feed.members.values()
            else:
                members = [c for s, c in feed.members.items() if s != skip]
        watchers: Collection[ServerConnection] = ()
        if audience is not Audience.MEMBERS and feed.watchers:
            shown = feed.members if audience is Audience.EVERYONE else {}
            watchers = [c for s, c in feed.watchers.items() if s not in shown and s != skip]
        if members and watchers:
            frames.add([*members, *watchers], payload)
        elif members or watchers:
            frames.add(members or watchers, payload)

    def _refused(self, event: Refuse, frames: fanout.Frames) -> None:
        session = self.sessions.get(event.session_id)
        connection = session.connection if session is not None else None
        if connection is None:
            return
        if event.failure is not None:
            self.log_error(connection, "internal_error", logging.ERROR,
                           message=event.in_reply_to, error=event.failure)
        error = ProtocolError(
            event.code, event.message, in_reply_to=event.in_reply_to, reply_to=event.reply_to
        )
        frames.add((connection,), encode(self.refusal(connection, error)))

    def _follow(self, event: Follow) -> None:
        session = self.sessions.get(event.session_id)
        if session is None or session.connection is None:
            return  # followed again when it comes back (the race tier sees to it)
        feed = self._feeds.get(event.feed)
        if feed is None:
            feed = self._feeds[event.feed] = _Feed()
            self._bus.subscribe(event.feed)
        listeners = feed.members if event.member else feed.watchers
        listeners[event.session_id] = session.connection
        session.feeds[event.feed] = None

    def _unfollow(self, event: Unfollow) -> None:
        feed = self._feeds.get(event.feed)
        if feed is None:
            return
        (feed.members if event.member else feed.watchers).pop(event.session_id, None)
        session = self.sessions.get(event.session_id)
        if session is not None and not (
            event.session_id in feed.members or event.session_id in feed.watchers
        ):
            session.feeds.pop(event.feed, None)
        self._drop_if_unfollowed(event.feed, feed)

    def _drop_if_unfollowed(self, feed_id: str, feed: _Feed) -> None:
        if not feed.members and not feed.watchers:
            del self._feeds[feed_id]
            self._bus.unsubscribe(feed_id)

    def _ask_expiry(self, session_ids: tuple[str, ...]) -> None:
        self._bus.send(CheckExpiry(session_ids))

    # ---------------------------------------------------------------- misc

    def _now(self) -> float:
        return self.config.clock()

    def _loop_time(self) -> float:
        assert self._loop is not None
        return self._loop.time()


class _Conversation:
    """One connection's messages, each handled as it arrives (see :mod:`server.connection`).

    First a ``hello`` (within the handshake timeout), then everything else, rate-limited
    and checked. An answer that must wait (the journal write of a new player, the search
    for a winnable deal) holds the connection's later messages until it is done, so a
    connection's messages are still handled in the order they came.
    """

    __slots__ = (
        "_bad",
        "_config",
        "_connection",
        "_early_bucket",
        "_ending",
        "_greeting_timer",
        "_liveness",
        "_loop",
        "_tier",
        "_waiting_on",
        "session",
    )

    def __init__(self, tier: SocketTier, connection: RaceConnection):
        self._tier = tier
        self._connection = connection
        self._config = tier.config
        self._loop = asyncio.get_running_loop()
        self.session: Session | None = None
        """Set once ``hello`` is answered."""
        self._bad = 0
        self._early_bucket = TokenBucket(
            self._config.rate_per_second, self._config.rate_burst, tier._now()
        )
        """The rate limit until ``hello`` is answered; then the session's own."""
        self._liveness: _Liveness | None = None
        self._ending = False
        """Set once the server closes the connection: later messages are ignored."""
        self._waiting_on: asyncio.Future[Any] | None = None
        self._greeting_timer = self._loop.call_later(
            self._config.handshake_timeout, self._no_hello_in_time
        )

    async def run(self) -> None:
        """Take the connection's messages until it has closed and its last answer is done."""
        self._connection.deliver_to(self._take)
        try:
            await self._connection.wait_closed()
            if self._waiting_on is not None:
                await asyncio.wait([self._waiting_on])
        finally:
            self._greeting_timer.cancel()
            if self._liveness is not None:
                self._liveness.cancel()

    def _take(self, frame: Message) -> None:
        if self._ending:
            return
        try:
            if self.session is None:
                self._greet(frame)
            else:
                self._converse(self.session, frame)
        except Exception as error:  # called from the network callback: never let it raise
            self._tier.log_error(self._connection, "internal_error", logging.ERROR,
                                 error=failure(error))

    def _greet(self, frame: Message) -> None:
        tier, connection = self._tier, self._connection
        message = self._decode(frame)
        if self._over_rate(self._early_bucket, message):
            return
        if isinstance(message, ProtocolError):
            self._refuse_bad(message, "too many bad frames")
            return
        if isinstance(message, protocol.Hello):
            refusal = tier._name_taken(message) or tier._too_many_new_sessions(
                connection, message
            )
            if refusal is None:
                self._wait_on(self._loop.create_task(self._hello(message)))
            else:
                tier._refuse(connection, refusal)  # it may say hello again
            return
        # Counted as a bad frame: a client that never says hello must not be answered
        # for good (each answer costs an error message, and a log line while few).
        self._refuse_bad(
            ProtocolError(
                ErrorCode.HELLO_REQUIRED,
                f"say hello first, not {message.TYPE}",
                in_reply_to=message.TYPE,
                reply_to=message.id,
            ),
            "too many frames before hello",
        )

    async def _hello(self, hello: protocol.Hello) -> None:
        try:
            session = await self._tier._hello(self._connection, hello)
        except Refusal as refused:
            self._tier._refuse(self._connection, refused.error)  # it may say hello again
            return
        if session is None:
            self._ending = True  # refused, and closed
            return
        self._greeting_timer.cancel()
        if session.bucket is None:  # a resumed session goes on with its own
            session.bucket = TokenBucket(
                self._config.rate_per_second, self._config.rate_burst, self._tier._now()
            )
        self._liveness = _Liveness(self._connection, self._config, self._tier)
        self.session = session

    def _converse(self, session: Session, frame: Message) -> None:
        assert session.bucket is not None and self._liveness is not None  # set at hello
        received_at = self._liveness.heard = self._loop.time()
        message = self._decode(frame)
        if self._over_rate(session.bucket, message):
            return
        if isinstance(message, ProtocolError):
            self._refuse_bad(message, "too many bad messages")
            return
        waiting = self._tier.answer(self._connection, session, message, received_at)
        if waiting is not None:
            self._wait_on(waiting)

    def _decode(self, frame: Message) -> ClientMessage | ProtocolError:
        """The message ``frame`` holds, or why it holds none."""
        try:
            return decode_client(frame, self._tier.limits)
        except ProtocolError as error:
            return error

    def _over_rate(self, bucket: TokenBucket, message: ClientMessage | ProtocolError) -> bool:
        """Whether a frame is over the rate limit: then it is answered with
        ``rate_limited``, and after too many the connection is closed with 4005.

        The frame is decoded first (at most 4 KiB, and only ``rate_strikes`` frames past
        the allowance before the connection closes), so the refusal names what it
        answers, as every other error does: a client waiting for the answer to its
        request id hears that it was refused. A frame that does not decode is answered
        with what could be read of it (its ``type`` and ``id``, or neither), and is not
        counted as malformed.
        """
        if bucket.allow(self._tier._now()):
            return False
        if isinstance(message, ProtocolError):
            in_reply_to, reply_to = message.in_reply_to, message.reply_to
        else:
            in_reply_to, reply_to = message.TYPE, message.id
        self._tier._refuse(
            self._connection,
            ProtocolError(
                ErrorCode.RATE_LIMITED,
                "too many messages: slow down",
                in_reply_to=in_reply_to,
                reply_to=reply_to,
            ),
        )
        if bucket.strikes >= self._config.rate_strikes:
            self._end(CloseCode.RATE_LIMITED, "rate limit")
        return True

    def _refuse_bad(self, error: ProtocolError, too_many: str) -> None:
        """Answer a frame that failed to decode; close the connection when the error
        says so, or after too many."""
        self._tier._refuse(self._connection, error)
        if error.close_code is not None:
            self._end(error.close_code, error.code.value)
            return
        self._bad += 1
        if self._bad >= self._config.bad_messages:
            self._end(CloseCode.PROTOCOL_ERROR, too_many)

    def _wait_on(self, answer: asyncio.Future[Any]) -> None:
        """Hold the connection's later messages until ``answer`` is done."""
        self._connection.hold()
        self._waiting_on = answer
        answer.add_done_callback(self._answered)

    def _answered(self, done: asyncio.Future[Any]) -> None:
        self._waiting_on = None
        if not done.cancelled() and (error := done.exception()) is not None:
            log_event("internal_error", logging.ERROR, error=failure(error))
        self._connection.release()

    def _no_hello_in_time(self) -> None:
        if self.session is None:
            self._end(CloseCode.HANDSHAKE_TIMEOUT, "no hello in time")

    def _end(self, code: CloseCode, reason: str) -> None:
        if not self._ending:
            self._ending = True
            self._tier.close_later(self._connection, code, reason)


class _Liveness:
    """Pings a connection that has gone quiet, and closes one that stays silent.

    ``websockets`` would ping every connection every ``ping_interval``; a racer who sends
    a move every second or so proves it is there, so only a connection that has sent no
    message for ``ping_interval`` (since its last ping, too) is pinged, and closed with
    1011 if no pong comes within ``ping_timeout``: at 5,000 racers that was 250 pings a
    second, each a task step, a frame, a system call and a pong to read. A connection
    that sends no message for ``idle_timeout`` is closed with 4004 (pongs do not count).

    One timer per connection, pushed back lazily: a message only records when it was
    heard (``heard``), and the timer, when it fires, sleeps again until the next deadline.
    Re-arming a timer on every message would cost more than the message.
    """

    __slots__ = ("_config", "_connection", "_loop", "_pinged_at", "_pinging", "_tier",
                 "_timer", "heard")

    def __init__(self, connection: ServerConnection, config: ServerConfig, tier: SocketTier):
        self._connection = connection
        self._config = config
        self._tier = tier
        self._loop = asyncio.get_running_loop()
        self.heard = self._loop.time()
        """Loop time of the last message from the connection."""
        self._pinged_at = float("-inf")
        self._pinging: asyncio.Task[None] | None = None
        self._timer = self._loop.call_at(self._next_check(), self._check)

    def _next_check(self) -> float:
        quiet_since = max(self.heard, self._pinged_at)
        return min(self.heard + self._config.idle_timeout,
                   quiet_since + self._config.ping_interval)

    def _check(self) -> None:
        now = self._loop.time()
        if now >= self.heard + self._config.idle_timeout:
            self._tier.close_later(self._connection, CloseCode.IDLE_TIMEOUT,
                                   "idle for too long")
            return
        if now >= max(self.heard, self._pinged_at) + self._config.ping_interval:
            if self._pinging is None:  # else the last ping is still waiting for its pong
                self._pinging = self._loop.create_task(self._ping())
            self._pinged_at = now  # the next ping is due an interval from now either way
        self._timer = self._loop.call_at(self._next_check(), self._check)

    async def _ping(self) -> None:
        try:
            pong = await self._connection.ping()
            await asyncio.wait_for(pong, self._config.ping_timeout)
        except TimeoutError:
            self._tier.close_later(self._connection, CloseCode.INTERNAL_ERROR,
                                   "keepalive ping timeout")
        except ConnectionClosed:
            pass  # gone already: nothing to keep alive
        finally:
            self._pinging = None

    def cancel(self) -> None:
        """Stop watching (the connection ended)."""
        self._timer.cancel()
        if self._pinging is not None:
            self._pinging.cancel()


def _named(bot: bool, role: Role) -> bool:
    """Whether a session's name must look like no other connected one's, nor like a
    claimed player's: only human players' (see ``SocketTier._name_taken``)."""
    return not bot and role is Role.PLAYER


def _peer_host(connection: ServerConnection) -> str | None:
    """The TCP peer's address (without its port)."""
    address = connection.remote_address
    return str(address[0]) if isinstance(address, tuple) else None


def _remote(connection: RaceConnection) -> dict[str, str | None]:
    """Log fields naming the client: ``remote``, and ``proxy`` when a trusted proxy
    relayed the connection (``remote`` is then the address the proxy vouched for)."""
    address = connection.remote_address
    peer = f"{address[0]}:{address[1]}" if isinstance(address, tuple) else None
    client = connection.client_address
    if client is None or client == _peer_host(connection):
        return {"remote": peer}
    return {"remote": client, "proxy": peer}


def _show_limits(config: ServerConfig, metrics: Metrics) -> None:
    """Put the configured caps in ``/metrics`` (and every refusal reason, at 0)."""
    metrics.limits.update(
        connections=config.max_connections,
        connections_per_address=config.max_connections_per_address,
        new_sessions_per_address_per_minute=config.new_sessions_per_minute,
        session_idle_expiry_seconds=config.session_idle_expiry,
        open_tournaments=config.max_open_tournaments,
        tournaments_per_session=config.tournaments_per_session,
        tournament_idle_expiry_seconds=config.tournament_idle_expiry,
    )
    for reason in (
        admission.CONNECTIONS,
        admission.CONNECTIONS_PER_ADDRESS,
        admission.NEW_SESSIONS_PER_ADDRESS,
    ):
        metrics.refused[reason] += 0

