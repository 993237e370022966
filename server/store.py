"""The store: what the server and the commands need from where races are kept.

One interface, :class:`Store`, two implementations: :class:`server.journal.Journal`
(SQLite, the embedded default) and :class:`server.postgres.PostgresStore` (PostgreSQL,
chosen by a ``postgresql://`` URL as ``--db`` or ``FOURSQUARE_DB``). Both take the same
records (:mod:`server.journal`'s and :mod:`server.tournament_store`'s), group what the
event loop submits in one iteration into one transaction, and resolve one future per
transaction: a move is acknowledged only once that future says its command is committed.

**Leases and fencing.** Each race and tournament is written by the node that holds its
lease: a row of the ``leases`` table (resource id, owner, epoch, expiry). Taking a lease
(:meth:`Store.acquire_lease`, :meth:`Store.take_over_lease`) raises its epoch, and every
transaction carries the epochs of the leases the store holds for the records in it; the
store refuses the whole transaction (:class:`LeaseLost`, nothing of it written) when one
of them is no longer the lease's epoch, that is when another node has taken the lease
over. A one-server store holds the lease of :data:`EVERY_RESOURCE` instead, which covers
every record it writes: the last server opened on a database holds it, and an older one
still writing there is refused.

**Faults.** A store that cannot reach its database fails the transaction with
:class:`StoreUnavailable` (the moves in it are not acknowledged), says so in
:attr:`Store.health`, and connects again in the background; :meth:`Store.available`
waits for that.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
import os
import threading
import urllib.parse
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from protocol.result import RaceResult
    from server.config import ServerConfig
    from server.journal import PlayerRecord, Record, Recovered
    from server.player_store import JobFactory
    from server.tournament import SeedSource, Tournament
    from server.tournament_store import StoredTournament

#: The resource of the lease that covers every race and tournament: what a store of one
#: server holds (a cluster's nodes hold a lease per race and tournament instead).
EVERY_RESOURCE = "*"

#: The owner of :data:`EVERY_RESOURCE`'s lease when a lone server holds it: every lone
#: server has this one name, so a restarted server takes its own lease back at once, and
#: a second server opened on the same database takes it from the first, which is then
#: fenced off.
LONE_SERVER = "server"


class StoreError(Exception):
    """A write the store could not make; the records in it are not committed."""


class StoreUnavailable(StoreError):
    """The database cannot be reached (down, restarting, the connection cut). Nothing of
    the transaction is acknowledged; a commit cut off in its last round trip may still have
    been applied by the database, so after this a node rebuilds what it serves from the
    store rather than trusting its memory. :attr:`Store.health` says when to try again."""


class LeaseLost(StoreError):
    """Another node holds the lease of ``resources`` now (their epoch moved on): the whole
    transaction was refused and nothing of it stored. The node must stop serving them."""

    def __init__(self, resources: Iterable[str]) -> None:
        self.resources = tuple(sorted(resources))
        shown = ", ".join(self.resources)
        super().__init__(
            f"the lease of {shown} is held by another node now, so its records were refused"
        )


class LeaseHeld(StoreError):
    """:meth:`Store.acquire_lease` refused: another owner holds the lease and it has not
    expired."""

    def __init__(self, lease: Lease) -> None:
        self.lease = lease
        until = "for good" if lease.expires_at is None else f"until {lease.expires_at:.3f}"
        super().__init__(f"the lease of {lease.resource_id} is held by {lease.owner} {until}")


class Health(Enum):
    """Whether the store can write now."""

    AVAILABLE = "available"
    UNAVAILABLE = "unavailable"
    """Writes fail at once with :class:`StoreUnavailable` until it reconnects."""


@dataclass(frozen=True, slots=True)
class Lease:
    """A node's right to write a resource's records: ``epoch`` is the fencing token."""

    resource_id: str
    owner: str
    epoch: int
    expires_at: float | None
    """Seconds since the Unix epoch, on the database's clock; ``None``: never."""


class Store(Protocol):
    """Everything the server and the commands need from a store."""

    stores: bool
    """Whether anything written is kept (``False`` only for the benchmark's no-journal)."""

    @property
    def where(self) -> str:
        """The store as a person names it (a file, or the URL without its password)."""
        ...

    @property
    def health(self) -> Health:
        """Whether writes can be made now."""
        ...

    def submit(self, *records: Record) -> concurrent.futures.Future[None]:
        """Queue ``records`` for the transaction the event loop commits at the end of its
        iteration; the future (shared with that transaction's other records) resolves once
        committed, or with the error that refused it."""
        ...

    def when_committed(
        self, done: concurrent.futures.Future[None], callback: Callable[[], None]
    ) -> None:
        """Call ``callback`` in the event loop once ``done`` is resolved."""
        ...

    async def wait(self, done: concurrent.futures.Future[None]) -> None:
        """Wait until ``done``'s transaction has committed; raises what refused it."""
        ...

    async def write(self, *records: Record) -> None:
        """Submit ``records`` and wait for their commit."""
        ...

    async def recover(self) -> Recovered:
        """Every player, every unfinished race and what players watch."""
        ...

    async def read_results(self, race_ids: Collection[str]) -> dict[str, RaceResult]:
        """The stored results of those of ``race_ids`` that have one."""
        ...

    async def stored_race_ids(self, race_ids: Collection[str]) -> set[str]:
        """Those of ``race_ids`` that a stored race has (over and forgotten, or not)."""
        ...

    async def read_player(self, token_hash: bytes) -> PlayerRecord | None:
        """The stored player whose resume token has digest ``token_hash`` (in a cluster,
        a session made on another node resumes on this one)."""
        ...

    async def read_tournaments(
        self, code: str | None = None, *, include_finished: bool = True
    ) -> list[StoredTournament]:
        """Every stored tournament, oldest first (only the one with join code ``code`` if
        given; without the finished ones unless ``include_finished``)."""
        ...

    async def run(self, job: JobFactory, *, writes: bool) -> Any:
        """Run the job ``job()`` makes (:mod:`server.player_store`) as a transaction of its
        own, not in the group commit, and return its answer (a store may make it again to
        try once more). ``writes``: it may write, and so runs alone
        (no other writing job of any node between its reads and its writes); otherwise it
        reads one snapshot. Raises :class:`StoreUnavailable` (PostgreSQL) or
        :class:`~server.journal_file.JournalRefused` when it cannot be run."""
        ...

    async def acquire_lease(self, resource_id: str, owner: str, ttl: float | None) -> Lease:
        """Take the lease of ``resource_id`` for ``owner`` for ``ttl`` seconds (``None``:
        for good), with a new epoch, if nobody holds it, it has expired, or ``owner``
        holds it already; raises :class:`LeaseHeld` otherwise. The store then fences its
        writes of that resource with the new epoch."""
        ...

    async def renew_lease(self, lease: Lease, ttl: float | None) -> Lease:
        """Extend ``lease`` (same epoch); raises :class:`LeaseLost` if its epoch has moved
        on."""
        ...

    async def take_over_lease(self, resource_id: str, owner: str, ttl: float | None) -> Lease:
        """Take the lease of ``resource_id`` for ``owner`` whoever holds it (failover): a
        new epoch, so the previous holder's writes are refused from now on."""
        ...

    async def release_lease(self, lease: Lease) -> None:
        """Let ``lease`` expire now (if it is still at its epoch), for another to acquire."""
        ...

    async def read_lease(self, resource_id: str) -> Lease | None:
        """The lease of ``resource_id`` as the database holds it now, if any."""
        ...

    @property
    def held_leases(self) -> Mapping[str, Lease]:
        """The leases this store holds and fences its writes with, by resource (a lease
        found lost, by a refused write or renewal, is no longer in it)."""
        ...

    async def available(self) -> None:
        """Return once :attr:`health` is :attr:`Health.AVAILABLE`."""
        ...

    async def aclose(self) -> None:
        """Commit what is queued, then close; nothing can be written after."""
        ...


# ------------------------------------------------------------ shared parts

#: The statements on the ``leases`` table, in SQL both databases take: ``?`` for each
#: parameter and ``{now}`` for the database's clock (seconds since the Unix epoch). Each
#: is one statement, so each is atomic: a row lock in PostgreSQL, the write lock in SQLite.
_LEASE_COLUMNS = "resource_id, owner, epoch, expires_at"
_TAKE = (
    "INSERT INTO leases (resource_id, owner, epoch, expires_at) VALUES (?, ?, 1, {now} + ?)"
    " ON CONFLICT (resource_id) DO UPDATE SET owner = excluded.owner,"
    " epoch = leases.epoch + 1, expires_at = excluded.expires_at"
)
ACQUIRE_LEASE = (
    _TAKE + " WHERE leases.owner = excluded.owner OR leases.expires_at <= {now}"
    f" RETURNING {_LEASE_COLUMNS}"
)
TAKE_OVER_LEASE = _TAKE + f" RETURNING {_LEASE_COLUMNS}"
RENEW_LEASE = (
    "UPDATE leases SET expires_at = {now} + ? WHERE resource_id = ? AND epoch = ?"
    f" RETURNING {_LEASE_COLUMNS}"
)
RELEASE_LEASE = (
    "UPDATE leases SET expires_at = {now} WHERE resource_id = ? AND epoch = ?"
    f" RETURNING {_LEASE_COLUMNS}"
)
READ_LEASE = f"SELECT {_LEASE_COLUMNS} FROM leases WHERE resource_id = ?"

LeaseRow = tuple[str, str, int, float | None]


class StoreBase(abc.ABC):
    """What both stores share: the callbacks run when a transaction commits, waiting for
    one, and the leases held (the store's fences) with the operations on them."""

    def __init__(self) -> None:
        self._callbacks: dict[concurrent.futures.Future[None], list[Callable[[], None]]] = {}
        """What to call in the event loop when a pending transaction commits."""
        self._held: Mapping[str, Lease] = {}
        """The leases this store holds, by resource: replaced whole on every change, so a
        writer thread reads one consistent mapping without a lock."""
        self._held_lock = threading.Lock()

    @abc.abstractmethod
    def submit(self, *records: Record) -> concurrent.futures.Future[None]:
        """See :meth:`Store.submit`."""

    def when_committed(
        self, done: concurrent.futures.Future[None], callback: Callable[[], None]
    ) -> None:
        """Call ``callback`` in the running event loop once the transaction behind ``done``
        has committed or failed (read ``done`` to know which). Every callback of one
        transaction runs from a single wake-up of the loop."""
        if done.done():
            callback()
            return
        self._callbacks.setdefault(done, []).append(callback)

    def _settle(self, done: concurrent.futures.Future[None], error: Exception | None) -> None:
        """In the event loop: resolve a committed (or failed) transaction's future, unless
        it already is, and run its callbacks."""
        if not done.done():
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)
        for callback in self._callbacks.pop(done, ()):
            callback()

    async def wait(self, done: concurrent.futures.Future[None]) -> None:
        """Wait (in the event loop) until the transaction behind ``done`` has committed;
        raises what the commit raised."""
        if not done.done():
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def wake() -> None:
                if not waiter.done():  # a cancelled wait has nobody to wake
                    waiter.set_result(None)

            self.when_committed(done, wake)
            await waiter
        done.result()

    async def write(self, *records: Record) -> None:
        """Write ``records`` and return once they are committed, without blocking the loop."""
        await self.wait(self.submit(*records))

    # ------------------------------------------------------------- leases

    @property
    def held_leases(self) -> Mapping[str, Lease]:
        """The leases this store holds and fences its writes with, by resource."""
        return self._held

    def _hold(self, lease: Lease) -> Lease:
        with self._held_lock:
            self._held = {**self._held, lease.resource_id: lease}
        return lease

    def _let_go(self, resources: Collection[str]) -> None:
        """Stop holding the leases of ``resources`` (lost, or released)."""
        with self._held_lock:
            self._held = {r: lease for r, lease in self._held.items() if r not in resources}

    @abc.abstractmethod
    async def _run_lease(self, sql: str, parameters: tuple[object, ...]) -> LeaseRow | None:
        """Run one of the lease statements (``?`` and ``{now}`` as written); its row."""

    async def acquire_lease(self, resource_id: str, owner: str, ttl: float | None) -> Lease:
        """See :meth:`Store.acquire_lease`."""
        row = await self._run_lease(ACQUIRE_LEASE, (resource_id, owner, ttl))
        if row is None:
            held = await self.read_lease(resource_id)
            assert held is not None, "a lease row is never deleted"
            raise LeaseHeld(held)
        return self._hold(Lease(*row))

    async def take_over_lease(self, resource_id: str, owner: str, ttl: float | None) -> Lease:
        """See :meth:`Store.take_over_lease`."""
        row = await self._run_lease(TAKE_OVER_LEASE, (resource_id, owner, ttl))
        assert row is not None, "a takeover always writes its row"
        return self._hold(Lease(*row))

    async def renew_lease(self, lease: Lease, ttl: float | None) -> Lease:
        """See :meth:`Store.renew_lease`."""
        row = await self._run_lease(RENEW_LEASE, (ttl, lease.resource_id, lease.epoch))
        if row is None:
            self._let_go((lease.resource_id,))
            raise LeaseLost((lease.resource_id,))
        return self._hold(Lease(*row))

    async def release_lease(self, lease: Lease) -> None:
        """See :meth:`Store.release_lease`."""
        self._let_go((lease.resource_id,))
        await self._run_lease(RELEASE_LEASE, (lease.resource_id, lease.epoch))

    async def read_lease(self, resource_id: str) -> Lease | None:
        """The lease of ``resource_id`` as the database holds it now, if any."""
        row = await self._run_lease(READ_LEASE, (resource_id,))
        return None if row is None else Lease(*row)


# ------------------------------------------------------------------ fences


def fences_of(records: Iterable[Record], held: Mapping[str, Lease]) -> dict[str, int]:
    """The epochs a transaction of ``records`` must still find in the ``leases`` table:
    :data:`EVERY_RESOURCE`'s alone when it is held (it covers every record), else the
    lease of each race and tournament written (or the lease that covers it). Raises
    :class:`LeaseLost` for a resource whose lease is not held (it was lost, or never
    taken)."""
    every = held.get(EVERY_RESOURCE)
    if every is not None:
        return {EVERY_RESOURCE: every.epoch}
    from server.journal import resource_of

    fences: dict[str, int] = {}
    seen: set[str] = set()
    for record in records:
        resource = resource_of(record)
        if resource is None or resource in seen:
            continue
        seen.add(resource)
        lease = held.get(resource)
        if lease is None:
            raise LeaseLost((resource,))
        # Held under its own name, or covered by another's lease (a cluster's tournaments
        # and their races are covered by the lobby's): the row to check is the lease's.
        fences[lease.resource_id] = lease.epoch
    return fences


def stale_fences(fences: Mapping[str, int], epochs: Mapping[str, int]) -> list[str]:
    """The resources of ``fences`` whose epoch is not the one ``epochs`` (the table's) has."""
    return [resource for resource, epoch in fences.items() if epochs.get(resource) != epoch]


# ------------------------------------------------------------ choosing one


def is_database_url(db: str) -> bool:
    """Whether ``db`` names a PostgreSQL database rather than an SQLite file."""
    return db.startswith(("postgresql://", "postgres://"))


def shown(db: str) -> str:
    """``db`` as it may be logged and shown: a URL without its password."""
    if not is_database_url(db):
        return db
    parts = urllib.parse.urlsplit(db)
    if parts.password is None:
        return db
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{netloc}"))


async def open_store(config: ServerConfig) -> Store:
    """The store ``config`` names (its ``db``), opened for writing and holding the lease
    of :data:`EVERY_RESOURCE` (unless it is a cluster's: its nodes take it as they
    lead). Raises :class:`~server.journal_file.JournalRefused` (a sentence) when it may
    not be opened."""
    if not config.journal:
        from server.journal import DisabledJournal

        return DisabledJournal()
    if is_database_url(config.db):
        from server.postgres import PostgresStore

        # A cluster's nodes take leases as they lead (server.cluster), not one for good.
        store: Store = await PostgresStore.open(
            config.db, timeout=config.store_timeout, lease_everything=config.cluster is None
        )
        return store
    from server.journal import Journal
    from server.journal_file import refusing

    with refusing(Path(config.db)):  # SQLite errors here: a sentence, not a traceback
        return await asyncio.to_thread(Journal, config.db, sync=config.sync)


def load_result(db: str, race_id: str) -> RaceResult | None:
    """The stored result of race ``race_id`` in the store ``db`` (for commands: blocks),
    ``None`` if it has none; raises :class:`~server.journal_file.JournalRefused`."""
    if is_database_url(db):
        from server.postgres import read_once

        found: dict[str, RaceResult] = read_once(
            db, lambda store: store.read_results((race_id,)), timeout=_command_timeout()
        )
        return found.get(race_id)
    from server.journal import Journal

    return Journal.load_result(Path(db), race_id)


def load_tournaments(
    db: str | os.PathLike[str], seed_source: SeedSource | None = None, code: str | None = None
) -> list[Tournament]:
    """The tournaments in the store ``db`` (only the one with ``code`` if given), restored
    (for commands: blocks); raises :class:`~server.journal_file.JournalRefused`."""
    from server.tournament_store import load_tournaments as from_file
    from server.tournament_store import restore

    if isinstance(db, str) and is_database_url(db):
        from server.postgres import read_once

        stored = read_once(db, lambda store: store.read_tournaments(code),
                           timeout=_command_timeout())
        return [restore(tournament, seed_source) for tournament in stored]
    return from_file(Path(db), seed_source, code)


def _command_timeout() -> float:
    from server.config import ServerConfig

    return ServerConfig().store_timeout
