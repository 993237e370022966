"""Pars of finished races, searched for by the search worker behind a bounded queue.

When a race finishes, its deal waits here for a par search (one at a time, in a
low-priority child process: :mod:`server.search_worker`). Races dealt one seed share a
search. A busy server finishes races faster than pars can be searched, so the queue is
bounded and nothing is searched that nobody will see:

- the newest deal is searched first: its racers are looking at its result now;
- when one more deal would not fit in ``ServerConfig.par_queue_limit``, the oldest
  waiting is dropped (its racers have most likely moved on);
- a deal whose races have all been forgotten (``finished_linger`` after the finish, when
  nobody can see or ask for them any more) is dropped unsearched.

A dropped deal gets no ``race_par``. ``/metrics`` shows the queue's length and the
searches done and dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from typing import TYPE_CHECKING, Protocol

from engine import Ruleset
from protocol import RacePar
from server.logs import log_event
from server.search_worker import SearchWorker, SearchWorkerError

if TYPE_CHECKING:
    from server.config import ServerConfig
    from server.host import RaceHost
    from server.metrics import Metrics

Deal = tuple[str, Ruleset]
"""A seed and the rules it is played under: what a par is the par of."""


class ParWanted(Protocol):
    """Who waits for a deal's par: a finished race's host, or a revealed daily deal."""

    @property
    def race_id(self) -> str:
        """What the logs call it."""

    def announce_par(self, par: RacePar) -> None:
        """Take the par found."""


class ParQueue:
    """Finished races waiting for their deal's par (one per :class:`~server.app.RaceServer`)."""

    def __init__(self, config: ServerConfig, metrics: Metrics) -> None:
        self._config = config
        self._metrics = metrics
        self._worker = SearchWorker()
        self._waiting: OrderedDict[Deal, list[ParWanted]] = OrderedDict()
        """Deals waiting for a search, oldest first, with the races that want each."""
        self._searching: tuple[Deal, list[ParWanted]] | None = None
        self._task: asyncio.Task[None] | None = None
        """Runs while deals are waiting, and only then."""
        self._closed = False
        metrics.par_queue = lambda: len(self._waiting)

    def add(self, host: RaceHost) -> None:
        """Search for the par of ``host``'s deal (its race has just finished)."""
        self.want((host.race.seed, host.race.options.ruleset), host)

    def want(self, deal: Deal, host: ParWanted) -> None:
        """Search for ``deal``'s par for ``host`` (newest first, like every deal)."""
        if self._closed:
            return
        if self._searching is not None and self._searching[0] == deal:
            self._searching[1].append(host)
            return
        self._waiting.setdefault(deal, []).append(host)
        self._waiting.move_to_end(deal)  # just finished: among the first searched
        while len(self._waiting) > self._config.par_queue_limit:
            _, hosts = self._waiting.popitem(last=False)
            self._dropped("queue_full", hosts)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="pars")

    def forget(self, host: RaceHost) -> None:
        """``host``'s race is gone from the server: nobody will see its par any more."""
        deal = (host.race.seed, host.race.options.ruleset)
        if self._searching is not None and self._searching[0] == deal:
            hosts = self._searching[1]
            if host in hosts:
                hosts.remove(host)
            return
        hosts = self._waiting.get(deal, [])
        if host in hosts:
            hosts.remove(host)
            if not hosts:
                del self._waiting[deal]
                self._dropped("forgotten", [host])

    def __len__(self) -> int:
        """Deals waiting for a search (not counting the one being searched)."""
        return len(self._waiting)

    async def close(self) -> None:
        """Search no more (no par is sent once the server has stopped) and stop the worker."""
        self._closed = True
        self._waiting.clear()
        if self._task is not None:
            self._task.cancel()
        await self._worker.close()

    def _dropped(self, why: str, hosts: list[ParWanted]) -> None:
        self._metrics.par_searches_dropped += 1
        log_event("par_dropped", why=why, races=[host.race_id for host in hosts])

    async def _run(self) -> None:
        """Search the waiting deals, newest first, until none is left."""
        try:
            while self._waiting:
                deal, hosts = self._waiting.popitem(last=True)
                self._searching = (deal, hosts)
                try:
                    found = await self._worker.par(*deal, self._config.par_budget)
                except SearchWorkerError as error:
                    races = [host.race_id for host in hosts]
                    log_event("par_error", logging.ERROR, races=races, error=repr(error))
                    continue
                finally:
                    self._searching = None
                self._metrics.par_searches_done += 1
                for host in hosts:
                    host.announce_par(
                        RacePar(
                            race=host.race_id,
                            score=found.score,
                            proven=found.proven,
                            cards_used=found.cards_used,
                            at_most=found.at_most,
                        )
                    )
        finally:
            self._task = None
