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
from collections.abc import Callable

from server.config import Clock, ServerConfig
from server.journal import PlayersForgotten
from server.logs import log_event
from server.metrics import Metrics
from server.sessions import Session, SessionRegistry
from server.store import Store


class SessionExpiry:
    """Forgets idle sessions every ``session_expiry_interval`` seconds, until :meth:`stop`."""

    def __init__(
        self,
        config: ServerConfig,
        sessions: SessionRegistry,
        journal: Store,
        metrics: Metrics,
        held: Callable[[Session], bool],
    ) -> None:
        """``held`` says whether a session is still needed although idle (a racer in a
        race still running, an entrant of a tournament not over)."""
        self._expiry = config.session_idle_expiry
        self._interval = config.session_expiry_interval
        self._batch = config.session_expiry_batch
        self._clock: Clock = config.clock
        self._sessions = sessions
        self._journal = journal
        self._metrics = metrics
        self._held = held
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.Handle | None = None
        if self._expiry > 0:
            self._timer = self._loop.call_soon(self.run)  # a backlog at start goes first

    def run(self) -> None:
        """Look once: forget up to a batch of expired sessions, and set the next look
        (at once, after the loop's other callbacks, if the batch was full)."""
        now = self._clock()
        idle = self._sessions.idle_before(now - self._expiry, self._batch)
        forgotten: list[str] = []
        for session in idle:
            if self._held(session):
                self._sessions.detach(session, now)  # counted again from now
            else:
                self._sessions.remove(session)
                forgotten.append(session.session_id)
        if forgotten:
            self._journal.submit(PlayersForgotten(tuple(forgotten)))
            self._metrics.sessions_expired_total += len(forgotten)
            log_event("sessions_expired", count=len(forgotten), left=len(self._sessions))
        delay = 0.0 if len(idle) >= self._batch else self._interval
        self._timer = self._loop.call_later(delay, self.run)

    def stop(self) -> None:
        """Look no more."""
        if self._timer is not None:
            self._timer.cancel()
