"""Tournaments in the race tier: tournament requests in, races out, standings to their feeds.

:class:`TournamentDesk` is the shell around the pure :class:`~server.tournament.Tournament`
cores, the way :class:`~server.host.RaceHost` is around a race. It journals every event
the cores produce, creates and starts the races they order (through the race tier,
:class:`TournamentRaces`), feeds race results back to them, and publishes the
``tournament`` state on the tournament's feed once the change is durable (each
tournament's :class:`~server.outbox.Outbox`): entrants get their own copy, watchers the
shared one.

**Bounds.** Every tournament in memory is one not finished, or one finished less than
``finished_linger`` ago; a start brings back only those not finished. The server holds at
most ``max_open_tournaments`` not finished, and a session at most
``tournaments_per_session`` (not finished, or lingering), so ``create_tournament`` is
refused with ``server_busy`` past either. A tournament with no race in progress and no
event for ``tournament_idle_expiry`` is ended by the clock (:class:`Expire`). A finished
tournament no longer in memory is watched and exported from the store, read off the
event loop.

**The clock.** One task for all tournaments ticks each at its next deadline (an arena's
pairing or window close, a seed search's retry, the idle time, the end of a finished one's
linger), taken from a heap (:class:`~server.deadlines.Deadlines`) that each change of a
tournament updates: a pass looks only at the tournaments that are due.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from engine import Ruleset
from protocol import ErrorCode, RaceFinished, Role, encode, millis
from protocol.result import RaceResult
from protocol.schema import show
from protocol.tournament import (
    EXPORT_PAGE_BYTES,
    EXPORT_PAGE_GAMES,
    GAME_COUNT,
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
from server import race as core
from server.bus import (
    Audience,
    Bus,
    Caller,
    Deliver,
    Event,
    Follow,
    Refuse,
    ToFeed,
    ToSession,
    tournament_feed,
)
from server.codes import new_code
from server.config import ServerConfig
from server.deadlines import Deadlines
from server.journal_file import JournalRefused
from server.logs import failure, log_event
from server.outbox import Outbox
from server.store import Store, StoreError
from server.tournament import (
    Command,
    End,
    EntrantRemoved,
    Expire,
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
from server.tournament_store import (
    NONE_COUNTED,
    StoredTournament,
    TournamentCount,
    TournamentOpened,
    TournamentStore,
    restore,
)
from server.winnable import SeedRefused, WinnableSeeds

if TYPE_CHECKING:
    from server.host import RaceHost

#: Tournament codes are shorter than race ids: people read them out in a room.
TOURNAMENT_CODE_LENGTH = 6

#: Finished tournaments read back from the store kept at once (each for ``finished_linger``).
READ_BACK_KEPT = 4

#: Tournament messages a client may send, handled by :meth:`TournamentDesk.dispatch`.
TOURNAMENT_REQUESTS = tuple(TOURNAMENT_CLIENT_MESSAGES.values())


#: Codes tried for a new tournament before it is refused (a cluster's node leases each).
LEASE_TRIES = 3


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _settings_of(options: Any) -> TournamentSettings:
    """The settings ``create_tournament``'s options ask for; refused if out of range."""
    try:
        return TournamentSettings(
            name=options.name,
            format=options.format,
            rounds=options.rounds,
            race_size=options.race_size,
            time_limit=float(options.time_limit),
            arena_duration=float(options.arena_duration),
            seed_policy=options.seed_policy.value,
            ruleset=options.ruleset,
            rated=options.rated,
        )
    except ValueError as error:
        raise _Refused(ErrorCode.BAD_MESSAGE, f"create_tournament.options: {error}") from None


def _not_found(code: str) -> _Refused:
    return _Refused(ErrorCode.TOURNAMENT_NOT_FOUND, f"there is no tournament {show(code)}")


def _unreadable(error: Exception, **context: str) -> _Refused:
    """The refusal of a request the store could not be read for (logged)."""
    log_event("journal_error", logging.ERROR, error=str(error), **context)
    return _Refused(ErrorCode.SERVER_BUSY, "the server cannot read its store now; try again")


class TournamentRaces(Protocol):
    """What the desk needs of the race tier: its races, and where sessions are."""

    hosts: dict[str, RaceHost]
    """Every race the server holds, by id."""

    def open_race(
        self,
        options: core.RaceOptions,
        *,
        seed: str | None = None,
        race_id: str | None = None,
        tournament_id: str | None = None,
    ) -> RaceHost:
        """Create and journal a race."""
        ...

    def seat(self, session_id: str, host: RaceHost) -> list[Event]:
        """Seat ``session_id`` in ``host``'s race; the events that move its feed there."""
        ...

    def is_present(self, session_id: str) -> bool:
        """Whether ``session_id`` has a connection now."""
        ...

    async def lease(self, tournament_id: str) -> bool:
        """Take the lease of a new tournament (one process holds every lease); ``False``:
        it cannot be had now."""
        ...

    async def counted_elsewhere(
        self, session_id: str, since: float, here: Collection[str]
    ) -> TournamentCount:
        """The tournaments against the caps that the other nodes of a cluster hold, as
        the store has them (the join codes ``here``, in this node's memory, left out):
        those not finished, and those ``session_id`` created, not finished or finished
        after ``since``. One process: none. Raises :class:`StoreError` or
        :class:`JournalRefused` if the store cannot be read now."""
        ...

    def place_round(self, tournament_id: str, race_ids: Sequence[str]) -> None:
        """These races of tournament ``tournament_id``, just opened and counting down,
        share a deal: a cluster's node may hand them, together, to another node (one
        process runs them where they are)."""
        ...

    def resign_elsewhere(self, session_id: str, race_id: str) -> None:
        """Resign ``session_id`` from race ``race_id``, which runs on another node of the
        cluster."""
        ...

    def gone(self, resource_id: str) -> None:
        """A race or tournament is over and forgotten: nothing writes it any more."""
        ...


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
    """Every tournament this server holds (one desk in the race tier)."""

    def __init__(
        self,
        config: ServerConfig,
        journal: Store,
        bus: Bus,
        winnable: WinnableSeeds,
        races: TournamentRaces,
        on_journal_failure: Callable[[Exception], None],
    ):
        self._config = config
        self._journal = journal
        self._bus = bus
        self._winnable = winnable
        self._races = races
        self._on_journal_failure = on_journal_failure
        self.tournaments: dict[str, Tournament] = {}
        """In memory, by join code: every tournament not finished, and the finished ones
        for ``finished_linger`` (then they are read from the store)."""
        self._unfinished: set[str] = set()
        """The join codes of the tournaments not finished."""
        self._held_by: dict[str, set[str]] = {}
        """The join codes of the tournaments in memory, by the session that created them."""
        self.deadlines: Deadlines[str] = Deadlines()
        """When the clock next ticks each tournament that waits for something, by join
        code (its ``looked_at`` counts the clock's work)."""
        self._by_race: dict[str, Tournament] = {}
        self._outboxes: dict[str, Outbox] = {}
        """Each tournament's way out, by join code."""
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._seeds: dict[str, TournamentSeeds] = {}
        """Winnable tournaments' seed sources, by join code."""
        self._read_back: dict[str, tuple[Tournament, float]] = {}
        """Finished tournaments read from the store, each with when it was read, oldest
        first: at most :data:`READ_BACK_KEPT`, for ``finished_linger``, so that the pages
        of one export are read from the store once."""

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Bring back the stored tournaments not finished (after the race tier recovered
        its races), then start the clock task."""
        self.start_clock()
        journal = self._journal
        kept_ones = await journal.read_tournaments(include_finished=False) if journal.stores else []
        await self.take_over(kept_ones)

    def start_clock(self) -> None:
        """Start the clock task (with no tournament yet: a cluster's node takes them over
        one by one)."""
        self._tasks = [asyncio.create_task(self._run_clock(), name="tournaments-clock")]

    async def take_over(
        self, kept_ones: Sequence[StoredTournament], elsewhere: Collection[str] = ()
    ) -> list[str]:
        """Bring back these stored tournaments (after the race tier recovered their
        races); the sessions entered in them. The races in ``elsewhere`` (a cluster's
        races placed on other nodes) run where they are: their results are taken up as
        they are stored (:meth:`results_stored`)."""
        journal = self._journal
        stored = []
        for kept in kept_ones:
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
                host = self._races.hosts.get(race.race_id)
                if race.race_id in elsewhere:
                    continue  # placed on another node, and run there
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
        return [entrant for tournament, _ in stored for entrant in tournament.entrants]

    def drop(self, codes: Collection[str]) -> list[str]:
        """Stop running these tournaments (their lease is another node's, or about to be):
        nothing more sent, nothing more written; the ids of their races, which the race
        tier drops too."""
        races: list[str] = []
        for code in codes:
            tournament = self.tournaments.get(code)
            if tournament is None:
                continue
            self._outboxes[code].close()
            races.extend(tournament.races)
            self._forget(tournament, gone=False)
        return races

    def stop(self) -> None:
        """Cancel the desk's clock and send nothing more (the tournaments stay as
        journaled)."""
        for task in self._tasks:
            task.cancel()
        for outbox in self._outboxes.values():
            outbox.close()

    def wake(self) -> None:
        """Look at the deadlines again now (after the clock moved)."""
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

    def attached(self, session_id: str) -> None:
        """``session_id`` has a connection again: it listens to every tournament it is
        entered in (watching one is for the connection that asked, as before)."""
        follows: list[Event] = [
            Follow(session_id, tournament_feed(code), member=True)
            for code, tournament in self.tournaments.items()
            if session_id in tournament.entrants
        ]
        if follows:
            self._bus.publish(follows)

    # ------------------------------------------------------------- requests

    @staticmethod
    def handles(message: object) -> bool:
        """Whether ``message`` is a tournament request."""
        return isinstance(message, TOURNAMENT_REQUESTS)

    def dispatch(self, caller: Caller, message: Any) -> None:
        """Handle one tournament request; a refusal is answered with an ``error``."""
        try:
            self._dispatch(caller, message)
        except (_Refused, TournamentError, SeedRefused) as refusal:
            self._refuse(caller, message, refusal)

    async def answer_later(self, caller: Caller, message: Any) -> None:
        """Handle a tournament request the socket tier holds its connection for
        (:func:`~server.bus.answered_with_done`): one that may wait for a seed or for a
        read of the store."""
        match message:
            case CreateTournament():
                await self._create(caller, message)
            case WatchTournament() | ExportTournament():
                await self._watch_or_export(caller, message)
            case TournamentControl():
                await self.start_when_dealt(caller, message)
            case _:
                self.dispatch(caller, message)

    async def start_when_dealt(self, caller: Caller, message: TournamentControl) -> None:
        """Answer a host's ``start``. A tournament that deals winnable seeds and has none
        ready refuses it (:attr:`TournamentErrorCode.NO_SEED_READY`); then find one (the
        connection holds its later messages meanwhile) and start again."""
        try:
            self._dispatch(caller, message)
            return
        except TournamentError as refusal:
            if refusal.code is not TournamentErrorCode.NO_SEED_READY:
                self._refuse(caller, message, refusal)
                return
        except (_Refused, SeedRefused) as refusal:
            self._refuse(caller, message, refusal)
            return
        try:
            await self.find_seed(self._find(message.tournament), caller.session_id)
        except SeedRefused as refusal:
            self._refuse(caller, message, refusal)
            return
        self.dispatch(caller, message)

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
            seeds.found = await self._winnable.find(seeds.rules, requester)
        except SeedRefused as refusal:
            # An arena tries again later, not at once: its entrants would wait anyway.
            pause = self._config.hopeless_ruleset_seconds
            if refusal.code is not ErrorCode.NO_WINNABLE_DEAL:
                pause = self._config.winnable_budget
            seeds.retry_at = self._now() + pause
            log_event("tournament_seed_refused", tournament=tournament.code, code=refusal.code)
            raise
        finally:
            seeds.search = None
            self._schedule(tournament)  # an arena that waits for it may search again later
        if self.tournaments.get(tournament.code) is not tournament:
            return  # finished and forgotten meanwhile: nothing is dealt any more
        try:
            self._apply(tournament, Tick())
        except Exception as error:  # one tournament's bug must not stop the rest
            log_event("internal_error", tournament=tournament.code, error=failure(error))

    def _refuse(
        self, caller: Caller, message: Any, refusal: _Refused | TournamentError | SeedRefused
    ) -> None:
        self._bus.publish([
            Refuse(
                caller.session_id,
                ErrorCode(refusal.code.value),
                refusal.message,
                in_reply_to=message.TYPE,
                reply_to=message.id,
            )
        ])

    def _dispatch(self, caller: Caller, message: Any) -> None:
        session_id = caller.session_id
        match message:
            case TournamentControl(
                tournament=code, host_token=token, action=action, entrant=entrant, id=reply_to
            ):
                tournament = self._find(code)
                command = self._host_command(tournament, token, action, entrant)
                you = session_id if session_id in tournament.entrants else None
                self._apply(tournament, command, (session_id, you, reply_to))
            case JoinTournament(tournament=code, id=reply_to):
                if caller.role is not Role.PLAYER:
                    raise _Refused(
                        ErrorCode.WRONG_ROLE, "a spectator cannot enter: say hello as a player"
                    )
                tournament = self._find(code)
                feed = tournament_feed(tournament.code)
                # It watches from now on, entered or refused (it asked to be in it).
                self._post(tournament, None, [Follow(session_id, feed, member=False)])
                self._apply(
                    tournament,
                    Join(session_id, caller.name, caller.bot),
                    (session_id, session_id, reply_to),
                    first=[Follow(session_id, feed, member=True)],
                )
            case LeaveTournament(tournament=code, id=reply_to):
                tournament = self._find(code)
                self._apply(tournament, Leave(session_id), (session_id, session_id, reply_to))
            case SetArenaAvailable(tournament=code, available=available, id=reply_to):
                tournament = self._find(code)
                self._apply(
                    tournament,
                    SetAvailable(session_id, available),
                    (session_id, session_id, reply_to),
                )
            case WatchTournament(tournament=code, id=reply_to):
                tournament = self._find(code)
                you = session_id if session_id in tournament.entrants else None
                state = encode_tournament(self.state_message(tournament, you, reply_to))
                watch = Follow(session_id, tournament_feed(tournament.code), member=False)
                self._post(tournament, None, [watch, Deliver(ToSession(session_id), state)])
            case ExportTournament(tournament=code, after=after, id=reply_to):
                tournament = self._find(code)
                export = export_page(tournament, self._now(), after, reply_to)
                answer = Deliver(ToSession(session_id), encode_tournament(export))
                self._post(tournament, None, [answer])

    async def _create(self, caller: Caller, message: CreateTournament) -> None:
        """Answer ``create_tournament``: refused past the caps, else a new tournament whose
        code no tournament has, stored or in memory (a finished one's code, forgotten
        after its linger, is still taken in the store)."""
        try:
            settings = _settings_of(message.options)
            elsewhere = await self._counted_elsewhere(caller.session_id)
            self._check_room(caller.session_id, elsewhere)
            if settings.seed_policy == "winnable":
                self._winnable.check_hopeful(settings.ruleset)  # no deal to be had lately
            code = await self._leased_code()
            # Others may have created one meanwhile (here; elsewhere, in a cluster, such a
            # race of two nodes' creations is not closed: each counts the other's once
            # stored).
            self._check_room(caller.session_id, elsewhere)
        except (_Refused, SeedRefused) as refusal:
            self._refuse(caller, message, refusal)
            return
        self._open(caller.session_id, settings, code, message.id)

    async def _counted_elsewhere(self, session_id: str) -> TournamentCount:
        """What the caps count beyond this node's memory: a cluster's other nodes'
        tournaments, read in the store (none for one process, or with no cap)."""
        config = self._config
        if not (config.max_open_tournaments or config.tournaments_per_session):
            return NONE_COUNTED
        since = self._now() - config.finished_linger
        try:
            return await self._races.counted_elsewhere(session_id, since, self.tournaments)
        except (StoreError, JournalRefused) as error:
            raise _unreadable(error) from None

    def _check_room(self, session_id: str, elsewhere: TournamentCount) -> None:
        """Refuse a new tournament past the server's cap or ``session_id``'s (counting
        ``elsewhere``: a cluster's, the other nodes' tournaments)."""
        most = self._config.max_open_tournaments
        running = len(self._unfinished) + elsewhere.unfinished
        if most and running >= most:
            raise _Refused(
                ErrorCode.SERVER_BUSY,
                f"the server already runs {running} tournaments, as many as "
                "it may; try again when one is over",
            )
        own = self._config.tournaments_per_session
        held = len(self._held_by.get(session_id, ())) + elsewhere.created
        if own and held >= own:
            raise _Refused(
                ErrorCode.SERVER_BUSY,
                f"you already have {held} tournaments, as many as one session may: end one "
                f"(a finished one still counts for {self._config.finished_linger:g} seconds)",
            )

    async def _leased_code(self) -> str:
        """An unused join code, whose lease this node holds (a cluster's: one process
        holds every lease)."""
        for _ in range(LEASE_TRIES):
            code = await self._unused_code()
            if await self._races.lease(code):
                return code
        raise _Refused(
            ErrorCode.UNAVAILABLE,
            "no new tournament can be leased right now: send it again shortly",
        )

    async def _unused_code(self) -> str:
        """A join code no tournament has, in memory or in the store."""
        while True:
            code = new_code(TOURNAMENT_CODE_LENGTH, taken=self.tournaments)
            stored = await self._read_stored(code)
            if not stored and code not in self.tournaments:
                return code

    async def _read_stored(self, code: str) -> list[StoredTournament]:
        """The stored tournament with join code ``code`` (none or one), read off the
        event loop; a store that cannot be read now refuses the request."""
        if not self._journal.stores:
            return []
        try:
            return await self._journal.read_tournaments(code)
        except (StoreError, JournalRefused) as error:
            raise _unreadable(error, tournament=code) from None

    async def _watch_or_export(
        self, caller: Caller, message: WatchTournament | ExportTournament
    ) -> None:
        """Answer ``watch_tournament`` or ``export_tournament``: from memory, or for a
        tournament no longer there (finished, and forgotten after its linger) from the
        store. Such a tournament changes no more: a watcher is sent its state, and is not
        made to follow it."""
        code = message.tournament.upper()
        if code in self.tournaments:
            self.dispatch(caller, message)
            return
        try:
            tournament = await self._finished_in_store(code, message.tournament)
        except _Refused as refusal:
            self._refuse(caller, message, refusal)
            return
        session_id, now = caller.session_id, self._now()
        answer: TournamentState | TournamentExport
        if isinstance(message, ExportTournament):
            try:
                answer = export_page(tournament, now, message.after, message.id)
            except _Refused as refusal:
                self._refuse(caller, message, refusal)
                return
        else:
            you = session_id if session_id in tournament.entrants else None
            answer = tournament_state(tournament, now, you, message.id)
        self._bus.publish([Deliver(ToSession(session_id), encode_tournament(answer))])

    async def _finished_in_store(self, code: str, asked: str) -> Tournament:
        """Tournament ``code`` as stored (``asked``: the code as the request spelt it); a
        finished one is read again only when not read lately: it changes no more."""
        now, kept = self._now(), self._read_back
        since = now - self._config.finished_linger
        for stale in [c for c, (_, read_at) in kept.items() if read_at <= since]:
            del kept[stale]
        if code in kept:
            return kept[code][0]
        stored = await self._read_stored(code)
        if not stored:
            raise _not_found(asked)
        # Bringing back a big event takes its whole history (0.6-0.9 s of CPU for 1,200
        # games): on a thread of its own, the event loop keeps serving meanwhile.
        tournament = await asyncio.to_thread(restore, stored[0])
        if tournament.status is TournamentStatus.FINISHED:  # another node's may still run
            kept[code] = (tournament, now)
            while len(kept) > READ_BACK_KEPT:
                del kept[next(iter(kept))]
        return tournament

    def _open(
        self, session_id: str, settings: TournamentSettings, code: str, reply_to: int | None
    ) -> None:
        """Create tournament ``code`` for ``session_id``, its host, and journal it."""
        token = secrets.token_hex(24)  # hex: never starts with "-", so "--token TOKEN" parses
        seeds = self._seed_source(code, settings)
        tournament = Tournament(
            code, code, hash_token(token), settings, self._now(), seeds, created_by=session_id
        )
        self._adopt(tournament)
        committed = self._journal.submit(TournamentOpened.of(tournament))
        created = TournamentCreated(tournament=code, host_token=token, reply_to=reply_to)
        log_event("tournament_create", tournament=code, format=settings.format.value)
        answer = Deliver(ToSession(session_id), encode_tournament(created))
        self._post(tournament, committed, [answer])

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
        if host.race.result is not None:
            self._count(host.race.result)

    def placed_races(self) -> list[str]:
        """The races in progress of the tournaments not finished that run on other nodes
        of the cluster (placed there): their results are read from the store."""
        return [
            race.race_id
            for code in self._unfinished
            for race in self.tournaments[code].races_in_progress()
            if race.race_id not in self._races.hosts
        ]

    def results_stored(self, results: Iterable[RaceResult]) -> None:
        """Results of races placed on other nodes, as stored: count each not counted yet."""
        for result in results:
            self._count(result)

    def _count(self, result: RaceResult) -> None:
        """Count a finished race in its tournament, if it is one's and not counted yet."""
        tournament = self._by_race.get(result.race_id)
        if tournament is None:
            return
        with contextlib.suppress(TournamentError):  # already counted (a replayed finish)
            self._apply(tournament, RecordResult(result))

    def _hold(self, tournament: Tournament, order: RaceOrdered) -> None:
        """Create the race ``order`` asks for, seat its entrants, and start it."""
        options = tournament.settings.race_options(
            len(order.entrants),
            countdown=self._config.quick_countdown,
            reconnect_grace=self._config.reconnect_grace,
        )
        # One of the race tier's own races, so that resumes and spectators find it.
        host = self._races.open_race(
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
        first: list[Event] = []
        for entrant_id in order.entrants:
            first.extend(self._races.seat(entrant_id, host))
        for entrant_id in order.entrants:
            if not host.race.has_racer(entrant_id):
                entrant = tournament.entrants[entrant_id]
                host.apply(core.Join(entrant_id, entrant.name, entrant.bot), first=first)
                first = []
        host.apply(core.StartCountdown(), first=first)

    # ------------------------------------------------------------ internal

    def _apply(
        self,
        tournament: Tournament,
        command: Command,
        reply: tuple[str, str | None, int | None] | None = None,
        first: Sequence[Event] = (),
    ) -> None:
        """Apply a command, journal its events, hold the races it orders, tell everyone
        (after ``first``)."""
        now = self._now()
        events = tournament.apply(command, now)
        records = TournamentStore.events_of(tournament.tournament_id, events, now)
        committed = self._journal.submit(*records) if records else None
        deals: dict[str, list[str]] = {}  # the races ordered now, by the seed they share
        for event in events:
            if isinstance(event, RaceOrdered):
                self._hold(tournament, event)
                deals.setdefault(event.seed, []).append(event.race_id)
            elif isinstance(event, EntrantRemoved) and event.race_id in self._races.hosts:
                with contextlib.suppress(core.RaceError):
                    self._races.hosts[event.race_id].apply(core.Resign(event.entrant_id))
            elif isinstance(event, EntrantRemoved) and event.race_id is not None:
                self._races.resign_elsewhere(event.entrant_id, event.race_id)
        for race_ids in deals.values():
            self._races.place_round(tournament.tournament_id, race_ids)
        out = list(first)
        if reply is not None:
            session_id, you, reply_to = reply
            answer = encode_tournament(self.state_message(tournament, you, reply_to))
            out.append(Deliver(ToSession(session_id), answer))
        if events:
            # Encoded once: each entrant's copy is this encoding with its ``you`` in front.
            shared = encode_tournament(self.state_message(tournament))
            to = ToFeed(tournament_feed(tournament.code), Audience.EVERYONE)
            out.append(Deliver(to, shared, you=True))
        self._post(tournament, committed, out)
        if tournament.status is TournamentStatus.FINISHED:
            self._unfinished.discard(tournament.code)
        if tournament.waiting_for_seed:
            self._search_for_arena(tournament)
        self._schedule(tournament)

    def _post(self, tournament: Tournament, committed: Any, events: list[Event]) -> None:
        """Publish ``events`` on ``tournament``'s feed once ``committed`` is."""
        self._outboxes[tournament.code].post(committed, lambda batch: batch.extend(events))

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
        code = tournament.code
        tournament.is_present = self._races.is_present
        self.tournaments[code] = tournament
        self._outboxes[code] = Outbox(
            self._journal, self._bus, self._on_journal_failure, f"tournament:{code}"
        )
        for race_id in tournament.races:
            self._by_race[race_id] = tournament
        if tournament.status is not TournamentStatus.FINISHED:
            self._unfinished.add(code)
        if tournament.created_by is not None:
            self._held_by.setdefault(tournament.created_by, set()).add(code)
        self._schedule(tournament)

    def _forget(self, tournament: Tournament, *, gone: bool = True) -> None:
        """Let a finished tournament go from memory (its linger is over): from now on it
        is read from the store (``gone``: nothing writes it any more). Its outbox is
        dropped, not closed: what it still has to send goes out once committed."""
        code = tournament.code
        if gone:
            self._races.gone(tournament.tournament_id)
        del self.tournaments[code]
        self._unfinished.discard(code)
        creator = tournament.created_by
        if creator is not None:
            held = self._held_by[creator]
            held.discard(code)
            if not held:
                del self._held_by[creator]
        for race_id in tournament.races:
            if self._by_race.get(race_id) is tournament:
                del self._by_race[race_id]
        del self._outboxes[code]
        self._seeds.pop(code, None)
        self.deadlines.set(code, None)
        log_event("tournament_forgotten", tournament=code)

    def _find(self, code: str) -> Tournament:
        tournament = self.tournaments.get(code.upper())
        if tournament is None:
            raise _not_found(code)
        return tournament

    def _connected(self, tournament: Tournament) -> Iterable[str]:
        return filter(self._races.is_present, tournament.entrants)

    def _seed_source(self, code: str, settings: TournamentSettings) -> SeedSource:
        if settings.seed_policy == "winnable":
            seeds = self._seeds[code] = TournamentSeeds(self._winnable, settings.ruleset)
            return seeds
        return self._config.seed_source

    async def _run_clock(self) -> None:
        """Handle each tournament at its deadline (:meth:`_next_deadline`), looking only
        at those that are due."""
        while True:
            self._wake.clear()
            now = self._now()
            for code in self.deadlines.due(now):
                tournament = self.tournaments.get(code)
                if tournament is None:
                    continue
                try:
                    self._when_due(tournament, now)
                except Exception as error:  # one tournament's bug must not stop the rest
                    log_event("internal_error", tournament=code, error=failure(error))
            next_time = self.deadlines.next_time()
            timeout = None if next_time is None else max(0.0, next_time - self._now())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    def _when_due(self, tournament: Tournament, now: float) -> None:
        """What ``tournament``'s deadline was for: forget a finished one, end an abandoned
        one, or tick (an arena pairs, its window closes, a seed search starts again)."""
        if tournament.status is TournamentStatus.FINISHED:
            self._forget(tournament)
            return
        idle_for = self._config.tournament_idle_expiry
        idle_deadline = tournament.idle_deadline(idle_for)
        if idle_deadline is not None and idle_deadline <= now:
            self._apply(tournament, Expire(idle_for))
            log_event("tournament_expired", tournament=tournament.code, idle_for=idle_for)
        else:
            self._apply(tournament, Tick())

    def _schedule(self, tournament: Tournament) -> None:
        """Put ``tournament``'s next deadline in :attr:`deadlines`; wake the clock if it
        is now the earliest."""
        if self.tournaments.get(tournament.code) is not tournament:
            return  # forgotten: nothing is due for it any more
        if self.deadlines.set(tournament.code, self._next_deadline(tournament)):
            self._wake.set()

    def _next_deadline(self, tournament: Tournament) -> float | None:
        """When the clock should look at ``tournament``: the end of its linger once
        finished; else the earliest of its own deadline, the time an arena waiting for a
        seed may search again after a refusal, and the end of its idle time."""
        if tournament.status is TournamentStatus.FINISHED:
            return tournament.last_event_at + self._config.finished_linger
        times = [
            tournament.next_deadline(),
            tournament.idle_deadline(self._config.tournament_idle_expiry),
        ]
        seeds = self._seeds.get(tournament.code)
        if tournament.waiting_for_seed and seeds is not None and seeds.search is None:
            times.append(seeds.retry_at)
        return min((time for time in times if time is not None), default=None)

    def _now(self) -> float:
        return self._config.clock()


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
    """The state now and every finished race in one message, for use in this process
    (``tournament export --db``, tests): on the wire it may not fit, and
    :func:`export_page` sends it a page at a time."""
    return TournamentExport(
        state=tournament_state(tournament, now),
        games=tuple(finished_game(result) for result in tournament.finished),
        reply_to=reply_to,
    )


#: Bytes an array header may take beyond an empty array's (msgpack's array32 over fixarray).
_ARRAY_HEADER = 4


def export_page(
    tournament: Tournament, now: float, after: int | None = None, reply_to: int | None = None
) -> TournamentExport:
    """One page of the export (``tournament_export``): the state now, and the finished
    races from position ``after`` on in the order they finished, as many as fit within
    :data:`EXPORT_PAGE_GAMES` and :data:`EXPORT_PAGE_BYTES` (at least one), with the
    position of the next page unless this one reaches the last game. An ``after`` past
    the finished races is refused with ``bad_cursor``."""
    start = after or 0
    done = tournament.finished
    if start > len(done):
        raise _Refused(
            ErrorCode.BAD_CURSOR,
            f"export_tournament.after is {start}, but tournament {tournament.code} has "
            f"{len(done)} finished games: ask again without after for the first page",
        )
    state = tournament_state(tournament, now)
    # The page without its games, as wide as it may get (the largest next, the widest
    # array header); each game counted as the message it is alone, a few bytes more.
    bare = TournamentExport(state=state, games=(), next=GAME_COUNT.high, reply_to=reply_to)
    room = EXPORT_PAGE_BYTES - len(encode_tournament(bare)) - _ARRAY_HEADER
    games: list[RaceFinished] = []
    for result in done[start : start + EXPORT_PAGE_GAMES]:
        game = finished_game(result)
        size = len(encode(game))
        if games and size > room:
            break
        games.append(game)
        room -= size
    end = start + len(games)
    return TournamentExport(
        state=state,
        games=tuple(games),
        next=end if end < len(done) else None,
        reply_to=reply_to,
    )


def finished_game(result: RaceResult) -> RaceFinished:
    """A finished race of a tournament as its ``finished`` record."""
    return RaceFinished.from_result(result, started_at=result.started_at, ended_at=result.ended_at)
