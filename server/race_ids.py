"""A lone server's race ids: drawn at random, and checked against the store before use.

A race id (also a private race's join code) is :data:`~server.lobby.RACE_CODE_LENGTH`
characters of :data:`~server.codes.CODE_ALPHABET`, drawn at random. The races in memory
are not all the races there were: a finished race is forgotten but stays in the store,
and its id must never be given again (the store's ``races`` table refuses it, and a
commit refused stops the server, see :mod:`server.outbox`). So a lone server keeps
:data:`CHECKED_RACE_IDS` ids that no stored race has, checked in one read of the store
before they are needed (a quarter used, the missing ones are drawn and checked again),
and a new race takes one at once: opening a race never waits for the store, and the
lobby, a pure core, never does I/O. A candidate the store already has is simply
dropped. Only this server writes races to its store (it holds the lease of every
resource), so an id checked stays unused until it is taken.

A node of a cluster leases its ids ahead instead (:mod:`server.cluster`): the store
gives a lease only once, and a finished race keeps its lease for good.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Container

from protocol import ErrorCode
from server.journal_file import JournalRefused
from server.lobby import RaceIdSource
from server.logs import log_event
from server.race_tier import Refused
from server.store import Store, StoreError

#: Race ids a lone server holds checked before it needs them (a quarter used, the missing
#: ones are checked again in one read): more than any burst of new races between two reads.
CHECKED_RACE_IDS = 256

class CheckedRaceIds:
    """Race ids no stored race has, checked ahead; :meth:`take` is the race tier's id
    source (:class:`~server.race_tier.Ownership`)."""

    def __init__(self, store: Store, candidates: RaceIdSource, size: int = CHECKED_RACE_IDS):
        self._store = store
        self._candidates = candidates
        self._size = size
        self._ready: deque[str] = deque()
        """Checked ids, in the order they were drawn."""
        self._checking: asyncio.Task[None] | None = None

    async def fill(self) -> None:
        """Draw and check ids until :data:`CHECKED_RACE_IDS` are ready. Raises what the
        store raises (:class:`~server.store.StoreError`,
        :class:`~server.journal_file.JournalRefused`) if it cannot be read."""
        while len(self._ready) < self._size:
            drawn: list[str] = []
            ready = set(self._ready)
            while len(drawn) < self._size - len(self._ready):
                drawn.append(self._candidates(ready.union(drawn)))
            stored = await self._store.stored_race_ids(drawn)
            ready = set(self._ready)  # (taken from meanwhile: none may come twice)
            self._ready.extend(d for d in drawn if d not in stored and d not in ready)

    def take(self, taken: Container[str]) -> str:
        """A checked id not in ``taken`` (the races in memory), at once; raises
        :class:`~server.race_tier.Refused` (``unavailable``) if none is ready, which only
        a store that cannot be read for a while leaves."""
        try:
            while self._ready:
                race_id = self._ready.popleft()
                if race_id not in taken:
                    return race_id
        finally:
            self._check_soon()
        raise Refused(
            ErrorCode.UNAVAILABLE,
            "the server cannot check a new race id against its store right now: "
            "send it again shortly",
        )

    def _check_soon(self) -> None:
        if len(self._ready) < self._size * 3 // 4 and (
            self._checking is None or self._checking.done()
        ):
            self._checking = asyncio.get_running_loop().create_task(self._refill())

    async def _refill(self) -> None:
        try:
            await self.fill()
        except (StoreError, JournalRefused) as error:  # the next race asks again
            log_event("race_ids_unchecked", logging.WARNING, error=repr(error))

    async def stop(self) -> None:
        """Check no more (the server stops)."""
        if self._checking is not None:
            self._checking.cancel()
            await asyncio.gather(self._checking, return_exceptions=True)
