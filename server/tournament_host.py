"""Tournaments on the server: tournament messages in, races out, standings to watchers.

:class:`TournamentDesk` is the I/O shell around the pure :class:`~server.tournament.Tournament`
cores, the way :class:`~server.host.RaceHost` is around a race. It journals every event the
cores produce (through the journal's writer, with the races they order), creates and starts
the races they order as ordinary race hosts, feeds race results back to them, and sends the
``tournament`` state to watchers and entrants once the change is durable. An arena's window
and pairings run on one clock task for all tournaments.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from websockets.protocol import State

from engine import Ruleset
from protocol import ErrorCode, ProtocolError, RaceFinished, Role
from protocol.codec import encode, with_field
from protocol.schema import show
from protocol.tournament import (
    TOURNAMENT_CLIENT_MESSAGES,
    CreateTournament,
    EntrantState,
    ExportTournament,
    HostAction,
    JoinTournament,
    LeaveTournament,
    SetArenaAvailable,
    TournamentControl,
    TournamentCreated,
    TournamentExport,
    TournamentRaceInfo,
    TournamentStanding,
    TournamentState,
    TournamentStatus,
    WatchTournament,
    encode_tournament,
)
from server import fanout
from server import race as core
from server.codes import new_code
from server.logs import failure, log_event
from server.outgoing import millis
from server.sessions import Session
from server.tournament import (
    Command,
    End,
    EntrantRemoved,
    Join,
    Leave,
    Open,
    Pause,
    RaceOrdered,
    RecordResult,
    Remove,
    Resume,
    SeedSource,
    SetAvailable,
    StartNext,
    Tick,
    Tournament,
    TournamentError,
    TournamentErrorCode,
    TournamentSettings,
    hash_token,
)
from server.tournament_store import TournamentOpened, TournamentStore, restore
from server.winnable import SeedRefused, WinnableSeeds

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

    from server.app import RaceServer
    from server.host import RaceHost

#: Tournament codes are shorter than race ids: people read them out in a room.
TOURNAMENT_CODE_LENGTH = 6

#: Tournament messages a client may send, handled by :meth:`TournamentDesk.dispatch`.
TOURNAMENT_REQUESTS = tuple(TOURNAMENT_CLIENT_MESSAGES.values())


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(slots=True)
class _Outgoing:
    committed: concurrent.futures.Future[None] | None
    deliver: Callable[[], None]


class TournamentSeeds:
    """The seed source of a winnable tournament's core: it answers at once, never waits.

    It gives the seed found for this tournament if there is one, else one from the
    server's stock (:meth:`WinnableSeeds.take`), else ``None``: the core then refuses to
    start a round, or leaves an arena's entrants waiting, and the desk searches for a seed
    (:meth:`TournamentDesk.find_seed`). Nothing searches until a seed is wanted, so a
    tournament brought back after a restart costs nothing until it deals.
    """

    def __init__(self, winnable: WinnableSeeds, rules: Ruleset):
        self.rules = rules
        self.found: str | None = None
        """A seed found for this tournament and not dealt yet."""
        self.search: asyncio.Task[None] | None = None
        """The search in progress for this tournament (at most one)."""
        self.retry_at = float("-inf")
        """After a refused search, no other starts for the arena before this (clock time)."""
        self._winnable = winnable

    def __call__(self) -> str | None:
        """A seed now, or ``None`` if none is ready."""
        seed, self.found = self.found, None
        return seed if seed is not None else self._winnable.take(self.rules)


class TournamentDesk:
    """Every tournament this server holds (one desk per :class:`~server.app.RaceServer`)."""

    def __init__(self, server: RaceServer):
        self.server = server
        self.tournaments: dict[str, Tournament] = {}
        """By join code."""
        self._by_race: dict[str, Tournament] = {}
        self._watchers: dict[str, set[ServerConnection]] = {}
        self._outbox: asyncio.Queue[_Outgoing | None] = asyncio.Queue()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._seeds: dict[str, TournamentSeeds] = {}
        """Winnable tournaments' seed sources, by join code."""

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Bring back the stored tournaments (after the server recovered its races), then
        start the outbox and clock tasks."""
        self._tasks = [
            asyncio.create_task(self._pump(), name="tournaments-outbox"),
            asyncio.create_task(self._run_clock(), name="tournaments-clock"),
        ]
        journal = self.server.journal
        stored = []
        for kept in await journal.read_tournaments() if journal.stores else []:
            tournament = restore(kept)
            # A server may stop between storing a race's result and recording it in the
            # tournament: those results are handed back with RecordResult below.
            in_progress = [race.race_id for race in tournament.races_in_progress()]
            results = await journal.read_results(in_progress) if in_progress else {}
            stored.append((tournament, list(results.values())))
        for tournament, unrecorded in stored:
            tournament.seed_source = self._seed_source(tournament.code, tournament.settings)
            self._adopt(tournament)
            if tournament.status is TournamentStatus.FINISHED:
                continue
            for result in unrecorded:
                self._apply(tournament, RecordResult(result))
            for race in tournament.races_in_progress():
                order = RaceOrdered(race.race_id, race.round, race.seed, race.entrants)
                host = self.server.hosts.get(race.race_id)
                if host is None:
                    # Ordered, but the server stopped before the race itself was journaled.
                    self._hold(tournament, order)
                elif host.race.phase is core.Phase.LOBBY:
                    # Stopped while seating the entrants: seat the rest and start.
                    self._seat_and_start(tournament, order, host)
            log_event(
                "tournament_recovered",
                tournament=tournament.code,
                status=tournament.status.value,
                round=tournament.round,
                races=len(tournament.races_in_progress()),
            )

    def stop(self) -> None:
        """Cancel the desk's tasks (the tournaments stay as journaled)."""
        for task in self._tasks:
            task.cancel()

    def wake(self) -> None:
        """Look at the arenas' deadlines again now (after the clock moved)."""
        self._wake.set()

    def has_entrant(self, session_id: str) -> bool:
        """Whether ``session_id`` is entered (and not removed) in a tournament not over:
        its session must outlive any idle time, to be dealt the next races."""
        for tournament in self.tournaments.values():
            if tournament.status is TournamentStatus.FINISHED:
                continue
            entrant = tournament.entrants.get(session_id)
            if entrant is not None and entrant.state is not EntrantState.REMOVED:
                return True
        return False

    # ------------------------------------------------------------- requests

    @staticmethod
    def handles(message: object) -> bool:
        """Whether ``message`` is a tournament request."""
        return isinstance(message, TOURNAMENT_REQUESTS)

    def dispatch(self, connection: ServerConnection, session: Session, message: Any) -> None:
        """Handle one tournament request; a refusal is answered with an ``error``."""
        try:
            self._dispatch(connection, session, message)
        except (_Refused, TournamentError, SeedRefused) as refusal:
            self._refuse(connection, message, refusal)

    async def start_when_dealt(
        self, connection: ServerConnection, session: Session, message: TournamentControl
    ) -> None:
        """Answer a host's ``start``. A tournament that deals winnable seeds and has none
        ready refuses it (:attr:`TournamentErrorCode.NO_SEED_READY`); then find one (the
        connection holds its later messages meanwhile) and start again."""
        try:
            self._dispatch(connection, session, message)
            return
        except TournamentError as refusal:
            if refusal.code is not TournamentErrorCode.NO_SEED_READY:
                self._refuse(connection, message, refusal)
                return
        except (_Refused, SeedRefused) as refusal:
            self._refuse(connection, message, refusal)
            return
        try:
            await self.find_seed(self._find(message.tournament), session.session_id)
        except SeedRefused as refusal:
            self._refuse(connection, message, refusal)
            return
        self.dispatch(connection, session, message)

    def find_seed(self, tournament: Tournament, requester: str) -> asyncio.Future[None]:
        """Search for a seed for ``tournament`` (or join the search already running), on
        behalf of ``requester``; the future fails with :class:`SeedRefused`. Once found,
        the tournament is ticked: an arena pairs whoever waited for it."""
        seeds = self._seeds[tournament.code]
        if seeds.search is None:
            seeds.search = asyncio.create_task(
                self._search(tournament, seeds, requester), name=f"seed-{tournament.code}"
            )
        return asyncio.shield(seeds.search)

    async def _search(self, tournament: Tournament, seeds: TournamentSeeds, requester: str) -> None:
        try:
            seeds.found = await self.server.winnable.find(seeds.rules, requester)
        except SeedRefused as refusal:
            # An arena tries again later, not at once: its entrants would wait anyway.
            pause = self.server.config.hopeless_ruleset_seconds
            if refusal.code is not ErrorCode.NO_WINNABLE_DEAL:
                pause = self.server.config.winnable_budget
            seeds.retry_at = self._now() + pause
            log_event("tournament_seed_refused", tournament=tournament.code, code=refusal.code)
            raise
        finally:
            seeds.search = None
            self._wake.set()
        try:
            self._apply(tournament, Tick())
        except Exception as error:  # one tournament's bug must not stop the rest
            log_event("internal_error", tournament=tournament.code, error=failure(error))

    def _refuse(
        self,
        connection: ServerConnection,
        message: Any,
        refusal: _Refused | TournamentError | SeedRefused,
    ) -> None:
        refused = ProtocolError(
            ErrorCode(refusal.code.value),
            refusal.message,
            in_reply_to=message.TYPE,
            reply_to=message.id,
        )
        error = self.server.refusal(connection, refused)
        self._queue(None, lambda: self._send([connection], encode(error)))

    def _dispatch(self, connection: ServerConnection, session: Session, message: Any) -> None:
        match message:
            case CreateTournament(options=options, id=reply_to):
                self._create(connection, options, reply_to)
            case TournamentControl(
                tournament=code, host_token=token, action=action, entrant=entrant, id=reply_to
            ):
                tournament = self._find(code)
                command = self._host_command(tournament, token, action, entrant)
                you = session.session_id if session.session_id in tournament.entrants else None
                self._apply(tournament, command, (connection, you, reply_to))
            case JoinTournament(tournament=code, id=reply_to):
                if session.role is not Role.PLAYER:
                    raise _Refused(
                        ErrorCode.WRONG_ROLE, "a spectator cannot enter: say hello as a player"
                    )
                tournament = self._find(code)
                join = Join(session.session_id, session.name, session.bot)
                self._watch(tournament, connection)
                self._apply(tournament, join, (connection, session.session_id, reply_to))
            case LeaveTournament(tournament=code, id=reply_to):
                tournament = self._find(code)
                self._apply(
                    tournament,
                    Leave(session.session_id),
                    (connection, session.session_id, reply_to),
                )
            case SetArenaAvailable(tournament=code, available=available, id=reply_to):
                tournament = self._find(code)
                self._apply(
                    tournament,
                    SetAvailable(session.session_id, available),
                    (connection, session.session_id, reply_to),
                )
            case WatchTournament(tournament=code, id=reply_to):
                tournament = self._find(code)
                self._watch(tournament, connection)
                you = session.session_id if session.session_id in tournament.entrants else None
                state = self.state_message(tournament, you, reply_to)
                self._queue(None, lambda: self._send([connection], encode_tournament(state)))
            case ExportTournament(tournament=code, id=reply_to):
                tournament = self._find(code)
                export = tournament_export(tournament, self._now(), reply_to)
                self._queue(None, lambda: self._send([connection], encode_tournament(export)))

    def _create(self, connection: ServerConnection, options: Any, reply_to: int | None) -> None:
        try:
            settings = TournamentSettings(
                name=options.name,
                format=options.format,
                rounds=options.rounds,
                race_size=options.race_size,
                time_limit=float(options.time_limit),
                arena_duration=float(options.arena_duration),
                seed_policy=options.seed_policy.value,
                ruleset=options.ruleset,
            )
        except ValueError as error:
            raise _Refused(ErrorCode.BAD_MESSAGE, f"create_tournament.options: {error}") from None
        if settings.seed_policy == "winnable":
            self.server.winnable.check_hopeful(settings.ruleset)  # no deal to be had lately
        code = new_code(TOURNAMENT_CODE_LENGTH, taken=self.tournaments)
        token = secrets.token_hex(24)  # hex: never starts with "-", so "--token TOKEN" parses
        seeds = self._seed_source(code, settings)
        tournament = Tournament(code, code, hash_token(token), settings, self._now(), seeds)
        self._adopt(tournament)
        committed = self.server.journal.submit(TournamentOpened.of(tournament))
        created = TournamentCreated(tournament=code, host_token=token, reply_to=reply_to)
        log_event("tournament_create", tournament=code, format=settings.format.value)
        self._queue(committed, lambda: self._send([connection], encode_tournament(created)))

    def _host_command(
        self, tournament: Tournament, token: str, action: HostAction, entrant: str | None
    ) -> Command:
        match action:
            case HostAction.OPEN:
                return Open(token)
            case HostAction.START:
                return StartNext(token, frozenset(self._connected(tournament)))
            case HostAction.REMOVE:
                if entrant is None:
                    raise _Refused(
                        ErrorCode.BAD_MESSAGE,
                        "tournament_control.entrant is missing: whom to remove?",
                    )
                return Remove(token, entrant)
            case HostAction.PAUSE:
                return Pause(token)
            case HostAction.RESUME:
                return Resume(token)
            case HostAction.END:
                return End(token)

    # ------------------------------------------------------------- races

    def race_finished(self, host: RaceHost) -> None:
        """A race ended (its result is journaled): count it if it is a tournament's."""
        tournament = self._by_race.get(host.race_id)
        result = host.race.result
        if tournament is None or result is None:
            return
        with contextlib.suppress(TournamentError):  # already counted (a replayed finish)
            self._apply(tournament, RecordResult(result))

    def _hold(self, tournament: Tournament, order: RaceOrdered) -> None:
        """Create the race ``order`` asks for, seat its entrants, and start it."""
        server = self.server
        options = tournament.settings.race_options(
            len(order.entrants),
            countdown=server.config.quick_countdown,
            reconnect_grace=server.config.reconnect_grace,
        )
        # One of the server's own race hosts, so that resumes and spectators find it.
        host = server.open_race(
            options, seed=order.seed, race_id=order.race_id, tournament_id=tournament.tournament_id
        )
        self._by_race[order.race_id] = tournament
        self._seat_and_start(tournament, order, host)
        log_event(
            "tournament_race",
            tournament=tournament.code,
            race=order.race_id,
            round=order.round,
            racers=len(order.entrants),
        )

    def _seat_and_start(self, tournament: Tournament, order: RaceOrdered, host: RaceHost) -> None:
        """Seat the entrants of ``order`` not yet in its race, then count down to its start
        (the countdown every race has: nobody is dropped into a race already running)."""
        for entrant_id in order.entrants:
            session = self.server.sessions.get(entrant_id)
            if session is not None:
                session.race_id = order.race_id
            if not host.race.has_racer(entrant_id):
                entrant = tournament.entrants[entrant_id]
                host.apply(core.Join(entrant_id, entrant.name, entrant.bot))
        host.apply(core.StartCountdown())

    # ------------------------------------------------------------ internal

    def _apply(
        self,
        tournament: Tournament,
        command: Command,
        reply: tuple[ServerConnection, str | None, int | None] | None = None,
    ) -> None:
        """Apply a command, journal its events, hold the races it orders, tell everyone."""
        now = self._now()
        events = tournament.apply(command, now)
        records = TournamentStore.events_of(tournament.tournament_id, events, now)
        committed = self.server.journal.submit(*records) if records else None
        for event in events:
            if isinstance(event, RaceOrdered):
                self._hold(tournament, event)
            elif isinstance(event, EntrantRemoved) and event.race_id in self.server.hosts:
                with contextlib.suppress(core.RaceError):
                    self.server.hosts[event.race_id].apply(core.Resign(event.entrant_id))
        answer = None
        if reply is not None:
            connection, you, reply_to = reply
            answer = (connection, encode_tournament(self.state_message(tournament, you, reply_to)))
        state = self.state_message(tournament) if events else None
        self._queue(committed, lambda: self._send_state(tournament, answer, state))
        if tournament.waiting_for_seed:
            self._search_for_arena(tournament)
        self._wake.set()

    def _search_for_arena(self, tournament: Tournament) -> None:
        """Find a seed for an arena whose entrants wait for one, unless a search is already
        running or the last one was refused a short while ago (the clock comes back then)."""
        seeds = self._seeds.get(tournament.code)
        if seeds is None or seeds.search is not None or self._now() < seeds.retry_at:
            return
        search = self.find_seed(tournament, requester=f"tournament {tournament.code}")
        # Refusals are logged by the search; nobody else waits for this one.
        search.add_done_callback(lambda done: done.cancelled() or done.exception())

    def state_message(
        self, tournament: Tournament, you: str | None = None, reply_to: int | None = None
    ) -> TournamentState:
        """The ``tournament`` message for ``tournament`` now."""
        return tournament_state(tournament, self._now(), you, reply_to)

    def _adopt(self, tournament: Tournament) -> None:
        tournament.is_present = self._is_connected
        self.tournaments[tournament.code] = tournament
        for race_id in tournament.races:
            self._by_race[race_id] = tournament

    def _find(self, code: str) -> Tournament:
        tournament = self.tournaments.get(code.upper())
        if tournament is None:
            raise _Refused(ErrorCode.TOURNAMENT_NOT_FOUND, f"there is no tournament {show(code)}")
        return tournament

    def _watch(self, tournament: Tournament, connection: ServerConnection) -> None:
        self._watchers.setdefault(tournament.code, set()).add(connection)

    def _connected(self, tournament: Tournament) -> Iterable[str]:
        return filter(self._is_connected, tournament.entrants)

    def _is_connected(self, entrant_id: str) -> bool:
        session = self.server.sessions.get(entrant_id)
        return session is not None and session.connection is not None

    def _send_state(
        self,
        tournament: Tournament,
        answer: tuple[ServerConnection, bytes] | None,
        state: TournamentState | None,
    ) -> None:
        """Send the answer to a request, if any, then ``state`` to everyone who follows
        the tournament: each connected entrant's copy with its own ``you``, the watchers'
        without. The state is encoded once; an entrant's copy is that encoding with ``you``
        put in front (:func:`protocol.codec.with_field`)."""
        frames = fanout.Frames(self.server.config.send_buffer_limit)
        if answer is not None:
            frames.add(answer[:1], answer[1])
        if state is not None:
            shared = encode_tournament(state)
            seen: set[ServerConnection] = set()
            for entrant_id in tournament.entrants:
                session = self.server.sessions.get(entrant_id)
                connection = session.connection if session is not None else None
                if connection is not None and connection not in seen:
                    seen.add(connection)
                    frames.add_parts(connection, *with_field(shared, "you", entrant_id))
            watchers = self._watchers.setdefault(tournament.code, set())
            watchers -= {c for c in watchers if c.state is State.CLOSED}
            frames.add(watchers - seen, shared)
        frames.flush()

    def _seed_source(self, code: str, settings: TournamentSettings) -> SeedSource:
        if settings.seed_policy == "winnable":
            seeds = self._seeds[code] = TournamentSeeds(self.server.winnable, settings.ruleset)
            return seeds
        return self.server.config.seed_source

    def _queue(
        self, committed: concurrent.futures.Future[None] | None, deliver: Callable[[], None]
    ) -> None:
        self._outbox.put_nowait(_Outgoing(committed, deliver))

    def _send(self, connections: Iterable[ServerConnection], frame: bytes) -> None:
        fanout.send(tuple(connections), frame, self.server.config.send_buffer_limit)

    async def _pump(self) -> None:
        """Deliver queued messages in order, each once its journal write is committed."""
        while (item := await self._outbox.get()) is not None:
            if item.committed is not None:
                try:
                    await self.server.journal.wait(item.committed)
                except Exception as error:
                    log_event("journal_error", error=repr(error))
                    continue
            item.deliver()

    async def _run_clock(self) -> None:
        """Tick the arenas at their deadlines (pairing delays and window closes)."""
        while True:
            self._wake.clear()
            deadlines = [
                (deadline, t)
                for t in self.tournaments.values()
                if (deadline := self._next_deadline(t)) is not None
            ]
            now = self._now()
            for deadline, tournament in deadlines:
                if deadline <= now:
                    try:
                        self._apply(tournament, Tick())
                    except Exception as error:  # one tournament's bug must not stop the rest
                        log_event(
                            "internal_error", tournament=tournament.code, error=failure(error)
                        )
            future = [deadline for deadline, _ in deadlines if deadline > now]
            timeout = min(future) - now if future else None
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    def _next_deadline(self, tournament: Tournament) -> float | None:
        """When the clock should tick ``tournament``: at its own deadline, or when an
        arena waiting for a seed may search again after a refusal."""
        deadline = tournament.next_deadline()
        seeds = self._seeds.get(tournament.code)
        if tournament.waiting_for_seed and seeds is not None and seeds.search is None:
            deadline = seeds.retry_at if deadline is None else min(deadline, seeds.retry_at)
        return deadline

    def _now(self) -> float:
        return self.server.config.clock()


def tournament_state(
    tournament: Tournament, now: float, you: str | None = None, reply_to: int | None = None
) -> TournamentState:
    """The ``tournament`` message for ``tournament`` at time ``now``."""
    return TournamentState(
        tournament=tournament.code,
        name=tournament.settings.name,
        format=tournament.format,
        status=tournament.status,
        paused=tournament.paused,
        ending=tournament.ending,
        round=tournament.round,
        rounds=tournament.settings.rounds,
        time_limit=max(1, round(tournament.settings.time_limit)),
        standings=tuple(
            TournamentStanding(
                place=line.place,
                tied=line.tied,
                entrant=line.entrant_id,
                name=line.name,
                bot=line.bot,
                state=line.state,
                points=line.points,
                stock_left=line.stock_left,
                time_ms=round(line.time * 1000),
                games=line.games,
            )
            for line in tournament.standings()
        ),
        races=tuple(
            TournamentRaceInfo(race=r.race_id, round=r.round, racers=r.entrants, finished=False)
            for r in tournament.races_in_progress()
        ),
        server_time=millis(now),
        ends_at=None if tournament.ends_at is None else millis(tournament.ends_at),
        you=you,
        reply_to=reply_to,
    )


def tournament_export(
    tournament: Tournament, now: float, reply_to: int | None = None
) -> TournamentExport:
    """The ``tournament_export`` message: the state now and every finished race."""
    return TournamentExport(
        state=tournament_state(tournament, now),
        games=tuple(finished_games(tournament)),
        reply_to=reply_to,
    )


def finished_games(tournament: Tournament) -> list[RaceFinished]:
    """Every finished race of ``tournament`` as a ``finished`` record, in order."""
    return [
        RaceFinished.from_result(
            r.result, started_at=r.result.started_at, ended_at=r.result.ended_at
        )
        for r in tournament.races.values()
        if r.result is not None
    ]
