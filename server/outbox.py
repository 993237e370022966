"""The one way out of the race tier: events leave only once what they announce is stored.

Every race (:class:`~server.host.RaceHost`), every tournament
(:class:`~server.tournament_host.TournamentDesk`) and the lobby
(:class:`~server.race_tier.RaceTier`) puts what a command causes into an :class:`Outbox`,
with the journal's future for the records the command wrote. Items leave from the head,
in order, each once its commit is done: an item with nothing to wait for and nothing
ahead of it leaves at once, inside :meth:`Outbox.post`; the rest leave from the journal's
callback when their transaction commits (no task sits between the commit and the send,
so a move's answer costs no extra trip through the event loop). Everything that leaves
in one go is published on the bus as one batch, which the socket tier writes to each
connection in one write.

**The journal-failure policy** (the one policy of the server). A commit that fails leaves
the race or tournament in memory ahead of what is stored. Nothing it announces may go out
(a move not stored must never be acknowledged), and nothing more of it may be answered,
since each later answer would build on the lost one. So the outbox that sees the failure
sends nothing more, ever, and calls ``on_failure``, which stops the server: every
connection is closed with 1001 (going away), the server says why, and a restart recovers
every race and tournament from what the journal holds, which is everything acknowledged.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from server.bus import Bus, Event
from server.logs import failure, log_event

Build = Callable[[list[Event]], Callable[[], None] | None]
"""What an item does when it leaves: append its events to the batch, and return what to
call once they are published (a race's finish: whoever is told of it hears it after its
racers), or ``None``."""


class Commits(Protocol):
    """What an outbox needs of the journal."""

    def when_committed(
        self, done: concurrent.futures.Future[None], callback: Callable[[], None]
    ) -> None:
        """Call ``callback`` in the event loop once ``done`` is resolved."""
        ...


@dataclass(slots=True)
class _Item:
    committed: concurrent.futures.Future[None] | None
    build: Build


class Outbox:
    """The ordered, journal-first way out of one race, tournament or the lobby."""

    def __init__(
        self,
        journal: Commits,
        bus: Bus,
        on_failure: Callable[[Exception], None],
        name: str,
    ) -> None:
        """``name`` says whose outbox it is in log lines (``race=ID``, ...)."""
        self._journal = journal
        self._bus = bus
        self._on_failure = on_failure
        self._name = name
        self._items: deque[_Item] = deque()
        self._delivering = False
        self._waiting_for: concurrent.futures.Future[None] | None = None
        """The commit the head waits for (a callback is registered for it)."""
        self._closed = False
        """Set by :meth:`drain` or a failed commit: nothing more is sent."""
        self._drained: asyncio.Future[None] | None = None

    def post(self, committed: concurrent.futures.Future[None] | None, build: Build) -> None:
        """Queue ``build`` to run once ``committed`` (if any) and everything queued before
        it are done; it runs now if nothing needs waiting for."""
        if self._closed and self._drained is None:
            return
        self._items.append(_Item(committed, build))
        self._send_ready()

    async def drain(self) -> None:
        """Wait until everything queued so far has been sent; nothing queued later is."""
        if self._items and not self._closed:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
        self._closed = True

    def close(self) -> None:
        """Send nothing more."""
        self._closed = True
        self._items.clear()

    def _send_ready(self) -> None:
        """Send items from the head while their commits are done; when the head must
        wait, ask the journal to call back once its transaction commits."""
        if self._delivering:
            return  # an item's delivery posted another: the loop below sends it
        self._delivering = True
        events: list[Event] = []
        try:
            while self._items:
                item = self._items[0]
                committed = item.committed
                if committed is not None and not committed.done():
                    if self._waiting_for is not committed:
                        self._waiting_for = committed
                        self._journal.when_committed(committed, self._committed)
                    return
                self._items.popleft()
                if committed is not None and (error := committed.exception()) is not None:
                    self._failed(error)
                    return
                try:
                    after = item.build(events)
                except Exception as error:  # one bad message must not stop the outbox
                    log_event("internal_error", logging.ERROR, error=failure(error),
                              **self._where())
                    continue
                if after is not None:
                    self._bus.publish(events)
                    events = []
                    after()
        finally:
            self._delivering = False
            if events:
                self._bus.publish(events)
            if not self._items and self._drained is not None and not self._drained.done():
                self._drained.set_result(None)

    def _committed(self) -> None:
        self._waiting_for = None
        if not self._closed or self._drained is not None:
            self._send_ready()

    def _failed(self, error: BaseException) -> None:
        """The policy (see the module's docstring): send nothing more, stop the server."""
        log_event("journal_error", logging.ERROR, error=repr(error), **self._where())
        self.close()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._on_failure(error if isinstance(error, Exception) else RuntimeError(repr(error)))

    def _where(self) -> dict[str, str]:
        kind, _, key = self._name.partition(":")
        return {kind: key} if key else {"outbox": kind}
