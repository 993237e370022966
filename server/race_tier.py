"""The race tier: every race, every tournament, the lobby, the journal's races, and the
searches for seeds and pars. Commands come in from the bus, events go out on it.

:class:`RaceTier` answers the bus's commands (:mod:`server.bus`): a client's requests,
sessions coming and going, the expiry's questions. It knows sessions by their ids only,
never a connection: what it says goes to a session or to a race's or tournament's feed,
and the socket tier finds the connections. The decisions themselves are the pure cores':
:class:`~server.lobby.Lobby` (where to race), :class:`~server.race.Race` (one race, in a
:class:`~server.host.RaceHost`) and :class:`~server.tournament.Tournament` (in the
:class:`~server.tournament_host.TournamentDesk`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import weakref
from collections.abc import Awaitable, Callable, Collection, Container, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

import protocol
from protocol import ErrorCode, RacePar, Role, encode
from protocol.daily import DailyRace
from protocol.players import PROVISIONAL_GAMES, RatingChanged, encode_players
from protocol.result import RaceResult
from protocol.schema import show
from server import lobby as lobbies
from server import race as core
from server.bus import (
    Attach,
    Bus,
    Caller,
    CheckExpiry,
    ClientRequest,
    Command,
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
    race_feed,
)
from server.config import ServerConfig
from server.daily import DailyRules, daily_rules, day_of, entrant_of, last_revealed_day, reveal_at
from server.daily_store import (
    DailyDeal,
    ParFound,
    deal_of_day,
    deal_wanting_par,
    keep_par,
    record_room,
    release_attempt,
    take_attempt,
)
from server.host import RaceHost
from server.journal import (
    RaceOpened,
    Recovered,
    StoppedWatching,
    Watching,
    replay_commands,
    unplayed,
)
from server.journal_file import JournalRefused
from server.lobby import Lobby
from server.logs import failure, log_event
from server.metrics import Metrics
from server.outbox import Outbox
from server.outgoing import card_message, race_options
from server.pars import ParQueue
from server.player_store import RatingChange, record_race
from server.ratings import pool_of, shown
from server.replays import FinishedRace, finished_race
from server.store import Store, StoreError
from server.tournament_host import TournamentDesk
from server.tournament_store import NONE_COUNTED, TournamentCount
from server.winnable import SeedRefused, WinnableSeeds


class Refused(Exception):
    """A request the race tier refuses, with the error code to answer it with."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def _nothing(*_: str) -> None:
    """A hook nobody needs (one process: its lease of every resource covers everything)."""


async def _leased(_: str) -> bool:
    """One process holds the lease of every resource."""
    return True


async def _none_counted(_: str, __: float, ___: Collection[str]) -> TournamentCount:
    """One process counts every tournament in its own memory."""
    return NONE_COUNTED


@dataclass(frozen=True, slots=True)
class Ownership:
    """How a node of a cluster leases what its race tier runs (:mod:`server.cluster`);
    one process needs none of it."""

    new_race_id: Callable[[Container[str]], str] = lobbies.new_race_id
    """The id of a new race (a cluster's node takes one it holds the lease of already)."""
    cover: Callable[[str, str], None] = _nothing
    """A race of a tournament (the first id) is written from now on, under the lease of
    its tournament (the second)."""
    lease: Callable[[str], Awaitable[bool]] = _leased
    """Take the lease of a new tournament; ``False``: it cannot be had now."""
    gone: Callable[[str], None] = _nothing
    """A race or tournament is over and forgotten: nothing writes it any more."""
    race_failed: Callable[[str, Exception], None] | None = None
    """A write of this race failed (``None``: the tier's journal-failure policy)."""
    place: Callable[[str, str], None] = _nothing
    """The lobby placed a started race (the first id) on another node (the second):
    hand it over (:meth:`RaceTier.hand_over`). Only a lobby given a load map places."""
    seats: bool = False
    """Keep the store's ``seats`` table (:mod:`server.seats`): the races run on many
    nodes, and a session's node reads there whether it is tied to a race."""
    count_tournaments: Callable[[str, float, Collection[str]], Awaitable[TournamentCount]] = (
        _none_counted
    )
    """The tournaments against the caps the other nodes hold, read in the store
    (:meth:`~server.tournament_host.TournamentRaces.counted_elsewhere`)."""
    place_round: Callable[[str, Sequence[str]], None] | None = None
    """A tournament (the id) opened these races, which share a deal: they may be handed
    over together to another node (:meth:`RaceTier.hand_over`). ``None``: every race
    runs here (one process)."""


class RaceTier:
    """The races, tournaments and lobby of one server, behind the bus."""

    def __init__(
        self,
        config: ServerConfig,
        journal: Store,
        bus: Bus,
        metrics: Metrics,
        on_journal_failure: Callable[[Exception], None],
        ownership: Ownership = Ownership(),
    ) -> None:
        self.config = config
        self.journal = journal
        self._bus = bus
        self._metrics = metrics
        self._on_journal_failure = on_journal_failure
        self._ownership = ownership
        self.hosts: dict[str, RaceHost] = {}
        self.lobby = Lobby(self._quick_options(), ownership.new_race_id)
        self.daily: DailyRules = daily_rules(config)
        """How the daily deal's rooms are raced."""
        self._daily_clock: asyncio.Task[None] | None = None
        self._present: dict[str, str] = {}
        """Sessions that have a connection now (for racers' ``connected`` flags), each
        with the node it is connected to (``""`` in one process)."""
        self._watching: dict[str, dict[str, None]] = {}
        """The races each session spectates, oldest first (a dict for its order), as
        journaled (:class:`~server.journal.Watching`)."""
        # Weak: a deal lives as long as one of its races holds it.
        self._shared_deals: weakref.WeakValueDictionary[str, core.SharedDeal] = (
            weakref.WeakValueDictionary()
        )
        self._outbox = Outbox(journal, bus, on_journal_failure, "lobby")
        """What the lobby says that must wait for a commit (a race it has forgotten)."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._recording: set[asyncio.Task[None]] = set()
        """Finished races being kept in their players' records (and rated)."""
        self.stopping = False
        self.pars = ParQueue(config, metrics)
        """Finished races waiting for their deal's par (a bounded queue, one low-priority
        child process)."""
        self.winnable = WinnableSeeds(config, metrics)
        """Winnable seeds for races and tournaments (another low-priority child process)."""
        self.tournaments = TournamentDesk(
            config, journal, bus, self.winnable, self, on_journal_failure
        )
        metrics.races_by_phase = self._races_by_phase

    # ------------------------------------------------------------ lifecycle

    async def recover(self, recovered: Recovered) -> None:
        """Bring back every unfinished race, the races sessions watch, and the
        tournaments (before any command comes)."""
        self._restore(recovered, {player.player_id for player in recovered.players})
        await self.tournaments.start()

    def take_over(self, recovered: Recovered) -> list[str]:
        """Bring back races another node of a cluster ran (their leases lapsed, and are
        this node's now) and who watches them, as :meth:`recover` does; the sessions to
        send where they stand (their racers and spectators)."""
        self._restore(recovered, None)
        sessions: dict[str, None] = {}
        for stored in recovered.races:
            host = self.hosts.get(stored.opened.race_id)
            if host is not None:
                sessions.update(dict.fromkeys(host.race.racer_ids))
        for watching in recovered.watching:
            sessions[watching.player_id] = None
        return list(sessions)

    def drop(self, race_ids: Collection[str]) -> None:
        """Stop running these races (their lease is another node's, or about to be): no
        clock, nothing more sent; the lobby and the spectators forget them."""
        for race_id in race_ids:
            host = self.hosts.pop(race_id, None)
            if host is None:
                continue
            host.stop()
            self.pars.forget(host)
            self.lobby.apply(lobbies.RaceGone(race_id))
            for watching in self._watching.values():
                watching.pop(race_id, None)

    def drop_tournaments(self, codes: Collection[str], keep: Container[str] = ()) -> list[str]:
        """Stop running these tournaments and their races (see :meth:`drop`) but those in
        ``keep`` (races of theirs placed here, under leases of their own); the ids of the
        races dropped."""
        races = [race_id for race_id in self.tournaments.drop(codes) if race_id not in keep]
        self.drop(races)
        return races

    def _restore(self, recovered: Recovered, known: set[str] | None) -> None:
        """Races and who watches them, as stored (only sessions in ``known``, if given)."""
        for watching in recovered.watching:  # sent again when the spectator resumes
            if known is None or watching.player_id in known:
                self._watching.setdefault(watching.player_id, {})[watching.race_id] = None
        races = [(unplayed(stored), stored) for stored in recovered.races]
        for race, _ in races:  # every race in its deal before any replays, so none finishes early
            self._share_deal(race)
        for race, stored in races:
            replay_commands(race, stored)  # fast: replaying a race takes about a millisecond
            if not race.racer_ids:
                continue  # a lobby everyone left: nothing to come back to
            host = self.hosts[race.race_id] = self._host(race)
            self._changed(host)
            for racer_id in race.racer_ids:
                if known is None or racer_id in known:
                    self.lobby.apply(lobbies.Seated(racer_id, race.race_id))
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

    def start(self) -> None:
        """Begin the background work (the stock of winnable seeds, the daily deal's pars)."""
        self.winnable.start()
        if self.config.par_budget > 0:
            self._daily_clock = asyncio.get_running_loop().create_task(
                self._search_daily_pars(), name="daily-pars"
            )

    async def drain(self) -> None:
        """Stop taking commands, end the searches, and send everything journaled so far."""
        self.stopping = True
        # Searches end now: a request waiting for a winnable deal is refused (each would
        # otherwise hold its connection, and so the shutdown, for up to its budget), and
        # no par is sent once the server has stopped.
        await self.close_searches()
        if self._recording:  # the races finished last are kept in their players' records
            await asyncio.wait(self._recording)
        await asyncio.gather(
            *(host.drain() for host in self.hosts.values()), self._outbox.drain()
        )

    async def close_searches(self) -> None:
        """End the searches for seeds and pars (their child processes exit)."""
        if self._daily_clock is not None:
            self._daily_clock.cancel()
        await self.winnable.close()
        await self.pars.close()

    def stop(self) -> None:
        """Send nothing more, and stop every clock."""
        self.stopping = True
        if self._daily_clock is not None:
            self._daily_clock.cancel()
        for host in self.hosts.values():
            host.stop()
        self._outbox.close()
        self.tournaments.stop()

    # ------------------------------------------------------------- commands

    def handle(self, command: Command) -> None:
        """Carry out one command from the bus."""
        match command:
            case Request(caller, message, received_at, ticket):
                self._request(caller, message, received_at, ticket)
            case Attach(caller, _, ticket, _, node):
                self._attach(caller, ticket, node)
            case Detach(session_id, replaced, node):
                if self._present.get(session_id, node) == node:
                    self._detach(session_id, replaced)
                # (else it came back on another node meanwhile: that node's Attach said so)
            case CheckExpiry(session_ids):
                keep = tuple(s for s in session_ids if self._holds(s))
                forget = tuple(s for s in session_ids if s not in keep)
                self._bus.publish([ExpiryChecked(keep, forget)])

    def _request(
        self,
        caller: Caller,
        message: ClientRequest,
        received_at: float | None,
        ticket: int | None,
    ) -> None:
        if answered_with_done(message):
            self._run(self._answer_later(caller, message, ticket))
            return
        try:
            self._dispatch(caller, message, received_at)
        except Exception as error:
            self._answer_failed(caller, message, error)
        if ticket is not None:  # (a cluster's joins: see _done)
            self._done(caller.session_id, ticket)

    def _done(self, session_id: str, ticket: int) -> None:
        """Say :class:`Done` for a request: at once, or, in a cluster, once what it
        journaled is committed (a join's seat is in the store before the session's next
        join is checked there: :mod:`server.seats`; the socket tier waits for it at most
        ``failover_wait``, should this tier be dropped first)."""
        done = Done(session_id, ticket)
        if self._ownership.seats:
            # The transaction gathering now holds what the request submitted.
            self._outbox.post(self.journal.submit(), lambda events: events.append(done))
        else:
            self._bus.publish([done])

    def _run(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` in the background (held, so the task is not lost)."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer_later(
        self, caller: Caller, message: ClientRequest, ticket: int | None
    ) -> None:
        """Answer a request that may wait (for a winnable deal, or a read of the store),
        then say :class:`Done` (when the socket tier holds its connection for it)."""
        try:
            if isinstance(message, protocol.CreateRace):
                await self._on_create_winnable_race(caller, message)
            elif isinstance(message, protocol.Spectate):
                await self._on_spectate_or_replay(caller, message)
            elif isinstance(message, DailyRace):
                await self._on_daily_race(caller, message)
            elif self.tournaments.handles(message):
                await self.tournaments.answer_later(caller, message)
        except Exception as error:
            self._answer_failed(caller, message, error)
        finally:
            if ticket is not None and isinstance(message, protocol.CreateRace | DailyRace):
                self._done(caller.session_id, ticket)  # a join
            elif ticket is not None:
                self._bus.publish([Done(caller.session_id, ticket)])

    def _answer_failed(self, caller: Caller, message: ClientRequest, error: Exception) -> None:
        """Answer a request whose handling raised: a refusal as its error code, anything
        else as ``internal_error`` (a bug must cost one answer, never the connection)."""
        session_id = caller.session_id
        if isinstance(error, Refused | core.RaceError | SeedRefused):
            code = ErrorCode(error.code.value) if isinstance(error, core.RaceError) else error.code
            self._bus.publish(
                [Refuse(session_id, code, error.message, message.TYPE, message.id)]
            )
            if code is ErrorCode.BAD_MOVE_NUMBER and isinstance(message, protocol.Place):
                self._send_card_again(session_id, message.race)
            return
        self._bus.publish([
            Refuse(
                session_id,
                ErrorCode.INTERNAL_ERROR,
                "the server failed to handle this message",
                message.TYPE,
                message.id,
                failure=failure(error),
            )
        ])

    def _dispatch(self, caller: Caller, message: ClientRequest, received_at: float | None) -> None:
        match message:
            case protocol.Place():
                host = self._racing_in(caller.session_id, message.race)
                host.apply(
                    core.Place(caller.session_id, message.move, message.position),
                    reply_to=message.id,
                    received_at=received_at,
                )
            case protocol.CreateRace():
                options = self._options_to_create(caller, message)
                self._place(caller, lobbies.CreateRace(caller.session_id, options), message.id)
            case protocol.ListRaces():
                self._on_list_races(caller, message)
            case protocol.QuickRace():
                self._check_free_to_join(caller)
                self._place(caller, lobbies.QuickRace(caller.session_id), message.id)
            case protocol.JoinRace():
                self._on_join_race(caller, message)
            case protocol.LeaveRace():
                self._on_leave_race(caller, message)
            case protocol.Ready():
                host = self._racing_in(caller.session_id, message.race)
                host.apply(core.SetReady(caller.session_id, message.ready))
                host.tell(caller.session_id, protocol.Ok(
                    in_reply_to="ready", race=host.race_id, reply_to=message.id
                ))
            case protocol.Resign():
                host = self._racing_in(caller.session_id, message.race)
                host.apply(core.Resign(caller.session_id))
                host.tell(caller.session_id, protocol.Ok(
                    in_reply_to="resign", race=host.race_id, reply_to=message.id
                ))
            case protocol.Spectate():
                self._on_spectate(caller, message)
            case _ if self.tournaments.handles(message):
                self.tournaments.dispatch(caller, message)
            case _:
                raise Refused(ErrorCode.BAD_MESSAGE, f"{message.TYPE} is not a race request")

    # ---------------------------------------------------------- the lobby

    def _on_list_races(self, caller: Caller, message: protocol.ListRaces) -> None:
        summaries = tuple(
            protocol.RaceSummary(
                race=listing.race_id,
                state=protocol.RaceState(listing.phase.value),
                racers=listing.racers,
                max_racers=listing.options.max_racers,
                min_racers=listing.options.min_racers,
                time_limit=max(1, round(listing.options.time_limit)),
                ruleset=listing.options.ruleset,
                spectators=listing.options.spectators,
                fog=listing.options.fog,
            )
            for listing in self.lobby.open_races()
        )
        answer = protocol.RaceList(races=summaries, reply_to=message.id)
        self._bus.publish([Deliver(ToSession(caller.session_id), encode(answer))])

    async def _on_create_winnable_race(
        self, caller: Caller, message: protocol.CreateRace
    ) -> None:
        options = self._options_to_create(caller, message)
        seed = await self.winnable.find(options.ruleset, requester=caller.session_id)
        self._check_free_to_join(caller)  # still true: this connection waited for us
        self._place(caller, lobbies.CreateRace(caller.session_id, options), message.id, seed)

    def _options_to_create(
        self, caller: Caller, message: protocol.CreateRace
    ) -> core.RaceOptions:
        """The options of the race ``message`` asks for (:class:`Refused` if it may not)."""
        self._check_free_to_join(caller)
        try:
            return race_options(
                message.options, self.config.progress_interval, self.config.reconnect_grace
            )
        except ValueError as error:
            raise Refused(ErrorCode.BAD_MESSAGE, f"create_race.options: {error}") from None

    def _place(
        self,
        caller: Caller,
        command: lobbies.QuickRace | lobbies.CreateRace,
        reply_to: int | None,
        seed: str | None = None,
    ) -> None:
        """Let the lobby choose the race (opening one if it says so) and seat ``caller``."""
        for event in self.lobby.apply(command):
            if isinstance(event, lobbies.RaceToOpen):
                self.open_race(event.options, seed=seed, race_id=event.race_id)
            elif isinstance(event, lobbies.JoinRace):
                self._join(caller, self.hosts[event.race_id], reply_to)

    def _on_join_race(self, caller: Caller, message: protocol.JoinRace) -> None:
        host = self._find(message.race)
        if host.race.options.daily is not None and not host.race.has_racer(caller.session_id):
            # Its seat is an attempt at the day's deal, which only daily_race takes.
            raise Refused(
                ErrorCode.BAD_MESSAGE,
                f"race {host.race_id} is a daily room: race the daily deal with daily_race",
            )
        session_id = caller.session_id
        if self.lobby.seat_of(session_id) == host.race_id and host.race.has_racer(session_id):
            raise Refused(ErrorCode.ALREADY_JOINED, "you are already in this race")
        self._check_free_to_join(caller)
        self._join(caller, host, message.id)

    def _on_leave_race(self, caller: Caller, message: protocol.LeaveRace) -> None:
        host = self._find(message.race)
        session_id = caller.session_id
        if host.race_id in self._watching.get(session_id, {}):
            self._stop_watching(session_id, [host.race_id])
        elif self.lobby.seat_of(session_id) == host.race_id:
            if host.race.phase in (core.Phase.LOBBY, core.Phase.COUNTDOWN):
                host.apply(core.Leave(session_id))
                # The seat is free: what the race says from now on is not for this racer.
                self._bus.publish([Unfollow(session_id, host.feed, member=True)])
                self._lobby(lobbies.Unseated(session_id, host.race_id))
                self._release_daily(session_id, host)
            elif host.race.phase is not core.Phase.FINISHED:
                host.apply(core.Leave(session_id))
        else:
            raise Refused(ErrorCode.NOT_A_RACER, "you are not in this race")
        ok = protocol.Ok(in_reply_to="leave_race", race=host.race_id, reply_to=message.id)
        if self.hosts.get(host.race_id) is host:
            host.tell(session_id, ok)
        else:
            # The lobby emptied and was forgotten, and its outbox with it: answer once the
            # leave is journaled (the transaction gathering now holds it).
            deliver = Deliver(ToSession(session_id), encode(ok))
            self._outbox.post(self.journal.submit(), lambda events: events.append(deliver))

    def _on_spectate(self, caller: Caller, message: protocol.Spectate) -> None:
        host = self._find(message.race)
        if not host.race.options.spectators:
            raise Refused(ErrorCode.SPECTATORS_NOT_ALLOWED, "this race does not allow spectators")
        session_id = caller.session_id
        self._start_watching(session_id, host)
        self._watch(session_id, host, message.id)

    async def _on_spectate_or_replay(self, caller: Caller, message: protocol.Spectate) -> None:
        """Answer ``spectate``: a race in memory is watched (:meth:`_on_spectate`); one the
        server no longer keeps is answered with its stored result, for the client to
        replay, if it finished and allowed spectators. Such a race changes no more: the
        session is not made to watch it."""
        if message.race.upper() in self.hosts:
            self._on_spectate(caller, message)
            return
        stored = await self._read_finished(message.race.upper()) if self.journal.stores else None
        if stored is None:
            raise Refused(ErrorCode.RACE_NOT_FOUND, f"there is no race {show(message.race)}")
        if not stored.spectators:
            raise Refused(ErrorCode.SPECTATORS_NOT_ALLOWED, "this race does not allow spectators")
        result = stored.result
        finished = protocol.RaceFinished.from_result(
            result, started_at=result.started_at, ended_at=result.ended_at, reply_to=message.id
        )
        self._bus.publish([Deliver(ToSession(caller.session_id), encode(finished))])

    async def _read_finished(self, race_id: str) -> FinishedRace | None:
        """Race ``race_id``'s stored result, read off the event loop; a store that cannot
        be read now refuses the request."""
        try:
            stored: FinishedRace | None = await self.journal.run(
                functools.partial(finished_race, race_id), writes=False
            )
        except (StoreError, JournalRefused) as error:
            log_event("journal_error", logging.ERROR, error=str(error), race=race_id)
            raise Refused(
                ErrorCode.SERVER_BUSY, "the server cannot read its store now; try again"
            ) from None
        return stored

    def _watch(self, session_id: str, host: RaceHost, reply_to: int | None) -> None:
        """Feed ``host``'s race to ``session_id`` as a spectator, from its state now."""
        host.add_spectator(session_id)
        host.watch(session_id, reply_to, first=[Follow(session_id, host.feed, member=False)])

    def _quick_options(self) -> core.RaceOptions:
        config = self.config
        return core.RaceOptions(
            max_racers=config.quick_max_racers,
            min_racers=config.quick_min_racers,
            time_limit=config.time_limit,
            countdown=config.quick_countdown,
            progress_interval=config.progress_interval,
            reconnect_grace=config.reconnect_grace,
            rated=True,  # quick races rate their claimed players
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
            race_id = self._ownership.new_race_id(self.hosts)
        if tournament_id is not None:
            self._ownership.cover(race_id, tournament_id)
        if seed is None:
            seed = self.config.seed_source()
        race = core.Race(race_id, seed, options, code=None if options.public else race_id)
        self._share_deal(race)
        opened = RaceOpened(race_id, seed, options, race.code, self._now(), tournament_id)
        host = self._host(race, opened)
        self.hosts[race_id] = host
        self._changed(host)
        log_event("race_open", race=race_id, public=options.public, max_racers=options.max_racers)
        return host

    def _join(self, caller: Caller, host: RaceHost, reply_to: int | None) -> None:
        """Seat ``caller`` in ``host``'s race; it is answered with the race's snapshot."""
        session_id = caller.session_id
        try:
            host.apply(
                core.Join(session_id, caller.name, caller.bot),
                first=self._follows_for_seat(session_id, host),
                commander=session_id,
                answer=True,
                reply_to=reply_to,
            )
        except core.RaceError:
            self._lobby(lobbies.JoinRefused(session_id, host.race_id))
            raise
        self._lobby(lobbies.Seated(session_id, host.race_id))

    def seat(self, session_id: str, host: RaceHost) -> list[Event]:
        """``session_id`` races in ``host``'s race from now on (a tournament seats its
        entrants): the events that move its feed there, to send ahead of the race's."""
        follows = self._follows_for_seat(session_id, host)
        self._lobby(lobbies.Seated(session_id, host.race_id))
        return follows

    def _follows_for_seat(self, session_id: str, host: RaceHost) -> list[Event]:
        previous = self.lobby.seat_of(session_id)
        follows: list[Event] = []
        if previous is not None and previous != host.race_id:
            follows.append(Unfollow(session_id, race_feed(previous), member=True))
        follows.append(Follow(session_id, host.feed, member=True))
        return follows

    def _check_free_to_join(self, caller: Caller) -> None:
        if caller.role is not Role.PLAYER:
            raise Refused(ErrorCode.WRONG_ROLE, "a spectator cannot race: say hello as a player")
        host = self._seat_host(caller.session_id)
        if host is not None and host.race.is_busy(caller.session_id):
            raise Refused(
                ErrorCode.ALREADY_JOINED,
                f"you are already in race {host.race_id}: leave or finish it first",
            )

    def _lobby(self, command: lobbies.Command) -> None:
        """Tell the lobby; close the races it closes, hand over those it places."""
        for event in self.lobby.apply(command):
            if isinstance(event, lobbies.RaceClosed):
                host = self.hosts.get(event.race_id)
                if host is not None:
                    self._forget(host)
            elif isinstance(event, lobbies.RaceToPlace):
                self._ownership.place(event.race_id, event.node)

    def nodes_loaded(self, here: str, loads: dict[str, int]) -> None:
        """The races each node of the cluster runs now (empty: place no race); ``here``
        is this node's id (:class:`~server.lobby.NodesLoaded`)."""
        self.lobby.apply(lobbies.NodesLoaded(here, loads))

    async def hand_over(self, *race_ids: str) -> bool:
        """Stop running these races for another node to take them up from the store:
        their clocks stop, what they have journaled is committed and sent, and they are
        dropped, all of them; ``False``, and none dropped, if this tier does not run
        every one of them (any more). No command may reach them meanwhile (the caller
        holds them)."""
        hosts = [self.hosts.get(race_id) for race_id in race_ids]
        if any(host is None for host in hosts):
            return False
        await asyncio.gather(*(host.drain() for host in hosts if host is not None))
        if any(self.hosts.get(race_id) is not host
               for race_id, host in zip(race_ids, hosts, strict=True)):
            return False
        self.drop(race_ids)
        return True

    def dealt_with(self, race_id: str) -> list[str]:
        """The races here that share race ``race_id``'s deal (:class:`~server.race.SharedDeal`),
        ``race_id`` among them (alone if it shares none)."""
        host = self.hosts.get(race_id)
        deal = None if host is None else host.race.shared_deal
        if deal is None:
            return [race_id]
        return [other for other, held in self.hosts.items() if held.race.shared_deal is deal]

    def place_round(self, tournament_id: str, race_ids: Sequence[str]) -> None:
        """See :meth:`~server.tournament_host.TournamentRaces.place_round`."""
        if self._ownership.place_round is not None:
            self._ownership.place_round(tournament_id, race_ids)

    def resign_elsewhere(self, session_id: str, race_id: str) -> None:
        """See :meth:`~server.tournament_host.TournamentRaces.resign_elsewhere`: asked of
        the race's node as its racer would (one process runs every race here)."""
        if self._ownership.place_round is None:
            return
        caller = Caller(session_id, "", False, Role.PLAYER)
        self._bus.send(Request(caller, protocol.Resign(race=race_id)))

    async def lease(self, tournament_id: str) -> bool:
        """See :meth:`~server.tournament_host.TournamentRaces.lease`."""
        return await self._ownership.lease(tournament_id)

    async def counted_elsewhere(
        self, session_id: str, since: float, here: Collection[str]
    ) -> TournamentCount:
        """See :meth:`~server.tournament_host.TournamentRaces.counted_elsewhere`."""
        return await self._ownership.count_tournaments(session_id, since, here)

    def gone(self, resource_id: str) -> None:
        """See :meth:`~server.tournament_host.TournamentRaces.gone`."""
        self._ownership.gone(resource_id)

    def _changed(self, host: RaceHost) -> None:
        race = host.race
        listing = lobbies.Listing(
            host.race_id, race.options, race.phase, race.racer_count, race.is_open
        )
        self._lobby(lobbies.RaceUpdated(listing))

    # ------------------------------------------------------------- sessions

    def is_present(self, session_id: str) -> bool:
        """Whether ``session_id`` has a connection now."""
        return session_id in self._present

    def nodes_gone(self, nodes: Collection[str]) -> None:
        """These nodes of the cluster are gone (their leases lapsed): the sessions that
        were connected to them are not any more (as if each had left: its racer's grace
        to come back starts)."""
        gone = set(nodes)
        for session_id in [s for s, node in self._present.items() if node in gone]:
            self._detach(session_id, replaced=False)

    def _attach(self, caller: Caller, ticket: int, node: str = "") -> None:
        """A session has a connection (on ``node``): it listens to its race, the races it
        watches and its tournaments again, and is sent where each stands (after a
        resume: a new session has none)."""
        session_id = caller.session_id
        self._present[session_id] = node
        host = self._seat_host(session_id)
        if host is not None and host.race.has_racer(session_id):
            if host.race.phase is not core.Phase.FINISHED:
                host.apply(core.Reconnect(session_id))  # no longer counted out
            host.tell(
                session_id,
                *host.messages_for_racer(session_id, None),
                first=[Follow(session_id, host.feed, member=True)],
            )
            host.presence_changed()  # the others see it back
        gone = []
        for race_id in self._watching.get(session_id, {}):
            watched = self.hosts.get(race_id)
            if watched is None:
                gone.append(race_id)
            else:
                self._watch(session_id, watched, None)
        self.tournaments.attached(session_id)
        if gone:
            self._stop_watching(session_id, gone)
            self._run(self._send_results(session_id, gone, ticket))
        else:
            self._bus.publish([Done(session_id, ticket)])

    async def _send_results(self, session_id: str, race_ids: list[str], ticket: int) -> None:
        """Races a resumed session watched that the server no longer keeps (they finished
        and were forgotten, or finished before a restart): each as its stored result, read
        from the journal off the event loop, or, without one, refused as
        ``race_not_found``. Then :class:`Done`."""
        try:
            results = await self.journal.read_results(race_ids)
        except JournalRefused as refusal:  # unreadable now: the refusals below say so
            log_event("journal_error", logging.ERROR, error=str(refusal))
            results = {}
        events: list[Event] = []
        for race_id in race_ids:
            result = results.get(race_id)
            if result is not None:
                finished = protocol.RaceFinished.from_result(
                    result, started_at=result.started_at, ended_at=result.ended_at
                )
                events.append(Deliver(ToSession(session_id), encode(finished)))
            else:
                events.append(Refuse(
                    session_id,
                    ErrorCode.RACE_NOT_FOUND,
                    f"race {race_id}, which you watched, is gone and left no result",
                    in_reply_to=protocol.Spectate.TYPE,
                ))
        events.append(Done(session_id, ticket))
        self._bus.publish(events)

    def _detach(self, session_id: str, replaced: bool) -> None:
        """A session's connection is gone: stop counting it as a spectator, free its
        lobby seat, or start its racer's grace to come back (the race decides which)."""
        self._present.pop(session_id, None)
        for race_id in self._watching.get(session_id, {}):
            watched = self.hosts.get(race_id)
            if watched is not None:
                watched.remove_spectator(session_id)
        host = self._seat_host(session_id)
        if replaced or self.stopping or host is None or not host.race.has_racer(session_id):
            return
        if host.race.phase is not core.Phase.FINISHED:
            host.apply(core.Disconnect(session_id))
        if host.race.has_racer(session_id):
            host.presence_changed()  # the others see it away
        else:  # its lobby seat is free
            self._lobby(lobbies.Unseated(session_id, host.race_id))
            self._release_daily(session_id, host)

    def _start_watching(self, session_id: str, host: RaceHost) -> None:
        """``session_id`` watches ``host``'s race from now on, after a restart too
        (journaled), within ``watched_races``: the oldest races watched that are over or
        forgotten make room, and when none is, the request is refused with
        ``server_busy``."""
        watching = self._watching.setdefault(session_id, {})
        if host.race_id in watching:
            return
        limit = self.config.watched_races
        if len(watching) >= limit:
            done = [
                race_id for race_id in watching
                if (watched := self.hosts.get(race_id)) is None
                or watched.race.phase is core.Phase.FINISHED
            ]
            if len(watching) - len(done) >= limit:
                raise Refused(
                    ErrorCode.SERVER_BUSY,
                    f"you are watching {limit} races that are still on, the most a session "
                    "may: leave one (leave_race) first",
                )
            self._stop_watching(session_id, done[: len(watching) - limit + 1])
        watching[host.race_id] = None
        self.journal.submit(Watching(session_id, host.race_id))

    def _stop_watching(self, session_id: str, race_ids: list[str]) -> None:
        """``session_id`` watches none of ``race_ids`` any more (journaled)."""
        watching = self._watching.get(session_id, {})
        unfollows: list[Event] = []
        for race_id in race_ids:
            del watching[race_id]
            watched = self.hosts.get(race_id)
            if watched is not None:
                watched.remove_spectator(session_id)
            unfollows.append(Unfollow(session_id, race_feed(race_id), member=False))
        if not watching:
            self._watching.pop(session_id, None)
        self.journal.submit(StoppedWatching(session_id, tuple(race_ids)))
        self._bus.publish(unfollows)

    def _holds(self, session_id: str) -> bool:
        """Whether an idle session must be kept: it races in a race not over (from the
        lobby on: a recovered lobby still seats it), it is entered in a tournament that
        is not over, or it is connected after all (in a cluster, the node that asks may
        have seen it leave while it came back on another node)."""
        if session_id in self._present:
            return True
        host = self._seat_host(session_id)
        if (
            host is not None
            and host.race.phase is not core.Phase.FINISHED
            and host.race.has_racer(session_id)
        ):
            return True
        return self.tournaments.has_entrant(session_id)

    # ---------------------------------------------------------------- races

    def _host(self, race: core.Race, opened: RaceOpened | None = None) -> RaceHost:
        day = race.options.daily
        race_failed = self._ownership.race_failed
        on_failure = self._on_journal_failure
        if race_failed is not None:
            on_failure = functools.partial(race_failed, race.race_id)
        return RaceHost(
            race,
            journal=self.journal,
            bus=self._bus,
            present=self.is_present,
            metrics=self._metrics,
            clock=self.config.clock,
            on_changed=self._changed,
            on_finished=self._race_finished,
            on_journal_failure=on_failure,
            first_records=[opened] if opened else [],
            sealed_until=None if day is None else reveal_at(day, self.daily),
            view_interval=self.config.spectator_view_interval,
            seats=self._ownership.seats,
        )

    def _share_deal(self, race: core.Race) -> None:
        """Put ``race`` with the other races dealt its seed (a tournament round's races).
        A daily room shares with none: its result is sealed until the day's reveal anyway,
        and a room waiting for the next (as a round's races wait for each other) would
        chain all the day's rooms."""
        if race.options.daily is not None:
            return
        deal = self._shared_deals.get(race.seed)
        if deal is None:
            deal = self._shared_deals[race.seed] = core.SharedDeal()
        race.share_deal(deal)

    def _race_finished(self, host: RaceHost) -> None:
        self.tournaments.race_finished(host)
        day = host.race.options.daily
        if day is not None:
            # On the day's board, not in ratings or recent races (which would show it
            # before the reveal); its par comes with the day's reveal.
            if host.race.result is not None:
                self._background(self._record_daily(day, host.race.result))
            asyncio.get_running_loop().call_later(
                self.config.finished_linger, self._forget, host
            )
            return
        if host.race.result is not None:
            recording = asyncio.get_running_loop().create_task(
                self._record(host.race.options, host.race.result)
            )
            self._recording.add(recording)
            recording.add_done_callback(self._recording.discard)
        loop = asyncio.get_running_loop()
        loop.call_later(self.config.finished_linger, self._forget, host)
        if self.config.par_budget > 0:
            self.pars.add(host)  # the result is already out: the par follows when found

    async def _record(self, options: core.RaceOptions, result: RaceResult) -> None:
        """Keep a finished race in its claimed players' records and, if it is rated,
        rate them (:func:`~server.player_store.record_race`, a transaction of its own, off
        every move's path); tell each rated racer its new rating."""
        job = functools.partial(
            record_race, result, pool_of(options.ruleset), options.rated, self._now()
        )
        try:
            changes: list[RatingChange] = await self.journal.run(job, writes=True)
        except (StoreError, JournalRefused, RuntimeError) as error:  # (closed: stopping)
            log_event("record_error", logging.ERROR, race=result.race_id, error=failure(error))
            return
        self._bus.publish([
            Deliver(ToSession(change.racer_id), encode_players(RatingChanged(
                race=result.race_id,
                ruleset=options.ruleset,
                before=shown(change.before.ordinal),
                rating=shown(change.after.ordinal),
                provisional=change.games < PROVISIONAL_GAMES,
                games=change.games,
            )))
            for change in changes
        ])

    # ------------------------------------------------------------ the daily deal

    async def _on_daily_race(self, caller: Caller, message: DailyRace) -> None:
        """Seat ``caller`` in today's daily room, once it has taken its attempt at the
        day's deal in the store (refused with ``daily_done`` if it has one already)."""
        self._check_free_to_join(caller)
        now = self._now()
        day = day_of(now)
        entrant = entrant_of(caller.player, caller.session_id)
        deal: DailyDeal = await self._daily_job(functools.partial(
            deal_of_day, day, self.config.seed_source(), self.daily.ruleset, now
        ))
        took = await self._daily_job(functools.partial(
            take_attempt, day, entrant, caller.session_id, caller.player, caller.name,
            caller.bot, now,
        ))
        if not took:
            who = "you have" if caller.player is not None else "this session has"
            raise Refused(
                ErrorCode.DAILY_DONE,
                f"{who} raced the daily deal of {day} already: see its board with get_daily",
            )
        try:
            self._check_free_to_join(caller)  # still true: this connection waited for us
            for event in self.lobby.apply(
                lobbies.DailyRace(caller.session_id, self._daily_options(day))
            ):
                if isinstance(event, lobbies.RaceToOpen):
                    self.open_race(event.options, seed=deal.seed, race_id=event.race_id)
                elif isinstance(event, lobbies.JoinRace):
                    self._join(caller, self.hosts[event.race_id], message.id)
        except Exception:
            self._background(self._release(day, caller.session_id))
            raise
        log_event("daily_attempt", day=day, session=caller.session_id, player=caller.player)

    def _daily_options(self, day: str) -> core.RaceOptions:
        """The options of ``day``'s rooms: one racer is enough (a room starts after its
        countdown whoever came), not listed, no spectators (a spectator of a finished
        room would see every card its racers drew), unrated (the day has its own board),
        and marked with their day, which seals their result until the reveal."""
        rules, config = self.daily, self.config
        return core.RaceOptions(
            max_racers=config.quick_max_racers,
            min_racers=1,
            time_limit=rules.time_limit,
            ruleset=rules.ruleset,
            spectators=False,
            public=False,
            auto_start=True,
            countdown=rules.countdown,
            progress_interval=config.progress_interval,
            reconnect_grace=config.reconnect_grace,
            rated=False,
            daily=day,
        )

    async def _daily_job(self, job: Any) -> Any:
        """Run a writing job of :mod:`server.daily_store`; a store that cannot run it now
        refuses the request with ``server_busy``."""
        try:
            return await self.journal.run(job, writes=True)
        except (StoreError, JournalRefused) as error:
            log_event("store_unavailable", logging.ERROR, error=failure(error))
            raise Refused(
                ErrorCode.SERVER_BUSY,
                "the server cannot reach its store just now: try again in a moment",
            ) from None

    def _release_daily(self, session_id: str, host: RaceHost) -> None:
        """A racer left a daily room before its start: it drew no card, so its attempt at
        the day is given back."""
        day = host.race.options.daily
        if day is not None:
            self._background(self._release(day, session_id))

    async def _release(self, day: str, session_id: str) -> None:
        try:
            await self.journal.run(functools.partial(release_attempt, day, session_id),
                                   writes=True)
        except (StoreError, JournalRefused, RuntimeError) as error:  # (closed: stopping)
            log_event("daily_error", logging.ERROR, day=day, error=failure(error))

    async def _record_daily(self, day: str, result: RaceResult) -> None:
        """Put a finished daily room's results on its day's board (off the move path)."""
        try:
            await self.journal.run(functools.partial(record_room, day, result), writes=True)
        except (StoreError, JournalRefused, RuntimeError) as error:  # (closed: stopping)
            log_event("daily_error", logging.ERROR, race=result.race_id, error=failure(error))

    async def _search_daily_pars(self) -> None:
        """Every ``daily_tick``: the latest revealed day whose par was never searched for
        goes to the par queue (its answer is kept with the day's deal)."""
        while True:
            latest = last_revealed_day(self._now(), self.daily)
            try:
                deal = await self.journal.run(
                    functools.partial(deal_wanting_par, latest), writes=False
                )
            except (StoreError, JournalRefused, RuntimeError) as error:  # (closed: stopping)
                log_event("daily_error", logging.ERROR, error=failure(error))
                deal = None
            if deal is not None:
                # Asked again at every tick until its par is kept: a search that failed or
                # was dropped from a full queue is tried again (one waiting for its turn
                # only gains a listener).
                self.pars.want((deal.seed, deal.ruleset), _DailyPar(self, deal.day))
            await asyncio.sleep(self.config.daily_tick)

    def daily_par_found(self, day: str, par: RacePar) -> None:
        """Keep a revealed day's par with its deal."""
        found = ParFound(par.score, par.proven, par.cards_used, par.at_most)

        async def keep() -> None:
            try:
                await self.journal.run(functools.partial(keep_par, day, found), writes=True)
            except (StoreError, JournalRefused, RuntimeError) as error:
                log_event("daily_error", logging.ERROR, day=day, error=failure(error))

        self._background(keep())

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        """Store work off every move's path, waited for when the server drains."""
        task = asyncio.get_running_loop().create_task(work)
        self._recording.add(task)
        task.add_done_callback(self._recording.discard)

    def _forget(self, host: RaceHost) -> None:
        if self.hosts.get(host.race_id) is host:
            del self.hosts[host.race_id]
            self.lobby.apply(lobbies.RaceGone(host.race_id))
            self._ownership.gone(host.race_id)
        self.pars.forget(host)
        host.stop()

    def _races_by_phase(self) -> dict[str, int]:
        counts = {phase.value: 0 for phase in core.Phase}
        for host in self.hosts.values():
            counts[host.race.phase.value] += 1
        return counts

    def _send_card_again(self, session_id: str, race: str) -> None:
        """After a move number out of turn: the card the racer must place, once more."""
        host = self.hosts.get(race.upper())
        card = host.race.card_for(session_id) if host else None
        if host is not None and card is not None:
            host.tell(session_id, card_message(host.race_id, card))

    def _seat_host(self, session_id: str) -> RaceHost | None:
        """The race ``session_id`` races in (its latest), if the server still has it."""
        race_id = self.lobby.seat_of(session_id)
        return self.hosts.get(race_id) if race_id is not None else None

    def _find(self, race: str) -> RaceHost:
        host = self.hosts.get(race.upper())
        if host is None:
            raise Refused(ErrorCode.RACE_NOT_FOUND, f"there is no race {show(race)}")
        return host

    def _racing_in(self, session_id: str, race: str) -> RaceHost:
        host = self._find(race)
        if self.lobby.seat_of(session_id) != host.race_id or not host.race.has_racer(session_id):
            raise Refused(ErrorCode.NOT_A_RACER, "you are not racing in this race")
        return host

    def _now(self) -> float:
        return self.config.clock()



class _DailyPar:
    """A revealed day waiting in the par queue (:class:`~server.pars.ParWanted`)."""

    def __init__(self, tier: RaceTier, day: str) -> None:
        self._tier = tier
        self._day = day

    @property
    def race_id(self) -> str:
        """What the logs call it."""
        return f"daily-{self._day}"

    def announce_par(self, par: RacePar) -> None:
        """Keep the par with the day's deal."""
        self._tier.daily_par_found(self._day, par)
