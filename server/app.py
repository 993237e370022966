"""The network shell: websockets connections, sessions, the lobby, HTTP health and metrics.

Everything here is I/O and bookkeeping: frames are decoded by :mod:`protocol`, race
commands go to the race's :class:`~server.host.RaceHost`, and the pure
:class:`~server.race.Race` decides. One :class:`RaceServer` per process.
"""

from __future__ import annotations

import asyncio
import gc
import http
import logging
import signal
import ssl
import sys
import weakref
from collections.abc import Callable, Coroutine
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

import protocol
from protocol import (
    PROTOCOL_VERSION,
    ClientMessage,
    CloseCode,
    ErrorCode,
    Limits,
    ProtocolError,
    Role,
    SeedPolicy,
    ServerMessage,
    decode_client,
    encode,
)
from protocol.schema import show
from protocol.tournament import HostAction, TournamentControl
from server import admission, fanout
from server import race as core
from server.admission import Admission
from server.codes import new_code
from server.config import ServerConfig
from server.connection import Message, RaceConnection
from server.expiry import SessionExpiry
from server.host import RaceHost
from server.journal import (
    PlayerRecord,
    PlayerSeen,
    RaceOpened,
    Recovered,
    StoppedWatching,
    Watching,
    replay_commands,
    unplayed,
)
from server.journal_file import JournalRefused
from server.logs import LogBudget, failure, log_event
from server.metrics import CONTENT_TYPE, Metrics
from server.metrics_listener import PATH as METRICS_PATH
from server.metrics_listener import serve_metrics
from server.outgoing import card_message, millis, race_options
from server.pars import ParQueue
from server.rate_limit import TokenBucket
from server.sessions import Session, SessionRegistry
from server.store import Store, open_store, shown
from server.tournament_host import TournamentDesk
from server.winnable import SeedRefused, WinnableSeeds

SERVER_INFO = protocol.ServerInfo(name="foursquare", version="0.1.0")

#: At most this many open races in one ``races`` answer: a lobby shows a page, not a census.
LISTED_RACES = 100

#: Race ids double as the codes people type to join a private race.
RACE_CODE_LENGTH = 8


class _Refused(Exception):
    """A request the server refuses, with the error code to answer it with."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class RaceServer:
    """The race server: start it, then serve until :meth:`stop`.

    ``url``, ``port`` and ``metrics_url`` are known once :meth:`start` returns (port 0
    picks a free one).
    """

    def __init__(self, config: ServerConfig):
        self.config = config
        self.limits = Limits()
        self.metrics = Metrics()
        self.metrics.open_connections = lambda: len(self.connections)
        self.metrics.races_by_phase = self._races_by_phase
        self.sessions = SessionRegistry()
        self.metrics.sessions = lambda: len(self.sessions)
        self.admission = Admission(config, refused=self.metrics.refused)
        _show_limits(config, self.metrics)
        self.hosts: dict[str, RaceHost] = {}
        # Weak: a deal lives as long as one of its races holds it.
        self._shared_deals: weakref.WeakValueDictionary[str, core.SharedDeal] = (
            weakref.WeakValueDictionary()
        )
        self.connections: set[ServerConnection] = set()
        self._log_budgets: dict[ServerConnection, LogBudget] = {}
        """How many more error lines each open connection may log."""
        self.port = config.port
        self.metrics_port = config.metrics_port
        """The metrics port once started, or ``None`` when metrics are on the game port."""
        self._metrics_server: asyncio.Server | None = None
        self.stopping = False
        self.failure_sentence: str | None = None
        """Why the server stopped on its own (its journal failed while it ran), as a
        sentence to show; ``None`` while it has not."""
        self._journal: Store | None = None
        self.tournaments = TournamentDesk(self)
        self._server: Server | None = None
        self._stopped = asyncio.Event()
        self._closing: set[asyncio.Task[None]] = set()
        """Connections being closed in the background (held so the tasks are not lost)."""
        self._expiry: SessionExpiry | None = None
        self._pars = ParQueue(config, self.metrics)
        """Finished races waiting for their deal's par (a bounded queue, one low-priority
        child process)."""
        self.winnable = WinnableSeeds(config, self.metrics)
        """Winnable seeds for races and tournaments (another low-priority child process)."""

    @property
    def url(self) -> str:
        """The websocket URL clients connect to (``wss://`` with a certificate)."""
        scheme = "wss" if self.config.tls else "ws"
        return f"{scheme}://{_authority(self.config.host, self.port)}"

    @property
    def metrics_url(self) -> str:
        """Where ``GET /metrics`` answers: on the metrics port if there is one."""
        if self.metrics_port is None:
            scheme = "https" if self.config.tls else "http"
            return f"{scheme}://{_authority(self.config.host, self.port)}{METRICS_PATH}"
        return f"http://{_authority(self.config.metrics_host, self.metrics_port)}{METRICS_PATH}"

    @property
    def journal(self) -> Store:
        """The open store (after :meth:`start`)."""
        if self._journal is None:
            raise RuntimeError("the server has not started")
        return self._journal

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Open the journal, recover unfinished races, and listen.

        Raises :class:`~server.journal_file.JournalRefused` (nothing started, the journal
        left as it was found) if the journal may not be opened or cannot be read, and
        ``OSError`` if the server cannot listen (the journal is then closed cleanly).
        """
        tls = tls_context(self.config)  # a certificate that cannot be used stops us first
        try:
            await self._open_journal()
            self._expiry = SessionExpiry(
                self.config, self.sessions, self.journal, self.metrics, self._holds
            )
            self._server = await self._listen(tls)
            self.port = self._server.sockets[0].getsockname()[1]
            if self.config.metrics_port is not None:
                self._metrics_server = await serve_metrics(
                    self.metrics,
                    self.config.metrics_host,
                    self.config.metrics_port,
                    timeout=self.config.handshake_timeout,
                    request_bytes=self.config.metrics_request_bytes,
                )
                self.metrics_port = self._metrics_server.sockets[0].getsockname()[1]
        except BaseException:
            if self._server is not None:
                self._server.close()
                await self._server.wait_closed()
            self.tournaments.stop()
            if self._expiry is not None:
                self._expiry.stop()
            if self._journal is not None:
                await self._journal.aclose()
            raise
        self.winnable.start()
        log_event(
            "server_start",
            url=self.url,
            metrics=self.metrics_url,
            db=shown(self.config.db) if self.config.journal else None,
            sync=self.config.sync.value,
            races=len(self.hosts),
        )

    async def _open_journal(self) -> None:
        """Open the store (checked), and bring back its races and tournaments."""
        self._journal = await open_store(self.config)
        self._recover(await self._journal.recover())
        await self.tournaments.start()

    async def _listen(self, tls: ssl.SSLContext | None) -> Server:
        return await serve(
            self._handle,
            self.config.host,
            self.config.port,
            process_request=self._process_request,
            compression=None,
            max_size=self.limits.max_client_frame,
            open_timeout=self.config.handshake_timeout,
            ping_interval=None,  # pings only for connections gone quiet: see _Liveness
            close_timeout=self.config.close_timeout,
            create_connection=RaceConnection,
            ssl=tls,
        )

    async def stop(self) -> None:
        """Shut down gracefully: stop accepting, flush every race and the journal, then
        close every connection with 1001 (going away) so clients know to resume later."""
        if self.stopping:
            await self._stopped.wait()
            return
        self.stopping = True
        log_event("server_stopping", connections=len(self.connections), races=len(self.hosts))
        if self._server is not None:
            self._server.close(close_connections=False)
        if self._expiry is not None:
            self._expiry.stop()
        # Searches end now: a request waiting for a winnable deal is refused (each would
        # otherwise hold its connection, and so the shutdown, for up to its budget), and
        # no par is sent once the server has stopped.
        await self.winnable.close()
        await self._pars.close()
        await asyncio.gather(*(host.drain() for host in self.hosts.values()))
        if self._journal is not None:
            if not self.failed:
                # Connected sessions were seen until now: their idle time starts here.
                now = self._now()
                seen = [PlayerSeen(s.session_id, now) for s in self.sessions.connected()]
                if seen:
                    self._journal.submit(*seen)
            await self._journal.aclose()
        await self._close_all(CloseCode.GOING_AWAY, "the server is shutting down")
        if self._server is not None:
            await self._server.wait_closed()
        for host in self.hosts.values():
            host.stop()
        self.tournaments.stop()
        if self._metrics_server is not None:
            self._metrics_server.close()  # last: metrics are worth reading while it stops
            await self._metrics_server.wait_closed()
        log_event("server_stop")
        self._stopped.set()

    async def _close_all(self, code: CloseCode, reason: str) -> None:
        """Close every connection, waiting at most ``close_timeout`` for them all, then
        drop the ones still open.

        A connection's own ``close_timeout`` bounds the wait for an answer to its close
        frame, but not the wait before it: a client that stopped reading leaves the
        close frame behind a full write buffer, and websockets waits for that to drain
        first, for as long as the client does not read.
        """
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

    @property
    def failed(self) -> bool:
        """Whether the server stopped because its journal failed."""
        return self.failure_sentence is not None

    async def serve_until_signalled(self, ready: Callable[[], None] | None = None) -> str | None:
        """Run until SIGTERM or SIGINT, then :meth:`stop`. Returns why the server had to
        stop on its own instead (:attr:`failure_sentence`), or ``None``.

        ``ready`` is called once the signals are handled: a SIGTERM sent as soon as the
        server says it listens then stops it cleanly, not by the signal's default action.
        """
        loop = asyncio.get_running_loop()
        signalled = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, signalled.set)
        if ready is not None:
            ready()
        waits = [asyncio.create_task(signalled.wait()), asyncio.create_task(self._stopped.wait())]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for wait in waits:
            wait.cancel()
        await self.stop()
        return self.failure_sentence

    def _recover(self, recovered: Recovered) -> None:
        """Bring back every player and every unfinished race from the journal."""
        for player in recovered.players:  # loaded in the order they were last seen
            self.sessions.add(
                Session(player.player_id, player.token_hash, player.name, player.bot, player.role),
                idle_since=player.created_at if player.last_seen is None else player.last_seen,
            )
        for watching in recovered.watching:  # sent again when the spectator resumes
            session = self.sessions.get(watching.player_id)
            if session is not None:
                session.watching[watching.race_id] = None
        races = [(unplayed(stored), stored) for stored in recovered.races]
        for race, _ in races:  # every race in its deal before any replays, so none finishes early
            self._share_deal(race)
        for race, stored in races:
            replay_commands(race, stored)  # fast: replaying a race takes about a millisecond
            if not race.racer_ids:
                continue  # a lobby everyone left: nothing to come back to
            host = self.hosts[race.race_id] = self._host(race)
            for racer_id in race.racer_ids:
                session = self.sessions.get(racer_id)
                if session is not None:
                    session.race_id = race.race_id
                if race.phase in (core.Phase.COUNTDOWN, core.Phase.RUNNING):
                    # Nobody is connected after a restart: each racer's grace to come
                    # back starts now (a racer already away keeps its own).
                    host.apply(core.Disconnect(racer_id))
            log_event(
                "race_recovered",
                race=race.race_id,
                phase=race.phase.value,
                commands=len(stored.commands),
            )

    def _host(self, race: core.Race, opened: RaceOpened | None = None) -> RaceHost:
        return RaceHost(
            race,
            journal=self.journal,
            sessions=self.sessions,
            metrics=self.metrics,
            clock=self.config.clock,
            on_finished=self._race_finished,
            on_journal_failure=self._journal_failed,
            first_records=[opened] if opened else [],
            send_buffer_limit=self.config.send_buffer_limit,
        )

    def _share_deal(self, race: core.Race) -> None:
        """Put ``race`` with the other races dealt its seed (a tournament round's races)."""
        deal = self._shared_deals.get(race.seed)
        if deal is None:
            deal = self._shared_deals[race.seed] = core.SharedDeal()
        race.share_deal(deal)

    def _journal_failed(self, error: Exception) -> None:
        if self.stopping:
            return
        log_event(
            "server_failing", logging.ERROR, reason="the journal cannot write", error=repr(error)
        )
        self.failure_sentence = (
            f"the journal {shown(self.config.db)} failed while the server ran ({error}), so the "
            "server stopped without answering the moves it could not write: fix the cause (a "
            "full disk, a file removed or damaged, a database down or taken over by another "
            "server) and start it again, which brings back every acknowledged move"
        )
        stopping = asyncio.create_task(self.stop())
        self._closing.add(stopping)
        stopping.add_done_callback(self._closing.discard)

    def _race_finished(self, host: RaceHost) -> None:
        self.tournaments.race_finished(host)
        loop = asyncio.get_running_loop()
        loop.call_later(self.config.finished_linger, self._forget, host)
        if self.config.par_budget > 0:
            self._pars.add(host)  # the result is already out: the par follows when found

    def _forget(self, host: RaceHost) -> None:
        if self.hosts.get(host.race_id) is host:
            del self.hosts[host.race_id]
        self._pars.forget(host)
        host.stop()

    def _races_by_phase(self) -> dict[str, int]:
        counts = {phase.value: 0 for phase in core.Phase}
        for host in self.hosts.values():
            counts[host.race.phase.value] += 1
        return counts

    # ----------------------------------------------------------------- HTTP

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/healthz":
            if self.stopping:
                return connection.respond(http.HTTPStatus.SERVICE_UNAVAILABLE, "stopping\n")
            return connection.respond(http.HTTPStatus.OK, "ok\n")
        if path == METRICS_PATH:
            if self.config.metrics_port is not None:  # served on its own port only
                return connection.respond(http.HTTPStatus.NOT_FOUND, "not found\n")
            response = connection.respond(http.HTTPStatus.OK, self.metrics.render().decode())
            response.headers = Headers(
                [(k, v) for k, v in response.headers.raw_items() if k.lower() != "content-type"]
            )
            response.headers["Content-Type"] = CONTENT_TYPE
            return response
        assert isinstance(connection, RaceConnection)  # serve() builds them (see start)
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

    async def _handle(self, connection: ServerConnection) -> None:
        assert isinstance(connection, RaceConnection)  # serve() builds them (see start)
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
                self._detach(session, connection)
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
        if hello.resume is not None or hello.bot or hello.role is not Role.PLAYER:
            return None
        if not self.sessions.name_in_use(hello.name):
            return None
        return ProtocolError(
            ErrorCode.NAME_TAKEN,
            f"the name {show(hello.name)} looks the same as a connected player's name "
            "(ignoring case and look-alike letters): choose another",
            in_reply_to="hello",
            reply_to=hello.id,
        )

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
                self._detach(session, previous, quietly=True)
                self.close_later(previous, CloseCode.REPLACED, "resumed elsewhere")
            self.journal.submit(PlayerSeen(session.session_id, self._now()))
        else:
            now = self._now()
            session, token = self.sessions.create(hello.name, hello.bot, hello.role, now)
            await self.journal.write(
                PlayerRecord(
                    session.session_id,
                    session.token_hash,
                    session.name,
                    session.bot,
                    now,
                    session.role,
                    last_seen=now,
                )
            )
        self.sessions.attach(session, connection)
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
            reply_to=hello.id,
        )
        self._send(connection, welcome)
        if resumed:
            await self._send_state(connection, session)
        return session

    async def _send_state(self, connection: ServerConnection, session: Session) -> None:
        """After a resume: the race the session races in, and the races it watches.

        A watched race the server no longer keeps (it finished and was forgotten, or
        finished before a restart) is sent as its stored result, read from the journal
        off the event loop, or, without one, refused as ``race_not_found``; either way the
        session stops watching it.
        """
        host = self.hosts.get(session.race_id) if session.race_id else None
        if host is not None and host.race.has_racer(session.session_id):
            if host.race.phase is not core.Phase.FINISHED:
                host.apply(core.Reconnect(session.session_id))  # no longer counted out
            host.tell(connection, *host.messages_for_racer(session.session_id, None))
            host.presence_changed()  # the others see it back
        gone = []
        for race_id in session.watching:
            watched = self.hosts.get(race_id)
            if watched is None:
                gone.append(race_id)
                continue
            watched.add_spectator(connection)
            watched.tell(connection, *watched.messages_for_spectator(None))
        if not gone:
            return
        self._stop_watching(session, gone)
        try:
            results = await self.journal.read_results(gone)
        except JournalRefused as refusal:  # unreadable now: the refusals below say so
            log_event("journal_error", logging.ERROR, error=str(refusal))
            results = {}
        for race_id in gone:
            result = results.get(race_id)
            if result is not None:
                self._send(connection, protocol.RaceFinished.from_result(
                    result, started_at=result.started_at, ended_at=result.ended_at
                ))
            else:
                self._refuse(connection, ProtocolError(
                    ErrorCode.RACE_NOT_FOUND,
                    f"race {race_id}, which you watched, is gone and left no result",
                    in_reply_to=protocol.Spectate.TYPE,
                ))

    def _stop_watching(self, session: Session, race_ids: list[str]) -> None:
        """``session`` watches none of ``race_ids`` any more (journaled)."""
        for race_id in race_ids:
            del session.watching[race_id]
            watched = self.hosts.get(race_id)
            if watched is not None and session.connection is not None:
                watched.remove_spectator(session.connection)
        self.journal.submit(StoppedWatching(session.session_id, tuple(race_ids)))

    def _start_watching(self, session: Session, host: RaceHost) -> None:
        """``session`` watches ``host``'s race from now on, after a restart too (journaled),
        within ``watched_races``: the oldest races watched that are over or forgotten make
        room, and when none is, the request is refused with ``server_busy``."""
        if host.race_id in session.watching:
            return
        limit = self.config.watched_races
        if len(session.watching) >= limit:
            done = [
                race_id for race_id in session.watching
                if (watched := self.hosts.get(race_id)) is None
                or watched.race.phase is core.Phase.FINISHED
            ]
            if len(session.watching) - len(done) >= limit:
                raise _Refused(
                    ErrorCode.SERVER_BUSY,
                    f"you are watching {limit} races that are still on, the most a session "
                    "may: leave one (leave_race) first",
                )
            self._stop_watching(session, done[: len(session.watching) - limit + 1])
        session.watching[host.race_id] = None
        self.journal.submit(Watching(session.session_id, host.race_id))

    def _detach(
        self, session: Session, connection: ServerConnection, quietly: bool = False
    ) -> None:
        """The session's connection is gone: stop feeding it, free its lobby seat, or
        start its racer's grace to come back (the race decides which)."""
        if session.connection is connection:
            now = self._now()
            self.sessions.detach(session, now)
            if not quietly and not self.stopping:  # (stop journals every session at once)
                self.journal.submit(PlayerSeen(session.session_id, now))
        for race_id in session.watching:
            watched = self.hosts.get(race_id)
            if watched is not None:
                watched.remove_spectator(connection)
        host = self.hosts.get(session.race_id) if session.race_id else None
        if quietly or self.stopping or host is None or not host.race.has_racer(session.session_id):
            return
        if host.race.phase is not core.Phase.FINISHED:
            host.apply(core.Disconnect(session.session_id))
        if host.race.has_racer(session.session_id):
            host.presence_changed()  # the others see it away
        else:  # its lobby seat is free
            session.race_id = None
            self._drop_if_empty(host)

    def _answer(
        self,
        connection: ServerConnection,
        session: Session,
        message: ClientMessage,
        received_at: float,
    ) -> None:
        try:
            if self.stopping:
                raise _Refused(ErrorCode.SHUTTING_DOWN, "the server is shutting down")
            self._dispatch(connection, session, message, received_at)
        except Exception as error:
            self._answer_failed(connection, session, message, error)

    def answers_later(self, message: ClientMessage) -> bool:
        """Whether ``message`` may have to wait for a winnable deal before it is answered: a
        winnable ``create_race``, or a host starting a tournament (which may deal them)."""
        if self.stopping:
            return False
        if isinstance(message, protocol.CreateRace):
            return message.options.seed_policy is SeedPolicy.WINNABLE
        return isinstance(message, TournamentControl) and message.action is HostAction.START

    async def _answer_later(
        self, connection: ServerConnection, session: Session, message: ClientMessage
    ) -> None:
        """Answer a message that :meth:`answers_later`, once its winnable deal is found."""
        try:
            if isinstance(message, protocol.CreateRace):
                await self._on_create_winnable_race(connection, session, message)
            elif isinstance(message, TournamentControl):
                await self.tournaments.start_when_dealt(connection, session, message)
        except Exception as error:
            self._answer_failed(connection, session, message, error)

    def _answer_failed(
        self,
        connection: ServerConnection,
        session: Session,
        message: ClientMessage,
        error: Exception,
    ) -> None:
        """Answer a message whose handling raised: a refusal as its error code, anything
        else as ``internal_error`` (a bug must cost one answer, never the connection)."""
        if isinstance(error, _Refused | core.RaceError | SeedRefused):
            code = ErrorCode(error.code.value) if isinstance(error, core.RaceError) else error.code
            self._refuse(
                connection,
                ProtocolError(code, error.message, in_reply_to=message.TYPE, reply_to=message.id),
            )
            if code is ErrorCode.BAD_MOVE_NUMBER and isinstance(message, protocol.Place):
                self._send_card_again(session, message.race)
            return
        self.log_error(
            connection, "internal_error", logging.ERROR, message=message.TYPE, error=failure(error)
        )
        self._refuse(
            connection,
            ProtocolError(
                ErrorCode.INTERNAL_ERROR,
                "the server failed to handle this message",
                in_reply_to=message.TYPE,
                reply_to=message.id,
            ),
        )

    def refusal(self, connection: ServerConnection, error: ProtocolError) -> protocol.Error:
        """The ``error`` message answering ``error`` on ``connection``, counted and logged.

        Every refusal goes through here (the tournament desk's too). The sentence it logs
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


    # ------------------------------------------------------------- requests

    def _dispatch(
        self,
        connection: ServerConnection,
        session: Session,
        message: ClientMessage,
        received_at: float,
    ) -> None:
        match message:
            case protocol.Place():
                self._on_place(connection, session, message, received_at)
            case protocol.CreateRace():
                self._on_create_race(connection, session, message)
            case protocol.Hello():
                self._on_hello(connection, session, message)
            case protocol.Ping():
                self._on_ping(connection, session, message)
            case protocol.ListRaces():
                self._on_list_races(connection, session, message)
            case protocol.QuickRace():
                self._on_quick_race(connection, session, message)
            case protocol.JoinRace():
                self._on_join_race(connection, session, message)
            case protocol.LeaveRace():
                self._on_leave_race(connection, session, message)
            case protocol.Ready():
                self._on_ready(connection, session, message)
            case protocol.Resign():
                self._on_resign(connection, session, message)
            case protocol.Spectate():
                self._on_spectate(connection, session, message)
            case _ if self.tournaments.handles(message):
                self.tournaments.dispatch(connection, session, message)

    def _send_card_again(self, session: Session, race: str) -> None:
        """After a move number out of turn: the card the racer must place, once more."""
        host = self.hosts.get(race.upper())
        card = host.race.card_for(session.session_id) if host else None
        if host is not None and card is not None and session.connection is not None:
            host.tell(session.connection, card_message(host.race_id, card))

    def _on_ping(
        self, connection: ServerConnection, session: Session, message: protocol.Ping
    ) -> None:
        self._send(connection, protocol.Pong(server_time=millis(self._now()), reply_to=message.id))

    def _on_hello(
        self, connection: ServerConnection, session: Session, message: protocol.Hello
    ) -> None:
        raise _Refused(ErrorCode.ALREADY_WELCOMED, "this connection has already said hello")

    def _on_list_races(
        self, connection: ServerConnection, session: Session, message: protocol.ListRaces
    ) -> None:
        summaries = [
            protocol.RaceSummary(
                race=host.race_id,
                state=protocol.RaceState(host.race.phase.value),
                racers=len(host.race.racer_ids),
                max_racers=host.race.options.max_racers,
                min_racers=host.race.options.min_racers,
                time_limit=max(1, round(host.race.options.time_limit)),
                ruleset=host.race.options.ruleset,
                spectators=host.race.options.spectators,
                fog=host.race.options.fog,
            )
            for host in self.hosts.values()
            if host.race.options.public and host.race.is_open
        ][:LISTED_RACES]
        self._send(connection, protocol.RaceList(races=tuple(summaries), reply_to=message.id))

    def _on_quick_race(
        self, connection: ServerConnection, session: Session, message: protocol.QuickRace
    ) -> None:
        self._check_free_to_join(session)
        host = next(
            (h for h in self.hosts.values() if h.race.options == self._quick_options()
             and h.race.is_open),
            None,
        )
        if host is None:
            host = self.open_race(self._quick_options())
        self._join(connection, session, host, message.id)

    def _on_create_race(
        self, connection: ServerConnection, session: Session, message: protocol.CreateRace
    ) -> None:
        options = self._options_to_create(session, message)
        self._join(connection, session, self.open_race(options), message.id)

    async def _on_create_winnable_race(
        self, connection: ServerConnection, session: Session, message: protocol.CreateRace
    ) -> None:
        options = self._options_to_create(session, message)
        seed = await self.winnable.find(options.ruleset, requester=session.session_id)
        self._check_free_to_join(session)  # still true: this connection waited for us
        host = self.open_race(options, seed=seed)
        self._join(connection, session, host, message.id)

    def _options_to_create(
        self, session: Session, message: protocol.CreateRace
    ) -> core.RaceOptions:
        """The options of the race ``message`` asks for (``_Refused`` if it may not)."""
        self._check_free_to_join(session)
        try:
            return race_options(
                message.options, self.config.progress_interval, self.config.reconnect_grace
            )
        except ValueError as error:
            raise _Refused(ErrorCode.BAD_MESSAGE, f"create_race.options: {error}") from None

    def _on_join_race(
        self, connection: ServerConnection, session: Session, message: protocol.JoinRace
    ) -> None:
        host = self._find(message.race)
        if session.race_id == host.race_id and host.race.has_racer(session.session_id):
            raise _Refused(ErrorCode.ALREADY_JOINED, "you are already in this race")
        self._check_free_to_join(session)
        self._join(connection, session, host, message.id)

    def _on_leave_race(
        self, connection: ServerConnection, session: Session, message: protocol.LeaveRace
    ) -> None:
        host = self._find(message.race)
        if host.race_id in session.watching:
            self._stop_watching(session, [host.race_id])
        elif session.race_id == host.race_id:
            if host.race.phase is not core.Phase.FINISHED:
                host.apply(core.Leave(session.session_id))
            if host.race.phase in (core.Phase.LOBBY, core.Phase.COUNTDOWN):
                session.race_id = None
                self._drop_if_empty(host)
        else:
            raise _Refused(ErrorCode.NOT_A_RACER, "you are not in this race")
        ok = protocol.Ok(in_reply_to="leave_race", race=host.race_id, reply_to=message.id)
        if self.hosts.get(host.race_id) is host:
            host.tell(connection, ok)
        else:
            # The lobby emptied and was forgotten, and its outbox with it: answer once the
            # leave is journaled (the transaction gathering now holds it).
            self.journal.when_committed(self.journal.submit(), lambda: self._send(connection, ok))

    def _on_ready(
        self, connection: ServerConnection, session: Session, message: protocol.Ready
    ) -> None:
        host = self._racing_in(session, message.race)
        host.apply(core.SetReady(session.session_id, message.ready))
        host.tell(connection, protocol.Ok(in_reply_to="ready", race=host.race_id,
                                          reply_to=message.id))

    def _on_place(
        self,
        connection: ServerConnection,
        session: Session,
        message: protocol.Place,
        received_at: float,
    ) -> None:
        host = self._racing_in(session, message.race)
        host.apply(
            core.Place(session.session_id, message.move, message.position),
            reply_to=message.id,
            received_at=received_at,
        )

    def _on_resign(
        self, connection: ServerConnection, session: Session, message: protocol.Resign
    ) -> None:
        host = self._racing_in(session, message.race)
        host.apply(core.Resign(session.session_id))
        host.tell(connection, protocol.Ok(in_reply_to="resign", race=host.race_id,
                                          reply_to=message.id))

    def _on_spectate(
        self, connection: ServerConnection, session: Session, message: protocol.Spectate
    ) -> None:
        host = self._find(message.race)
        if not host.race.options.spectators:
            raise _Refused(ErrorCode.SPECTATORS_NOT_ALLOWED, "this race does not allow spectators")
        self._start_watching(session, host)
        host.add_spectator(connection)
        host.tell(connection, *host.messages_for_spectator(message.id))

    # ---------------------------------------------------------------- lobby

    def _quick_options(self) -> core.RaceOptions:
        config = self.config
        return core.RaceOptions(
            max_racers=config.quick_max_racers,
            min_racers=config.quick_min_racers,
            time_limit=config.time_limit,
            countdown=config.quick_countdown,
            progress_interval=config.progress_interval,
            reconnect_grace=config.reconnect_grace,
        )

    def open_race(
        self,
        options: core.RaceOptions,
        *,
        seed: str | None = None,
        race_id: str | None = None,
        tournament_id: str | None = None,
    ) -> RaceHost:
        """Create and journal a race with these options (and this seed, if given: races of
        a tournament share one). Private races (``public=False``) get their id as a code."""
        if race_id is None:
            race_id = new_code(RACE_CODE_LENGTH, taken=self.hosts)
        if seed is None:
            seed = self.config.seed_source()
        race = core.Race(race_id, seed, options, code=None if options.public else race_id)
        self._share_deal(race)
        opened = RaceOpened(race_id, seed, options, race.code, self._now(), tournament_id)
        host = self._host(race, opened)
        self.hosts[race_id] = host
        log_event("race_open", race=race_id, public=options.public, max_racers=options.max_racers)
        return host

    def _join(
        self, connection: ServerConnection, session: Session, host: RaceHost, reply_to: int | None
    ) -> None:
        racer_id = session.session_id
        previous = session.race_id
        session.race_id = host.race_id  # before the start can be queued, so its card reaches us
        try:
            host.apply(
                core.Join(racer_id, session.name, session.bot),
                direct=lambda: [(connection, host.snapshot_for(racer_id, reply_to))],
                commander=connection,
            )
        except core.RaceError:
            session.race_id = previous
            self._drop_if_empty(host)
            raise

    def _check_free_to_join(self, session: Session) -> None:
        if session.role is not Role.PLAYER:
            raise _Refused(ErrorCode.WRONG_ROLE, "a spectator cannot race: say hello as a player")
        host = self.hosts.get(session.race_id) if session.race_id else None
        if host is not None and host.race.is_busy(session.session_id):
            raise _Refused(
                ErrorCode.ALREADY_JOINED,
                f"you are already in race {host.race_id}: leave or finish it first",
            )

    def _holds(self, session: Session) -> bool:
        """Whether an idle session must be kept: it races in a race not over (from the
        lobby on: a recovered lobby still seats it), or it is entered in a tournament
        that is not over."""
        host = self.hosts.get(session.race_id) if session.race_id else None
        if (
            host is not None
            and host.race.phase is not core.Phase.FINISHED
            and host.race.has_racer(session.session_id)
        ):
            return True
        return self.tournaments.has_entrant(session.session_id)

    def _find(self, race: str) -> RaceHost:
        host = self.hosts.get(race.upper())
        if host is None:
            raise _Refused(ErrorCode.RACE_NOT_FOUND, f"there is no race {show(race)}")
        return host

    def _racing_in(self, session: Session, race: str) -> RaceHost:
        host = self._find(race)
        if session.race_id != host.race_id or not host.race.has_racer(session.session_id):
            raise _Refused(ErrorCode.NOT_A_RACER, "you are not racing in this race")
        return host

    def _drop_if_empty(self, host: RaceHost) -> None:
        if not host.race.racer_ids and host.race.phase is core.Phase.LOBBY:
            self._forget(host)

    # ---------------------------------------------------------------- misc

    def _send(self, connection: ServerConnection, message: ServerMessage) -> None:
        fanout.send((connection,), encode(message), self.config.send_buffer_limit)

    def _now(self) -> float:
        return self.config.clock()


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
        "_server",
        "_waiting_on",
        "session",
    )

    def __init__(self, server: RaceServer, connection: RaceConnection):
        self._server = server
        self._connection = connection
        self._config = server.config
        self._loop = asyncio.get_running_loop()
        self.session: Session | None = None
        """Set once ``hello`` is answered."""
        self._bad = 0
        self._early_bucket = TokenBucket(
            self._config.rate_per_second, self._config.rate_burst, server._now()
        )
        """The rate limit until ``hello`` is answered; then the session's own."""
        self._liveness: _Liveness | None = None
        self._ending = False
        """Set once the server closes the connection: later messages are ignored."""
        self._waiting_on: asyncio.Task[None] | None = None
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
            self._server.log_error(self._connection, "internal_error", logging.ERROR,
                                   error=failure(error))

    def _greet(self, frame: Message) -> None:
        server, connection = self._server, self._connection
        message = self._decode(frame)
        if self._over_rate(self._early_bucket, message):
            return
        if isinstance(message, ProtocolError):
            self._refuse_bad(message, "too many bad frames")
            return
        if isinstance(message, protocol.Hello):
            refusal = server._name_taken(message) or server._too_many_new_sessions(
                connection, message
            )
            if refusal is None:
                self._wait_on(self._hello(message))
            else:
                server._refuse(connection, refusal)  # it may say hello again
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
        session = await self._server._hello(self._connection, hello)
        if session is None:
            self._ending = True  # refused, and closed
            return
        self._greeting_timer.cancel()
        if session.bucket is None:  # a resumed session goes on with its own
            session.bucket = TokenBucket(
                self._config.rate_per_second, self._config.rate_burst, self._server._now()
            )
        self._liveness = _Liveness(self._connection, self._config, self._server)
        self.session = session

    def _converse(self, session: Session, frame: Message) -> None:
        server, connection = self._server, self._connection
        assert session.bucket is not None and self._liveness is not None  # set at hello
        received_at = self._liveness.heard = self._loop.time()
        message = self._decode(frame)
        if self._over_rate(session.bucket, message):
            return
        if isinstance(message, ProtocolError):
            self._refuse_bad(message, "too many bad messages")
            return
        if server.answers_later(message):
            self._wait_on(server._answer_later(connection, session, message))
        else:
            server._answer(connection, session, message, received_at)

    def _decode(self, frame: Message) -> ClientMessage | ProtocolError:
        """The message ``frame`` holds, or why it holds none."""
        try:
            return decode_client(frame, self._server.limits)
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
        if bucket.allow(self._server._now()):
            return False
        if isinstance(message, ProtocolError):
            in_reply_to, reply_to = message.in_reply_to, message.reply_to
        else:
            in_reply_to, reply_to = message.TYPE, message.id
        self._server._refuse(
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
        self._server._refuse(self._connection, error)
        if error.close_code is not None:
            self._end(error.close_code, error.code.value)
            return
        self._bad += 1
        if self._bad >= self._config.bad_messages:
            self._end(CloseCode.PROTOCOL_ERROR, too_many)

    def _wait_on(self, answer: Coroutine[Any, Any, None]) -> None:
        """Run ``answer``, holding the connection's later messages until it is done."""
        self._connection.hold()
        self._waiting_on = self._loop.create_task(answer)
        self._waiting_on.add_done_callback(self._answered)

    def _answered(self, task: asyncio.Task[None]) -> None:
        self._waiting_on = None
        if not task.cancelled() and (error := task.exception()) is not None:
            log_event("internal_error", logging.ERROR, error=failure(error))
        self._connection.release()

    def _no_hello_in_time(self) -> None:
        if self.session is None:
            self._end(CloseCode.HANDSHAKE_TIMEOUT, "no hello in time")

    def _end(self, code: CloseCode, reason: str) -> None:
        if not self._ending:
            self._ending = True
            self._server.close_later(self._connection, code, reason)


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

    __slots__ = ("_config", "_connection", "_loop", "_pinged_at", "_pinging", "_server",
                 "_timer", "heard")

    def __init__(self, connection: ServerConnection, config: ServerConfig, server: RaceServer):
        self._connection = connection
        self._config = config
        self._server = server
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
            self._server.close_later(self._connection, CloseCode.IDLE_TIMEOUT,
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
            self._server.close_later(self._connection, CloseCode.INTERNAL_ERROR,
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


def tls_context(config: ServerConfig) -> ssl.SSLContext | None:
    """The server's TLS context from ``tls_cert`` and ``tls_key`` (``None`` without them).

    Raises ``ValueError`` with a sentence when the files cannot be used.
    """
    if config.tls_cert is None or config.tls_key is None:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)  # TLS 1.2 at least
    try:
        context.load_cert_chain(config.tls_cert, config.tls_key)
    except (OSError, ssl.SSLError) as error:
        raise ValueError(
            f"cannot use the certificate {config.tls_cert} with the key {config.tls_key}: "
            f"{getattr(error, 'strerror', None) or error}"
        ) from None
    return context


def _authority(host: str, port: int) -> str:
    """``host:port`` for a URL (an IPv6 address in brackets)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


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
    )
    for reason in (
        admission.CONNECTIONS,
        admission.CONNECTIONS_PER_ADDRESS,
        admission.NEW_SESSIONS_PER_ADDRESS,
    ):
        metrics.refused[reason] += 0


#: The cyclic garbage collector's thresholds in a server process (CPython's are 700, 10, 10).
#: A young collection costs in proportion to the objects it finds (about a millisecond per
#: thousand here), so young collections stay at CPython's size: a raised first threshold
#: made each one a 5-15 ms pause, felt by every move waiting behind it. What a young
#: collection keeps is mostly the live state of moves in flight, which reference counting
#: frees soon after; so the middle generation is collected only every thousand young
#: collections (tens of seconds apart: see :class:`YoungCollections`), and the full collection,
#: which scans every connection and race, rarely. Rare long pauses touch far fewer moves
#: than frequent medium ones.
GC_THRESHOLDS = (700, 1000, 100)

#: Seconds between the young collections the event loop runs itself.
YOUNG_COLLECTION_INTERVAL = 0.025

#: New connections and racers seated, counted together, after which the event loop
#: collects the middle generation itself.
ARRIVALS_PER_MIDDLE_COLLECTION = 500

#: Seconds a thread may hold the GIL while another waits for it (CPython's is 0.005).
GIL_SWITCH_INTERVAL = 0.0005


def _tune_collector() -> None:
    """Collect what starting left behind, set it aside for good (modules, recovered races:
    never garbage, never scanned again), and collect the older generations less often."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    # The journal's writer thread gives up the GIL around each SQLite statement and then
    # waits for the event loop's thread to hand it back: at CPython's 5 ms switch
    # interval a commit of three statements could take 15 ms under load.
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)


class YoungCollections:
    """Collect the young generation every :data:`YOUNG_COLLECTION_INTERVAL`, between the
    event loop's callbacks, until :meth:`stop`; and the middle one after every
    :data:`ARRIVALS_PER_MIDDLE_COLLECTION` new connections and racers seated.

    The collector's own trigger counts allocations less deallocations of any object,
    old ones included. Here the state of each move in flight outlives a young collection
    and dies a moment later in an older generation, so the count stays low while the
    young generation grows: measured at 1,000 racers, one young collection in ten found
    9,000-16,000 objects (not 700) and paused the loop for over 2 ms. Collected on a
    clock as well, the young generation never holds more than a few hundred objects.

    A new connection leaves about ninety objects that live as long as it does, and a
    racer seated about twenty (its game, and a share of its race's). After a wave of
    thousands, the middle generation's next collection scanned them all at once: at
    5,000 racers 279-298 ms for the connections, then 53-81 ms for the seats, against
    14-27 ms for the collections after them. Collected every few hundred arrivals, a
    wave is promoted in short pauses.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, metrics: Metrics) -> None:
        self._loop = loop
        self._metrics = metrics
        self._arrivals_seen = self._arrivals()
        self._timer = loop.call_later(YOUNG_COLLECTION_INTERVAL, self._collect)

    def _arrivals(self) -> int:
        return self._metrics.connections_total + self._metrics.seats_total

    def _collect(self) -> None:
        arrivals = self._arrivals()
        if arrivals - self._arrivals_seen >= ARRIVALS_PER_MIDDLE_COLLECTION:
            self._arrivals_seen = arrivals
            gc.collect(1)
        else:
            gc.collect(0)
        self._timer = self._loop.call_later(YOUNG_COLLECTION_INTERVAL, self._collect)

    def stop(self) -> None:
        """Collect no more."""
        self._timer.cancel()


async def run_server(
    config: ServerConfig, started: Callable[[RaceServer], None] | None = None
) -> str | None:
    """Start a server, report it through ``started``, serve until SIGTERM/SIGINT, stop.

    Returns ``None`` after a clean stop, or the sentence saying why the server stopped on
    its own (its journal failed). Raises
    :class:`~server.journal_file.JournalRefused` if the journal may not be opened.
    """
    server = RaceServer(config)
    await server.start()
    _tune_collector()
    young = YoungCollections(asyncio.get_running_loop(), server.metrics)
    try:
        return await server.serve_until_signalled(
            None if started is None else lambda: started(server)
        )
    finally:
        young.stop()
