"""One race on the server: the pure :class:`~server.race.Race`, its listeners, its clock,
and the ordered, journal-first way out.

Everything a command causes goes into the race's outbox together with the journal write
it needs; items leave in order, each once its records are committed, and each message is
encoded and framed once and handed to :mod:`server.fanout`. An item with nothing to wait
for and nobody ahead of it leaves at once; the rest leave from the journal's callback
when their transaction commits (no task, no extra trip through the event loop). So
nothing about a command reaches anyone before the command is durable, messages of one
race keep their order, and a slow client never holds the race up (the fan-out never
waits for a client to read).

Commands in, events out, and nothing else crosses this object's edge: that is the seam
where a later version can put Redis pub/sub between connection servers and race hosts.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections import deque
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from protocol import RacePar, ServerMessage, encode
from protocol.codec import with_field
from protocol.result import RaceResult
from server import fanout
from server import race as core
from server.config import Clock
from server.journal import CommandRecord, Record, ResultRecord
from server.logs import failure, log_event
from server.metrics import Metrics
from server.outgoing import event_message, placed_message, snapshot_message
from server.sessions import SessionRegistry
from server.store import Store

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection


#: Seconds between two snapshots sent because racers' connections came and went.
PRESENCE_INTERVAL = 1.0


@dataclass(slots=True)
class _Outgoing:
    """One command's consequences, waiting for its journal write."""

    committed: concurrent.futures.Future[None] | None
    sends: list[core.Send]
    now: float
    direct: list[tuple[ServerConnection, ServerMessage]] = field(default_factory=list)
    """Answers to the connection that sent the command (sent first)."""
    commander: ServerConnection | None = None
    """Gets no broadcast snapshot when ``direct`` already holds its own."""
    reply_to: int | None = None
    """The request id of a ``place``, for its ``placed`` answer."""
    received_at: float | None = None
    """When a new move arrived (loop time), for the latency histogram and move count."""


class RaceHost:
    """A race, the connections that listen to it, its outbox and its clock timer."""

    def __init__(
        self,
        race: core.Race,
        *,
        journal: Store,
        sessions: SessionRegistry,
        metrics: Metrics,
        clock: Clock,
        on_finished: Callable[[RaceHost], None],
        on_journal_failure: Callable[[Exception], None],
        first_records: Iterable[Record] = (),
        send_buffer_limit: int = 4 * 1024 * 1024,
    ):
        self.race = race
        self.race_id = race.race_id
        """The race's id (also its code for joining)."""
        self.spectators: set[ServerConnection] = set()
        self._send_buffer_limit = send_buffer_limit
        self._journal = journal
        self._sessions = sessions
        self._metrics = metrics
        self._clock = clock
        self._on_finished = on_finished
        self._on_journal_failure = on_journal_failure
        self._pending_records = list(first_records)
        self._outbox: deque[_Outgoing] = deque()
        self._delivering = False
        self._waiting_for: concurrent.futures.Future[None] | None = None
        """The commit the head of the outbox waits for (a callback is registered)."""
        self._closed = False
        """Set by :meth:`drain`: nothing more is sent."""
        self._drained: asyncio.Future[None] | None = None
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

    # ------------------------------------------------------------ commands

    def apply(
        self,
        command: core.Command,
        *,
        direct: Callable[[], list[tuple[ServerConnection, ServerMessage]]] | None = None,
        commander: ServerConnection | None = None,
        reply_to: int | None = None,
        received_at: float | None = None,
    ) -> None:
        """Carry out ``command`` now; its messages go out once it is journaled.

        ``direct`` builds the answers for the commander after the command took effect.
        Raises :class:`~server.race.RaceError` (nothing changed, nothing queued).
        """
        now = self._clock()
        revision = self.race.revision
        sends = self.race.apply(command, now)
        records = self._pending_records
        self._pending_records = []
        if self.race.revision != revision and not isinstance(command, core.Tick):
            records.append(CommandRecord(self.race_id, command, now))
            if isinstance(command, core.Join):
                self._metrics.seats_total += 1
        for send in sends:
            if isinstance(send.event, core.Started) and isinstance(command, core.Tick):
                records.append(CommandRecord(self.race_id, core.Start(), send.event.started_at))
            elif isinstance(send.event, core.RaceFinished):
                records.append(ResultRecord(self.race_id, send.event.result, now))
        committed = self._journal.submit(*records) if records else None
        if self.race.revision == revision or not isinstance(command, core.Place):
            received_at = None  # only new moves count, not retries answered again
        self._post(
            _Outgoing(
                committed,
                sends,
                now,
                direct() if direct is not None else [],
                commander,
                reply_to,
                received_at,
            )
        )
        self._set_clock()

    def tell(self, connection: ServerConnection, *messages: ServerMessage) -> None:
        """Send ``messages`` to one connection, in order after everything already queued."""
        self._post(_Outgoing(None, [], self._clock(), [(connection, m) for m in messages]))

    def announce_par(self, par: RacePar) -> None:
        """Keep the deal's par and send it to the racers and spectators connected now."""
        self.par = par
        connections = self._recipients(core.Audience.EVERYONE)
        self._post(_Outgoing(None, [], self._clock(), [(c, par) for c in connections]))

    def snapshot_for(self, you: str | None, reply_to: int | None) -> ServerMessage:
        """The race's ``race`` message, with ``you`` set for a racer's own copy."""
        race = self.race
        return snapshot_message(
            race.snapshot(self._clock()),
            race.progress_lines(),
            len(self.spectators),
            self._is_connected,
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
                message = event_message(self.race_id, send.event, now)
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
                message = event_message(self.race_id, event, now)
                if message is not None:
                    messages.append(message)
        return self._with_par(messages)

    def _with_par(self, messages: list[ServerMessage]) -> list[ServerMessage]:
        """``messages`` followed by the par, once it is known."""
        return messages if self.par is None else [*messages, self.par]

    def add_spectator(self, connection: ServerConnection) -> None:
        """Start sending this connection the race's public feed."""
        if connection not in self.spectators:
            self.spectators.add(connection)
            self.race.add_spectator()

    def remove_spectator(self, connection: ServerConnection) -> None:
        """Stop sending this connection the race's feed."""
        if connection in self.spectators:
            self.spectators.discard(connection)
            self.race.remove_spectator()

    def presence_changed(self) -> None:
        """A racer's connection dropped or came back during the race: everyone gets a
        fresh snapshot (its ``connected`` flag and ``out_at``), at most one per
        :data:`PRESENCE_INTERVAL`
        (a snapshot lists every racer: in a big race a burst of reconnects must not send
        one each)."""
        if self.race.phase not in (core.Phase.COUNTDOWN, core.Phase.RUNNING) or self._closed:
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
        self._post(_Outgoing(None, [core.Send(core.Audience.EVERYONE, changed)], now))

    async def drain(self) -> None:
        """Wait until everything queued so far has been sent (after its journal write);
        nothing queued later is sent."""
        self._stop_clock()  # no more ticks: the race stands still from here
        if self._outbox and not self._closed:
            self._drained = self._loop.create_future()
            await self._drained
        self._closed = True

    def stop(self) -> None:
        """Cancel the race's clock and send nothing more (the race itself stays as it is)."""
        self._stop_clock()
        if self._presence_timer is not None:
            self._presence_timer.cancel()
        self._closed = True
        self._outbox.clear()

    # ------------------------------------------------------------ internal

    def _is_connected(self, racer_id: str) -> bool:
        session = self._sessions.get(racer_id)
        return session is not None and session.connection is not None

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

    def _post(self, item: _Outgoing) -> None:
        if self._closed and self._drained is None:
            return
        self._outbox.append(item)
        self._send_ready()

    def _send_ready(self) -> None:
        """Send items from the head of the outbox while their writes are committed; when
        the head must wait, ask the journal to call back once its transaction commits."""
        if self._delivering:
            return  # a delivery called back into this race: the outer loop sends it
        self._delivering = True
        # Everything sent from here on goes out together: a connection's frames of all
        # the items delivered now (a move's placed, card and progress) in one write.
        frames = fanout.Frames(self._send_buffer_limit)
        try:
            while self._outbox:
                item = self._outbox[0]
                committed = item.committed
                if committed is not None and not committed.done():
                    if self._waiting_for is not committed:
                        self._waiting_for = committed
                        self._journal.when_committed(committed, self._committed)
                    return
                self._outbox.popleft()
                if committed is not None and (error := committed.exception()) is not None:
                    self._journal_failed(error)
                    return
                try:
                    self._deliver(item, frames)
                except Exception as error:  # one bad message must not stop the race's outbox
                    log_event(
                        "internal_error", logging.ERROR, race=self.race_id, error=failure(error)
                    )
        finally:
            self._delivering = False
            frames.flush()
            if not self._outbox and self._drained is not None and not self._drained.done():
                self._drained.set_result(None)

    def _committed(self) -> None:
        self._waiting_for = None
        if not self._closed or self._drained is not None:
            self._send_ready()

    def _journal_failed(self, error: BaseException) -> None:
        # Not durable, so never announced. The race in memory is now ahead of the
        # journal, so it must not answer anyone again: fail-stop, and let a restart
        # recover every race from what the journal does hold.
        log_event("journal_error", logging.ERROR, race=self.race_id, error=repr(error))
        self._closed = True
        self._outbox.clear()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._on_journal_failure(
            error if isinstance(error, Exception) else RuntimeError(repr(error))
        )

    def _deliver(self, item: _Outgoing, frames: fanout.Frames) -> None:
        for connection, answer in item.direct:
            frames.add((connection,), encode(answer))
        for send in item.sends:
            event = send.event
            if isinstance(event, core.Started):
                log_event("race_start", race=self.race_id, racers=len(self.race.racer_ids))
                continue
            if isinstance(event, core.RaceChanged):
                skip = item.commander if item.direct else None  # has its own already
                self._add_snapshot(frames, send.to, skip)
                continue
            if isinstance(event, core.MoveAccepted):
                message: ServerMessage | None = placed_message(self.race_id, event, item.reply_to)
                if item.received_at is not None:
                    self._metrics.moves_total += 1
                    latency = self._loop.time() - item.received_at
                    self._metrics.move_latency.observe(latency)
            else:
                message = event_message(self.race_id, event, item.now)
            if message is None:
                continue
            frames.add(self._recipients(send.to), encode(message))
            if isinstance(event, core.RaceFinished):
                frames.flush()  # what follows the finish elsewhere must come after it
                self._finished(event.result)

    def _add_snapshot(
        self, frames: fanout.Frames, to: core.Recipient, skip: ServerConnection | None
    ) -> None:
        """Queue the race's snapshot for ``to`` (but ``skip``): each racer's copy with its
        own ``you``, the spectators' without.

        The snapshot is encoded once; a racer's copy is that encoding with ``you`` put in
        front (:func:`protocol.codec.with_field`), the rest shared, not copied: a lobby of
        1,000 racers costs one encoding and 1,000 small heads per snapshot, not 1,000
        encodings of a list of 1,000 racers.
        """
        shared = encode(self.snapshot_for(None, None))
        racers = [to] if isinstance(to, str) else (
            () if to is core.Audience.SPECTATORS else self.race.racer_ids
        )
        seen = {skip}
        for racer_id in racers:
            connection = self._racer_connection(racer_id)
            if connection is not None and connection not in seen:
                seen.add(connection)
                frames.add_parts(connection, *with_field(shared, "you", racer_id))
        if to in (core.Audience.SPECTATORS, core.Audience.EVERYONE):
            frames.add([c for c in self.spectators if c not in seen], shared)

    def _recipients(self, to: core.Recipient) -> Collection[ServerConnection]:
        if isinstance(to, str):  # one racer: most messages (a move's placed and card)
            connection = self._racer_connection(to)
            return () if connection is None else (connection,)
        if to is core.Audience.SPECTATORS:
            return set(self.spectators)
        connections = {
            connection
            for racer_id in self.race.racer_ids
            if (connection := self._racer_connection(racer_id)) is not None
        }
        return connections if to is core.Audience.RACERS else connections | self.spectators

    def _racer_connection(self, racer_id: str) -> ServerConnection | None:
        """Where racer ``racer_id`` is connected now, if it still races here."""
        session = self._sessions.get(racer_id)
        if session is None or session.race_id != self.race_id:
            return None
        return session.connection

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
