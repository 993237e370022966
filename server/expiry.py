"""Session expiry: sessions left idle for ``ServerConfig.session_idle_expiry`` are forgotten.

A session costs memory and a row of the journal for as long as the server knows it, and
a client can make many. One that has had no connection for the expiry time, and is in no
race and no tournament that is not over, is removed from memory and from the journal's
``players`` table; its resume token then gets ``invalid_token``. A session found idle for
long enough but still held (a race still running, a tournament not over) is looked at
again one expiry time later.

The looks run on a timer in the shell, never on a move's path, and each forgets at most
``session_expiry_batch`` sessions: a backlog (after a long downtime, say) is worked off in
batches with the event loop's other callbacks between them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any, Protocol

from server.config import Clock, ServerConfig
from server.journal import PlayerRecord, PlayersForgotten, Record
from server.logs import log_event
from server.metrics import Metrics
from server.player_store import JobFactory
from server.sessions import SessionRegistry


class SessionRecords(Protocol):
    """Where sessions are stored (the journal's ``players`` table)."""

    def submit(self, *records: Record) -> concurrent.futures.Future[None]:
        """Queue ``records`` for the next commit."""
        ...

    async def write(self, *records: Record) -> None:
        """Write ``records`` and return once they are committed."""
        ...

    async def read_player(self, token_hash: bytes) -> PlayerRecord | None:
        """The stored player whose resume token has digest ``token_hash``."""
        ...

    async def run(self, job: JobFactory, *, writes: bool) -> Any:
        """Run a job of :mod:`server.player_store` (claimed names and keys)."""
        ...


class SessionExpiry:
    """Forgets idle sessions every ``session_expiry_interval`` seconds, until :meth:`stop`.

    Whether an idle session is still needed (a racer in a race not over, an entrant of a
    tournament not over) is the race tier's to say: each look asks it (``ask``, a
    :class:`~server.bus.CheckExpiry`), and the answer (:meth:`checked`) forgets the rest
    and sets the next look.
    """

    def __init__(
        self,
        config: ServerConfig,
        sessions: SessionRegistry,
        records: SessionRecords,
        metrics: Metrics,
        ask: Callable[[tuple[str, ...]], None],
    ) -> None:
        self._expiry = config.session_idle_expiry
        self._interval = config.session_expiry_interval
        self._batch = config.session_expiry_batch
        self._clock: Clock = config.clock
        self._sessions = sessions
        self._records = records
        self._metrics = metrics
        self._ask = ask
        self._asked = 0
        """How many sessions the question out asks about (0: none is out)."""
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.Handle | None = None
        self._stopped = False
        if self._expiry > 0:
            self._timer = self._loop.call_soon(self.run)  # a backlog at start goes first

    def run(self) -> None:
        """Look once: ask about up to a batch of expired sessions (the answer sets the
        next look)."""
        self._timer = None
        now = self._clock()
        idle = self._sessions.idle_before(now - self._expiry, self._batch)
        if not idle:
            self._next(self._interval)
            return
        self._asked = len(idle)
        self._ask(tuple(session.session_id for session in idle))

    def checked(self, keep: tuple[str, ...], forget: tuple[str, ...]) -> None:
        """The race tier's answer: forget ``forget`` (those still idle since before the
        expiry), count ``keep`` idle again from now; then set the next look (at once,
        after the loop's other callbacks, if the batch was full)."""
        if self._stopped or not self._asked:
            return
        now = self._clock()
        cutoff = now - self._expiry
        for session_id in keep:
            session = self._sessions.get(session_id)
            if session is not None and session.connection is None:
                self._sessions.detach(session, now)  # counted again from now
        forgotten: list[str] = []
        for session_id in forget:
            session = self._sessions.get(session_id)
            # Not one that came back while the question was out.
            if session is None or session.idle_since is None or session.idle_since > cutoff:
                continue
            self._sessions.remove(session)
            forgotten.append(session_id)
        if forgotten:
            self._records.submit(PlayersForgotten(tuple(forgotten)))
            self._metrics.sessions_expired_total += len(forgotten)
            log_event("sessions_expired", count=len(forgotten), left=len(self._sessions))
        full, self._asked = self._asked >= self._batch, 0
        self._next(0.0 if full else self._interval)

    def _next(self, delay: float) -> None:
        if not self._stopped:
            self._timer = self._loop.call_later(delay, self.run)

    def stop(self) -> None:
        """Look no more."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
