"""Winnable seeds for races and tournaments: searched for in a child process, never waited
for on the event loop's thread, and bounded.

A request for a winnable deal (``seed_policy: winnable``) is answered from a small stock
when it asks for the default ruleset: seeds found ahead of time, refilled in the
background one search at a time and idle when full. Any other ruleset is searched for on
request by the search worker (:mod:`server.search_worker`, a low-priority child process),
one search at a time in the order asked. Every search is bounded:

- by ``ServerConfig.winnable_budget`` seconds in all, across the seeds it tries; a search
  that finds none refuses the request with ``no_winnable_deal``;
- a ruleset whose search found none is refused up front, without searching, for
  ``ServerConfig.hopeless_ruleset_seconds`` (asking again costs the server nothing);
- one request at a time per requester (a session, or a tournament pairing its arena), and
  ``ServerConfig.winnable_searches`` server-wide: one more is refused at once with
  ``server_busy``.

So hostile requests (rules that deal no winnable seed) cost at most one child's spare
processor time, and an ordinary winnable race under the default rules never queues behind
them while the stock lasts.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING

from engine import Ruleset
from protocol import ErrorCode
from server.logs import log_event
from server.search_worker import SearchWorker, SearchWorkerError

if TYPE_CHECKING:
    from server.config import ServerConfig
    from server.metrics import Metrics

#: The rules the stock is kept for: the published game, which nearly every deal wins.
STOCKED_RULES = Ruleset()

#: Seeds one search may try (each for at most a second, all within the search's budget).
CANDIDATES = 20


class SeedRefused(Exception):
    """No winnable seed for this request: ``code`` says why (``no_winnable_deal`` or
    ``server_busy``), ``message`` says it for a person."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class WinnableSeeds:
    """The server's source of winnable seeds (one per :class:`~server.app.RaceServer`)."""

    def __init__(self, config: ServerConfig, metrics: Metrics) -> None:
        self._config = config
        self._metrics = metrics
        self._worker = SearchWorker()
        self._stock: deque[str] = deque()
        self._refilling: asyncio.Task[None] | None = None
        self._turn = asyncio.Lock()
        """One search at a time, in the order asked (the worker runs one anyway; waiting
        here lets a request see what the search before it learnt about its ruleset)."""
        self._requesters: set[str] = set()
        """Who has a request waiting or being searched for now."""
        self._hopeless: dict[Ruleset, float] = {}
        """Rulesets refused up front, and until when (clock time)."""
        self._closed = False
        metrics.winnable_requests = lambda: len(self._requesters)
        metrics.winnable_stock = lambda: len(self._stock)

    def start(self) -> None:
        """Begin filling the stock (a server configured with none searches for nothing)."""
        self._refill()

    async def close(self) -> None:
        """Stop searching (requests waiting are refused) and stop the worker."""
        self._closed = True
        if self._refilling is not None:
            self._refilling.cancel()
        await self._worker.close()

    def take(self, rules: Ruleset) -> str | None:
        """A seed found ahead of time for ``rules``, at once, or ``None`` if there is none
        ready. Never waits: the stock is refilled in the background."""
        if rules != STOCKED_RULES or not self._stock:
            return None
        seed = self._stock.popleft()
        self._refill()
        return seed

    def check_hopeful(self, rules: Ruleset) -> None:
        """Raise :class:`SeedRefused` (``no_winnable_deal``) if ``rules`` are refused up
        front: a search under them found no winnable deal a short while ago."""
        until = self._hopeless.get(rules)
        if until is None:
            return
        left = until - self._config.clock()
        if left <= 0:
            del self._hopeless[rules]
            return
        raise SeedRefused(
            ErrorCode.NO_WINNABLE_DEAL,
            f"no winnable deal was found under the rules {rules.notation()} lately; "
            f"they are refused for {left:.0f} s more",
        )

    async def find(self, rules: Ruleset, requester: str) -> str:
        """A fresh winnable seed under ``rules`` for ``requester``: from the stock at once,
        otherwise after a search (see the module's bounds). Raises :class:`SeedRefused`."""
        seed = self.take(rules)
        if seed is not None:
            return seed
        self.check_hopeful(rules)
        if requester in self._requesters:
            raise SeedRefused(
                ErrorCode.SERVER_BUSY, "a search for a winnable deal of yours is still running"
            )
        if len(self._requesters) >= self._config.winnable_searches:
            raise SeedRefused(
                ErrorCode.SERVER_BUSY,
                "too many searches for winnable deals are waiting; try again later",
            )
        self._requesters.add(requester)
        try:
            async with self._turn:
                self.check_hopeful(rules)  # the search before this one may have just failed
                seed = await self._search(rules)
        finally:
            self._requesters.discard(requester)
        if seed is None:
            self._refuse_for_a_while(rules)
            raise SeedRefused(
                ErrorCode.NO_WINNABLE_DEAL,
                f"no winnable deal was found under the rules {rules.notation()} "
                f"within {self._config.winnable_budget:g} s",
            )
        return seed

    def _refuse_for_a_while(self, rules: Ruleset) -> None:
        now = self._config.clock()
        for expired in [r for r, until in self._hopeless.items() if until <= now]:
            del self._hopeless[expired]
        self._hopeless[rules] = now + self._config.hopeless_ruleset_seconds
        log_event("ruleset_hopeless", rules=rules.notation())

    async def _search(self, rules: Ruleset) -> str | None:
        """One search by the worker, within the budget; ``None`` if it found no seed."""
        if self._closed:
            raise SeedRefused(ErrorCode.SHUTTING_DOWN, "the server is shutting down")
        candidates = [self._config.seed_source() for _ in range(CANDIDATES)]
        try:
            seed = await self._worker.winnable(candidates, rules, self._config.winnable_budget)
        except SearchWorkerError as error:
            if self._closed:
                raise SeedRefused(ErrorCode.SHUTTING_DOWN, "the server is shutting down") from None
            log_event("winnable_error", logging.ERROR, error=repr(error))
            raise SeedRefused(
                ErrorCode.SERVER_BUSY, "the search for a winnable deal failed; try again"
            ) from None
        self._metrics.winnable_searches_done += 1
        return seed

    def _refill(self) -> None:
        full = len(self._stock) >= self._config.winnable_stock
        if full or self._closed or self._refilling is not None:
            return
        self._refilling = asyncio.get_running_loop().create_task(
            self._fill(), name="winnable-stock"
        )

    async def _fill(self) -> None:
        """Search until the stock is full, then stop (the next :meth:`take` starts again)."""
        try:
            while len(self._stock) < self._config.winnable_stock:
                async with self._turn:
                    seed = await self._search(STOCKED_RULES)
                if seed is None:
                    log_event("winnable_stock_short", logging.WARNING, stock=len(self._stock))
                    return
                self._stock.append(seed)
        except SeedRefused:
            return  # the worker failed (logged): the next take tries again
        finally:
            self._refilling = None
