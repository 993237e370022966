"""One race in the race tier: the pure :class:`~server.race.Race`, its clock, its
spectators, and its outbox.

Everything a command causes goes into the race's :class:`~server.outbox.Outbox` with
the journal write it needs, and leaves as bus events (:mod:`server.bus`) once that write
is committed: each message encoded once, addressed to a racer's session or to the race's
feed (its racers, its spectators, or both). So nothing about a command reaches anyone
before the command is durable, messages of one race keep their order, and the race knows
nothing of connections: which connections hear a feed is the socket tier's business.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TypeAlias, cast

from protocol import RacePar, ServerMessage, encode
from protocol.codec import with_field
from protocol.result import RaceResult
from server import race as core
from server.bus import Audience, Bus, Deliver, Event, Recipient, ToFeed, ToSession, race_feed
from server.config import Clock
from server.journal import CommandRecord, Record, ResultRecord
from server.logs import failure, log_event
from server.metrics import Metrics
from server.outbox import Outbox
from server.outgoing import (
    event_message,
    placed_message,
    sealed_result_message,
    snapshot_message,
)
from server.seats import SeatKeeper
from server.store import Store

#: Seconds between two snapshots sent because racers' connections came and went.
PRESENCE_INTERVAL = 1.0

Present: TypeAlias = Callable[[str], bool]
"""Whether a session has a connection now (a racer's ``connected`` flag)."""


@dataclass(slots=True)
class _Outgoing:
    """One command's consequences, waiting for its journal write."""

    sends: list[core.Send]
    now: float
    first: Sequence[Event] = ()
    """Events that go ahead of the race's (the commander's own answer, a seat's follow)."""
    commander: str | None = None
    """Gets no broadcast snapshot: ``first`` holds its own."""
    reply_to: int | None = None
    """The request id of a ``place``, for its ``placed`` answer."""
    received_at: float | None = None
    """When a new move arrived (the socket tier's clock), handed back with its answer."""


class RaceHost:
    """A race, its spectators, its outbox and its clock timer.

    ``on_changed`` is called when a command changed the race's phase or its number of
    racers, ``on_finished`` once its result is out.
    """

    def __init__(
        self,
        race: core.Race,
        *,
        journal: Store,
        bus: Bus,
        present: Present,
        metrics: Metrics,
        clock: Clock,
        on_changed: Callable[[RaceHost], None],
        on_finished: Callable[[RaceHost], None],
        on_journal_failure: Callable[[Exception], None],
        first_records: Iterable[Record] = (),
        sealed_until: float | None = None,
        view_interval: float = 0.0,
        seats: bool = False,
    ):
        self.race = race
        self._seats = SeatKeeper(race) if seats else None
        """In a cluster: the store's rows of the racers this race ties (:mod:`server.seats`)."""
        self._sealed_until = sealed_until
        """For a daily room: when its day is revealed. Its result goes out as
        ``daily_result`` (no seed, no moves), never as ``finished``."""
        self.race_id = race.race_id
        """The race's id (also its code for joining)."""
        self.feed = race_feed(race.race_id)
        """The bus channel of the race's racers and spectators."""
        self.spectators: set[str] = set()
        """Sessions watching the race and connected now."""
        self._journal = journal
        self._present = present
        self._metrics = metrics
        self._clock = clock
        self._on_changed = on_changed
        self._on_finished = on_finished
        self._pending_records = list(first_records)
        self._outbox = Outbox(journal, bus, on_journal_failure, f"race:{race.race_id}")
        self._audiences: dict[core.Audience, ToFeed] = {
            core.Audience.RACERS: ToFeed(self.feed, Audience.MEMBERS),
            core.Audience.SPECTATORS: ToFeed(self.feed, Audience.WATCHERS),
            core.Audience.EVERYONE: ToFeed(self.feed, Audience.EVERYONE),
        }
        self._stopped = False
        self._presence_timer: asyncio.TimerHandle | None = None
        self._last_presence = float("-inf")
        self._loop = asyncio.get_running_loop()
        """Kept: ``asyncio.get_running_loop()`` makes a ``getpid`` system call each time."""
        self._clock_timers: dict[float, asyncio.TimerHandle] = {}
        """The clock's timers, by the deadline (server clock) each is set for."""
        self._clock_stopped = False
        self._set_clock()
        self.par: RacePar | None = None
        """The deal's par, once computed after the finish (sent to whoever sees the result)."""
        self._view_interval = view_interval
        """Seconds between two views built for new spectators (``spectator_view_interval``)."""
        self._new_spectators: list[tuple[str, int | None, Sequence[Event]]] = []
        """Spectators waiting for the next view: session, request id, events before it."""
        self._last_view = float("-inf")
        """When the last view for new spectators was built (loop time)."""
        self._view_timer: asyncio.TimerHandle | None = None

    # ------------------------------------------------------------ commands

    def apply(
        self,
        command: core.Command,
        *,
        first: Sequence[Event] = (),
        commander: str | None = None,
        answer: bool = False,
        reply_to: int | None = None,
        received_at: float | None = None,
    ) -> None:
        """Carry out ``command`` now; its messages go out once it is journaled, after
        ``first``. With ``answer``, ``commander`` is answered with its own snapshot
        (``reply_to`` set) and gets none of the broadcast ones of this command.

        Raises :class:`~server.race.RaceError` (nothing changed, nothing queued).
        """
        now = self._clock()
        race = self.race
        revision, phase, racers = race.revision, race.phase, race.racer_count
        sends = race.apply(command, now)
        records = self._pending_records
        self._pending_records = []
        if self.race.revision != revision and not isinstance(command, core.Tick):
            records.append(CommandRecord(self.race_id, command, now))
            if isinstance(command, core.Join):
                self._metrics.seats_total += 1
        if self._seats is not None and self.race.revision != revision:
            records.extend(self._seats.changes(race, command))
        for send in sends:
            if isinstance(send.event, core.Started) and isinstance(command, core.Tick):
                records.append(CommandRecord(self.race_id, core.Start(), send.event.started_at))
            elif isinstance(send.event, core.RaceFinished):
                records.append(ResultRecord(self.race_id, send.event.result, now))
        committed = self._journal.submit(*records) if records else None
        if self.race.revision == revision or not isinstance(command, core.Place):
            received_at = None  # only new moves count, not retries answered again
        if answer and commander is not None:
            first = [*first, self._snapshot_to(commander, reply_to)]
        else:
            commander = None
        self._post(
            committed, _Outgoing(sends, now, first, commander, reply_to, received_at)
        )
        self._set_clock()
        if race.phase is not phase or race.racer_count != racers:
            self._on_changed(self)  # the lobby lists races by phase and seats

    def tell(self, session_id: str, *messages: ServerMessage, first: Sequence[Event] = ()) -> None:
        """Send ``messages`` to one session, in order after everything already queued
        (and after ``first``)."""
        to = ToSession(session_id)
        events = [*first, *(Deliver(to, encode(message)) for message in messages)]
        self._post(None, _Outgoing([], self._clock(), events))

    def announce_par(self, par: RacePar) -> None:
        """Keep the deal's par and send it to the racers and spectators listening now."""
        self.par = par
        to = self._audiences[core.Audience.EVERYONE]
        self._post(None, _Outgoing([], self._clock(), [Deliver(to, encode(par))]))

    def snapshot_for(self, you: str | None, reply_to: int | None) -> ServerMessage:
        """The race's ``race`` message, with ``you`` set for a racer's own copy."""
        race = self.race
        return snapshot_message(
            race.snapshot(self._clock()),
            race.progress_lines(),
            len(self.spectators),
            self._present,
            you=you,
            reply_to=reply_to,
        )

    def messages_for_racer(self, racer_id: str, reply_to: int | None) -> list[ServerMessage]:
        """Everything a (re)joining racer needs: snapshot, own board, progress, card, result."""
        messages: list[ServerMessage] = []
        now = self._clock()
        for send in self.race.racer_view(racer_id, now):
            if isinstance(send.event, core.RaceChanged):
                messages.append(self.snapshot_for(racer_id, reply_to))
            else:
                message = self._message(send.event, now)
                if message is not None:
                    messages.append(message)
        return self._with_par(messages)

    def messages_for_spectator(self, reply_to: int | None) -> list[ServerMessage]:
        """Everything a new spectator needs: snapshot, progress, boards behind the fog."""
        messages: list[ServerMessage] = []
        now = self._clock()
        for event in self.race.spectator_view(now):
            if isinstance(event, core.RaceChanged):
                messages.append(self.snapshot_for(None, reply_to))
            else:
                message = self._message(event, now)
                if message is not None:
                    messages.append(message)
        return self._with_par(messages)

    def _message(self, event: core.Event, now: float) -> ServerMessage | None:
        """:func:`~server.outgoing.event_message`, but a daily room's result sealed."""
        if isinstance(event, core.RaceFinished) and self._sealed_until is not None:
            # A daily message, registered with the codec like the race's own.
            sealed = sealed_result_message(event.result, self.race.options, self._sealed_until)
            return cast(ServerMessage, sealed)
        return event_message(self.race_id, event, now)

    def watch(self, session_id: str, reply_to: int | None, first: Sequence[Event] = ()) -> None:
        """Send a new spectator everything it needs (:meth:`messages_for_spectator`), after
        ``first``, in order after everything already queued then.

        In a race of 1,000 that view is about 200 KB, and building and encoding it took
        45-65 ms (docs/performance.md): once per spectator, 10,000 spectators starting to
        watch would hold the race's node for minutes. So at most one is built every
        ``view_interval`` seconds: the first spectator in a while is answered at once,
        those who come within the interval after it wait for the next view and are sent
        it together, as the same bytes (each snapshot with its own ``reply_to``).
        """
        self._new_spectators.append((session_id, reply_to, first))
        if self._view_timer is not None:
            return
        wait = self._last_view + self._view_interval - self._loop.time()
        if wait <= 0:
            self._send_view()
        else:
            self._view_timer = self._loop.call_later(wait, self._send_view)

    def _send_view(self) -> None:
        """Build the view once and queue it for every spectator waiting for it, each after
        its own ``first`` (its follow of the race's feed): as one item of the outbox, so
        each hears every update that follows the view."""
        self._view_timer = None
        waiting, self._new_spectators = self._new_spectators, []
        if not waiting or self._stopped:
            return
        self._last_view = self._loop.time()
        snapshot, *rest = [encode(message) for message in self.messages_for_spectator(None)]
        events: list[Event] = []
        for session_id, reply_to, first in waiting:
            to = ToSession(session_id)
            own = snapshot if reply_to is None else b"".join(
                with_field(snapshot, "reply_to", reply_to))  # it answers the request
            events.extend(first)
            events.extend(Deliver(to, payload) for payload in (own, *rest))
        self._post(None, _Outgoing([], self._clock(), events))

    def _with_par(self, messages: list[ServerMessage]) -> list[ServerMessage]:
        """``messages`` followed by the par, once it is known."""
        return messages if self.par is None else [*messages, self.par]

    def add_spectator(self, session_id: str) -> None:
        """Count ``session_id`` among the race's spectators (its boards are computed
        while anyone watches)."""
        if session_id not in self.spectators:
            self.spectators.add(session_id)
            self.race.add_spectator()

    def remove_spectator(self, session_id: str) -> None:
        """``session_id`` no longer watches (or its connection is gone)."""
        if session_id in self.spectators:
            self.spectators.discard(session_id)
            self.race.remove_spectator()

    def presence_changed(self) -> None:
        """A racer's connection dropped or came back during the race: everyone gets a
        fresh snapshot (its ``connected`` flag and ``out_at``), at most one per
        :data:`PRESENCE_INTERVAL` (a snapshot lists every racer: in a big race a burst of
        reconnects must not send one each)."""
        if self.race.phase not in (core.Phase.COUNTDOWN, core.Phase.RUNNING) or self._stopped:
            return
        if self._presence_timer is not None:
            return
        delay = max(0.0, self._last_presence + PRESENCE_INTERVAL - self._loop.time())
        self._presence_timer = self._loop.call_later(delay, self._send_presence)

    def _send_presence(self) -> None:
        self._presence_timer = None
        if self.race.phase not in (core.Phase.COUNTDOWN, core.Phase.RUNNING):
            return  # the finish sends its own snapshot
        self._last_presence = self._loop.time()
        now = self._clock()
        changed = core.RaceChanged(self.race.snapshot(now))
        self._post(None, _Outgoing([core.Send(core.Audience.EVERYONE, changed)], now))

    async def drain(self) -> None:
        """Wait until everything queued so far has been sent (after its journal write);
        nothing queued later is sent."""
        self._stop_clock()  # no more ticks: the race stands still from here
        if self._view_timer is not None:
            self._view_timer.cancel()
            self._send_view()  # the spectators waiting for one get it before the end
        self._stopped = True
        await self._outbox.drain()

    def stop(self) -> None:
        """Cancel the race's clock and send nothing more (the race itself stays as it is)."""
        self._stop_clock()
        if self._presence_timer is not None:
            self._presence_timer.cancel()
        if self._view_timer is not None:
            self._view_timer.cancel()
        self._stopped = True
        self._outbox.close()

    # ------------------------------------------------------------ internal

    def _snapshot_to(self, session_id: str, reply_to: int | None) -> Deliver:
        """The race's snapshot for one racer, with its ``you``."""
        return Deliver(
            ToSession(session_id), encode(self.snapshot_for(None, reply_to)), you=True
        )

    def _set_clock(self) -> None:
        """Make sure a timer of the clock fires by the race's next deadline. A plain loop
        timer, not a task waiting on an event: a move that brings the next progress
        update forward costs one timer, not a task wake-up and a new wait.

        A timer set for a later deadline stays set (firing early costs a tick that finds
        nothing to do): the time limit's timer is set once, not cancelled and set again
        around every progress update. At most two are set at a time.
        """
        deadline = self.race.next_deadline()
        timers = self._clock_timers
        if self._clock_stopped or deadline is None or (timers and deadline >= min(timers)):
            return
        if len(timers) >= 2:
            timers.pop(max(timers)).cancel()
        delay = max(0.0, deadline - self._clock())
        timers[deadline] = self._loop.call_later(delay, self._on_clock, deadline)

    def _on_clock(self, deadline: float) -> None:
        del self._clock_timers[deadline]
        if self.race.phase is core.Phase.FINISHED:
            return
        try:
            self.apply(core.Tick())  # sets the clock again for the next deadline
        except Exception as error:  # a clock that dies silently would freeze the race
            log_event("internal_error", logging.ERROR, race=self.race_id, error=failure(error))

    def _stop_clock(self) -> None:
        self._clock_stopped = True
        for timer in self._clock_timers.values():
            timer.cancel()
        self._clock_timers.clear()

    def _post(
        self, committed: concurrent.futures.Future[None] | None, item: _Outgoing
    ) -> None:
        self._outbox.post(committed, lambda events: self._deliver(item, events))

    def _deliver(self, item: _Outgoing, events: list[Event]) -> Callable[[], None] | None:
        """Append ``item``'s events to the batch; after a finish, hand back what tells
        the rest of the server (once the finish itself is published)."""
        events.extend(item.first)
        after: Callable[[], None] | None = None
        for send in item.sends:
            event = send.event
            if isinstance(event, core.Started):
                log_event("race_start", race=self.race_id, racers=len(self.race.racer_ids))
                continue
            to = self._recipient(send.to)
            if isinstance(event, core.RaceChanged):
                # Encoded once: each racer's copy is this encoding with its ``you`` in front.
                shared = encode(self.snapshot_for(None, None))
                events.append(Deliver(to, shared, you=True, skip=item.commander))
                continue
            if isinstance(event, core.MoveAccepted):
                placed = placed_message(self.race_id, event, item.reply_to)
                events.append(Deliver(to, encode(placed), received_at=item.received_at))
                continue
            message = self._message(event, item.now)
            if message is None:
                continue
            events.append(Deliver(to, encode(message)))
            if isinstance(event, core.RaceFinished):
                after = functools.partial(self._finished, event.result)
        return after

    def _recipient(self, to: core.Recipient) -> Recipient:
        return ToSession(to) if isinstance(to, str) else self._audiences[to]

    def _finished(self, result: RaceResult) -> None:
        standings = result.racers
        log_event(
            "race_end",
            race=self.race_id,
            racers=len(standings),
            winner=standings[0].racer_id if standings else None,
            outcomes=[entry.outcome.value for entry in standings],
        )
        self._on_finished(self)
