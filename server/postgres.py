"""The store in PostgreSQL: the journal's records in a database several servers can share.

Chosen by a ``postgresql://`` URL as ``--db`` or ``FOURSQUARE_DB`` (see
:func:`server.store.open_store`). It keeps the journal's promise: what the event loop
submits in one iteration goes into one transaction, and a move is acknowledged only once
that transaction has committed. Nothing waits on the database on the event loop's
behalf: the driver (psycopg 3) runs on the loop itself, and a transaction is written in
*pipeline mode*, so BEGIN, the fence check, every INSERT and COMMIT go out together and
come back in one round trip. One transaction is in flight at a time; what the loop submits
meanwhile waits, and goes into the next one together (group commit).

A commit here is PostgreSQL's: with its default ``synchronous_commit = on`` it is on the
database server's disk (its WAL flushed) before it counts, so it survives a crash of the
game server, of the database server and a power loss of either; the database's own
replication and backups then decide the rest.

**Faults.** A transaction that fails because the connection broke (the database stopped,
restarted, or the connection was cut) or got no answer within ``timeout`` fails with
:class:`~server.store.StoreUnavailable`, and so does every transaction after it until the
store is connected again: :attr:`health` says ``unavailable`` and a task tries to connect
again, from :data:`RECONNECT_FIRST` seconds up to every :data:`RECONNECT_LAST`. A
transaction cut off while its COMMIT was on the way may have been applied all the same;
nothing of it was acknowledged. Other errors (a constraint, a table dropped) are raised
as psycopg reports them. A refused fence is :class:`~server.store.LeaseLost`.

**Tables.** The same as the SQLite journal's (see :mod:`server.journal` and
:mod:`server.tournament_store`), in the schema the connection's ``search_path`` names
(``?options=-csearch_path%3Dname`` in the URL picks one), created and migrated by the
store on first use under an advisory lock (its own ``schema_version``, now
:data:`SCHEMA_VERSION`). ``race_commands`` is keyed by race and sequence, so a race's
commands are read without reading the others'. ``foursquare_fence`` is the function the
first statement of every transaction calls: it locks the rows of the leases named
(``FOR SHARE``, so a takeover waits for the transaction) and raises SQLSTATE ``FSQ01``
when an epoch is not the row's.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import psycopg

from protocol.result import RaceResult
from server.daily_store import POSTGRES_SCHEMA as DAILY_SCHEMA
from server.journal import (
    PLAYER_BY_TOKEN_QUERY,
    PLAYERS_QUERY,
    CommandRecord,
    PlayerRecord,
    RaceOpened,
    Record,
    Recovered,
    Watching,
    command_to_json,
    player_from_row,
    recovered_from,
    resource_of,
    statements_of,
)
from server.journal_file import JournalRefused
from server.logs import failure, log_event
from server.player_store import POSTGRES_SCHEMA as PLAYER_SCHEMA
from server.player_store import Job, JobFactory
from server.store import (
    EVERY_RESOURCE,
    LONE_SERVER,
    Health,
    Lease,
    LeaseLost,
    LeaseRow,
    StoreBase,
    StoreError,
    StoreUnavailable,
    fences_of,
    shown,
)
from server.tournament_store import (
    EVENTS_QUERY,
    StoredTournament,
    TournamentCount,
    stored_tournament,
    tournaments_query,
)

#: The version of the tables :data:`_SCHEMA` creates (this store's own numbering): 2 added
#: ``players.claimed_by``, 3 ``tournaments.created_by``, 4 the daily deal's tables
#: (:mod:`server.daily_store`, created empty by :data:`DAILY_SCHEMA`), 5 ``seats`` and
#: ``names`` (a cluster's sessions: :mod:`server.seats`, :meth:`PostgresStore.claim_names`),
#: 6 ``seats.busy`` (a racer's row kept after its own game, until its race is over).
SCHEMA_VERSION = 6

#: Seconds before the first attempt to connect again after the database was lost...
RECONNECT_FIRST = 0.1
#: ...doubling after each failed attempt up to this.
RECONNECT_LAST = 2.0

#: The SQLSTATE ``foursquare_fence`` raises for a stale epoch.
STALE_EPOCH = "FSQ01"

#: "Now" in seconds since the Unix epoch, on the database's clock (the leases' clock).
_NOW = "extract(epoch FROM clock_timestamp())::float8"

#: Any number, the same in every server: the advisory lock held while the tables are
#: created or migrated, so that two servers starting together do not both do it.
_SCHEMA_LOCK = 0x466F_7572_5371

#: Another: the advisory lock every job that writes (:mod:`server.player_store`) holds
#: for its transaction, so that such jobs run one at a time across every node.
_JOBS_LOCK = 0x466F_7572_5372

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version integer NOT NULL);
CREATE TABLE IF NOT EXISTS players (
    player_id text PRIMARY KEY,
    token_hash bytea NOT NULL UNIQUE,
    name text NOT NULL,
    bot integer NOT NULL,
    created_at double precision NOT NULL,
    role text NOT NULL DEFAULT 'player',
    last_seen double precision,
    claimed_by text
);
CREATE TABLE IF NOT EXISTS races (
    race_id text PRIMARY KEY,
    code text,
    seed text NOT NULL,
    options text NOT NULL,
    tournament_id text,
    created_at double precision NOT NULL,
    finished_at double precision
);
CREATE INDEX IF NOT EXISTS races_unfinished ON races (created_at) WHERE finished_at IS NULL;
CREATE TABLE IF NOT EXISTS race_commands (
    race_id text NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    command text NOT NULL,
    at double precision NOT NULL,
    PRIMARY KEY (race_id, seq)
);
CREATE TABLE IF NOT EXISTS results (
    race_id text PRIMARY KEY,
    result text NOT NULL
);
CREATE TABLE IF NOT EXISTS watching (
    seq bigint GENERATED ALWAYS AS IDENTITY,
    player_id text NOT NULL,
    race_id text NOT NULL,
    UNIQUE (player_id, race_id)
);
CREATE TABLE IF NOT EXISTS leases (
    resource_id text PRIMARY KEY,
    owner text NOT NULL,
    epoch bigint NOT NULL,
    expires_at double precision
);
CREATE TABLE IF NOT EXISTS tournaments (
    tournament_id text PRIMARY KEY,
    code text NOT NULL UNIQUE,
    host_token_hash bytea NOT NULL,
    settings text NOT NULL,
    created_at double precision NOT NULL,
    status text NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    created_by text
);
CREATE INDEX IF NOT EXISTS tournaments_unfinished
    ON tournaments (created_at, seq) WHERE status <> 'finished';
CREATE TABLE IF NOT EXISTS tournament_events (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tournament_id text NOT NULL,
    event text NOT NULL,
    at double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS tournament_events_by_tournament
    ON tournament_events (tournament_id, seq);
CREATE TABLE IF NOT EXISTS tournament_entrants (
    tournament_id text NOT NULL,
    entrant_id text NOT NULL,
    name text NOT NULL,
    bot integer NOT NULL,
    state text NOT NULL,
    PRIMARY KEY (tournament_id, entrant_id)
);
CREATE TABLE IF NOT EXISTS tournament_rounds (
    tournament_id text NOT NULL,
    number integer NOT NULL,
    absent text NOT NULL,
    started_at double precision NOT NULL,
    PRIMARY KEY (tournament_id, number)
);
CREATE TABLE IF NOT EXISTS tournament_races (
    race_id text PRIMARY KEY,
    tournament_id text NOT NULL,
    round integer NOT NULL,
    seed text NOT NULL,
    entrants text NOT NULL,
    ordered_at double precision NOT NULL,
    result text
);
CREATE TABLE IF NOT EXISTS seats (
    player_id text PRIMARY KEY,
    race_id text NOT NULL,
    busy boolean NOT NULL DEFAULT true
);
CREATE TABLE IF NOT EXISTS names (
    look text PRIMARY KEY,
    player_id text NOT NULL,
    node text NOT NULL
);
CREATE INDEX IF NOT EXISTS names_by_player ON names (player_id);
CREATE OR REPLACE FUNCTION foursquare_fence(resources text[], epochs bigint[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    stale json;
BEGIN
    -- Held until the transaction ends: a takeover (an UPDATE of the row) waits for it.
    PERFORM 1 FROM leases WHERE resource_id = ANY(resources) ORDER BY resource_id FOR SHARE;
    SELECT json_agg(claim.resource) INTO stale
        FROM unnest(resources, epochs) AS claim(resource, epoch)
        WHERE NOT EXISTS (SELECT 1 FROM leases
                          WHERE resource_id = claim.resource AND epoch = claim.epoch);
    IF stale IS NOT NULL THEN
        RAISE EXCEPTION 'a lease has a newer epoch' USING ERRCODE = 'FSQ01', DETAIL = stale;
    END IF;
END $$;
"""

# Arrays go in binary (%b): as text each element would be escaped by a regular
# expression, which cost more than the rest of a move's transaction.
_FENCE = "SELECT foursquare_fence(%b::text[], %b::bigint[])"
_RUN = (
    "INSERT INTO race_commands (race_id, command, at)"
    " SELECT race_id, command, at FROM {fence}unnest(%b::text[], %b::text[], %b::float8[])"
    " WITH ORDINALITY AS run(race_id, command, at, n) ORDER BY n"
)
_INSERT_COMMANDS = _RUN.format(fence="")
#: Commands alone, fenced, in one statement (its own transaction): the fence's function
#: runs once, before any row is inserted, and its error refuses the whole statement.
_INSERT_FENCED_COMMANDS = (
    "WITH fence AS (" + _FENCE + ") " + _RUN.format(fence="fence, ")
)
#: Sessions that start watching races, as one statement (in their order; one already
#: watching its race is left as it is, as :func:`~server.journal.statements_of` does).
_INSERT_WATCHING = (
    "INSERT INTO watching (player_id, race_id)"
    " SELECT player_id, race_id FROM unnest(%b::text[], %b::text[])"
    " WITH ORDINALITY AS run(player_id, race_id, n) ORDER BY n ON CONFLICT DO NOTHING"
)
_INSERT_RACE = (
    "INSERT INTO races (race_id, code, seed, options, tournament_id, created_at)"
    " VALUES (%s, %s, %s, %s, %s, %s)"
)
_UNFINISHED = (
    "SELECT race_id, code, seed, options, tournament_id, created_at FROM races"
    " WHERE finished_at IS NULL ORDER BY created_at"
)
#: Whether ``tournaments`` has its ``created_by`` column: a command reads a database the
#: server has not brought up to version 3 yet without it.
_HAS_CREATOR = (
    "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema ="
    " current_schema() AND table_name = 'tournaments' AND column_name = 'created_by')"
)
#: The unfinished races among some (a node taking them over reads them).
_UNFINISHED_OF = (
    "SELECT race_id, code, seed, options, tournament_id, created_at FROM races"
    " WHERE finished_at IS NULL AND race_id = ANY(%s) ORDER BY created_at"
)
_WATCHING_OF = "SELECT player_id, race_id FROM watching WHERE race_id = ANY(%s) ORDER BY seq"
#: The leases of unfinished races (what a node of a cluster may take over once lapsed).
#: A tournament's race has a lease of its own only once its round is placed on a node
#: (:meth:`PostgresStore.place_races`); until then it is written under its tournament's
#: lease and comes with its tournament ...
_RACE_LEASES = (
    "races r JOIN leases l ON l.resource_id = r.race_id WHERE r.finished_at IS NULL"
)
#: ... and of unfinished tournaments.
_TOURNAMENT_LEASES = (
    "tournaments t JOIN leases l ON l.resource_id = t.tournament_id"
    " WHERE t.status <> 'finished'"
)
#: Unfinished races whose lease has lapsed: any node may take them. "Now" is read once
#: (a subquery), so the leases that expire together (a placed round's, renewed together)
#: are seen lapsed together: a round's races are never split between two nodes.
_LAPSED_RACES = (
    "SELECT r.race_id, l.expires_at FROM " + _RACE_LEASES + " AND l.expires_at <= (SELECT {now})"
    " ORDER BY r.created_at"
)
#: Unfinished tournaments whose lease has lapsed.
_LAPSED_TOURNAMENTS = (
    "SELECT t.tournament_id, l.expires_at FROM " + _TOURNAMENT_LEASES
    + " AND l.expires_at <= {now} ORDER BY t.created_at"
)
#: Seconds until the first of the leases a node may take over (those above, and the
#: lobby's) that another node holds can lapse, on the database's clock (NULL: none can):
#: when that node looks for lapsed leases next.
_NEXT_LAPSE = (
    "SELECT min(held.expires_at) - {now} FROM ("
    "SELECT l.expires_at, l.owner FROM " + _RACE_LEASES
    + " UNION ALL SELECT l.expires_at, l.owner FROM " + _TOURNAMENT_LEASES
    + " UNION ALL SELECT expires_at, owner FROM leases WHERE resource_id = %s"
    ") AS held WHERE held.owner <> %s AND held.expires_at > {now}"
)
#: The unfinished races of some tournaments, each with whether it was placed (it has a
#: lease of its own, and runs where that lease is held); the node taking a tournament over
#: takes the others with it.
_TOURNAMENT_RACES = (
    "SELECT race_id, tournament_id,"
    " EXISTS (SELECT 1 FROM leases l WHERE l.resource_id = races.race_id)"
    " FROM races WHERE finished_at IS NULL AND tournament_id = ANY(%s)"
    " ORDER BY created_at"
)
#: A tournament's races placed on node ``owner``: their leases made for it, all with one
#: expiry, in one statement fenced by the tournament's lease (a node that lost its
#: tournament places none of its races: their new owner runs them with the tournament).
_PLACE_RACES = (
    "WITH fence AS (" + _FENCE + ")"
    " INSERT INTO leases (resource_id, owner, epoch, expires_at)"
    " SELECT placed, %s, 1, (SELECT {now}) + %s FROM fence, unnest(%s::text[]) AS placed"
    " RETURNING resource_id"
)
#: The races each live node runs: every node holding a lease now (each holds race ids
#: leased ahead, so an idle node counts, with none), with its unfinished races.
_NODE_LOADS = (
    "SELECT l.owner, count(r.race_id) FROM leases l LEFT JOIN races r ON r.race_id ="
    " l.resource_id AND r.finished_at IS NULL WHERE l.expires_at > {now} GROUP BY l.owner"
)
_READ_LEASES = (
    "SELECT resource_id, owner, epoch, expires_at FROM leases WHERE resource_id = ANY(%s)"
)
_LEASE_FRESH = (
    "INSERT INTO leases (resource_id, owner, epoch, expires_at)"
    " SELECT fresh, %s, 1, {now} + %s FROM unnest(%s::text[]) AS fresh"
    " ON CONFLICT (resource_id) DO NOTHING RETURNING resource_id, owner, epoch, expires_at"
)
#: The rows are locked in the order of their ids first, the order ``foursquare_fence``
#: locks them in: rows locked in another order could deadlock with a write transaction
#: (each holding a row the other waits for) until the database broke the tie. "Now" is
#: read once (a subquery), so the leases renewed together lapse together: a node that
#: wakes at the first one's expiry finds them all lapsed, and takes them in one turn.
_RENEW_LEASES = (
    "WITH locked AS (SELECT resource_id FROM leases WHERE resource_id = ANY(%s)"
    " ORDER BY resource_id FOR NO KEY UPDATE)"
    " UPDATE leases SET expires_at = (SELECT {now}) + %s FROM unnest(%s::text[], %s::bigint[])"
    " AS held(resource, epoch) WHERE leases.resource_id = held.resource AND leases.epoch ="
    " held.epoch AND leases.resource_id IN (SELECT resource_id FROM locked)"
    " RETURNING leases.resource_id, owner, leases.epoch, expires_at"
)
#: Leases let go at once, in one statement (their rows locked in the order of their ids,
#: as :data:`_RENEW_LEASES` does), all expiring at one "now": leases that lapsed together
#: are taken over together (a placed round's races are never split between two nodes).
_RELEASE_LEASES = (
    "WITH locked AS (SELECT resource_id FROM leases WHERE resource_id = ANY(%s)"
    " ORDER BY resource_id FOR NO KEY UPDATE)"
    " UPDATE leases SET expires_at = (SELECT {now}) FROM unnest(%s::text[], %s::bigint[])"
    " AS held(resource, epoch) WHERE leases.resource_id = held.resource AND leases.epoch ="
    " held.epoch AND leases.resource_id IN (SELECT resource_id FROM locked)"
)
#: Lapsed leases (or ``owner``'s own), taken for ``owner`` in one statement, each at its
#: next epoch: the same rule as :data:`server.store.ACQUIRE_LEASE` for many rows, their
#: rows locked in the order of their ids first as :data:`_RENEW_LEASES` does. A row
#: another node took since it was read is seen under its lock as it is now (renewed, so
#: no longer lapsed) and left out: of two nodes taking one lease, one alone has it. Those
#: taken expire together, as renewed ones do ("now" read once: leases that expire
#: together are all lapsed, or none).
_ACQUIRE_LAPSED = (
    "WITH locked AS (SELECT resource_id FROM leases WHERE resource_id = ANY(%s)"
    " ORDER BY resource_id FOR NO KEY UPDATE)"
    " UPDATE leases SET owner = %s, epoch = leases.epoch + 1,"
    " expires_at = (SELECT {now}) + %s"
    " WHERE leases.resource_id IN (SELECT resource_id FROM locked)"
    " AND (leases.owner = %s OR leases.expires_at <= (SELECT {now}))"
    " RETURNING leases.resource_id, owner, leases.epoch, expires_at"
)
#: The race each session raced in last (:mod:`server.seats`), if it is not over...
_SEATS_OF = (
    "SELECT s.player_id, s.race_id FROM seats s JOIN races r ON r.race_id = s.race_id"
    " WHERE s.player_id = ANY(%s) AND r.finished_at IS NULL"
)
#: ... and if it ties the session still (its own game not over).
_BUSY_SEATS_OF = _SEATS_OF + " AND s.busy"
#: Against the caps on tournaments, leaving out some join codes (a node's, in its
#: memory): those not finished, and those a session created not finished or finished
#: (its last event, the finish) after a time.
_TOURNAMENT_COUNT = (
    "SELECT count(*) FILTER (WHERE t.status <> 'finished'),"
    " count(*) FILTER (WHERE t.created_by = %(session)s AND (t.status <> 'finished'"
    " OR (SELECT max(e.at) FROM tournament_events e"
    " WHERE e.tournament_id = t.tournament_id) > %(since)s))"
    " FROM tournaments t WHERE (t.status <> 'finished' OR t.created_by = %(session)s)"
    " AND t.code <> ALL(%(here)s::text[])"
)
#: The tournaments by creator, which :data:`_TOURNAMENT_COUNT` reads.
_CREATOR_INDEX = "CREATE INDEX IF NOT EXISTS tournaments_by_creator ON tournaments (created_by)"
#: Of some sessions, those entered (and not removed) in a tournament that is not over.
_ENTERED = (
    "SELECT e.entrant_id FROM tournament_entrants e JOIN tournaments t"
    " ON t.tournament_id = e.tournament_id WHERE e.entrant_id = ANY(%s)"
    " AND e.state <> 'removed' AND t.status <> 'finished'"
)
#: A session's name's look-alike keys, each taken for it on a node unless another
#: session holds it on a node that lives (one holding a lease not lapsed): the keys taken.
_CLAIM_NAMES = (
    "INSERT INTO names (look, player_id, node) SELECT look, %s, %s FROM unnest(%s::text[])"
    " AS look ON CONFLICT (look) DO UPDATE SET player_id = excluded.player_id,"
    " node = excluded.node WHERE names.player_id = excluded.player_id"
    " OR NOT EXISTS (SELECT 1 FROM leases"
    " WHERE leases.owner = names.node AND leases.expires_at > {now}) RETURNING look"
)
_RELEASE_NAMES = "DELETE FROM names WHERE player_id = %s AND node = %s"
_NAME_HOLDERS = "SELECT DISTINCT player_id, node FROM names WHERE look = ANY(%s)"
_COMMANDS_OF = (
    "SELECT race_id, command, at FROM race_commands WHERE race_id = ANY(%s) ORDER BY race_id, seq"
)

Connection = psycopg.AsyncConnection[tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class Lapsed:
    """What a node of a cluster may take over now, and when it should look again."""

    races: list[str]
    """Unfinished races with a lease of their own that has lapsed, oldest first."""
    tournaments: list[str]
    """Unfinished tournaments whose lease has lapsed, oldest first."""
    lapsed_at: float | None
    """When the last of those leases lapsed (seconds since the Unix epoch, on the
    database's clock); ``None`` if none has."""
    next_in: float | None
    """Seconds until the next of the leases above or the lobby's, held by another node
    and not lapsed yet, can lapse (``None``: none can)."""


@dataclass(slots=True)
class _Group:
    """Records of the same races and tournaments submitted in one loop iteration, and the
    future they share."""

    records: list[Record]
    done: concurrent.futures.Future[None]

T = TypeVar("T")

_PLACEHOLDERS: dict[str, str] = {}


def _sql(statement: str) -> str:
    """A statement written for both stores (``?``) in psycopg's placeholders (``%s``)."""
    converted = _PLACEHOLDERS.get(statement)
    if converted is None:
        converted = _PLACEHOLDERS[statement] = statement.replace("?", "%s")
    return converted


async def _connect(url: str, timeout: float) -> Connection:
    """A connection in autocommit mode (transactions are opened explicitly)."""
    async with asyncio.timeout(timeout):
        return await psycopg.AsyncConnection.connect(
            url, autocommit=True, connect_timeout=max(2, round(timeout))
        )


def _reason(error: BaseException) -> str:
    """The first line of a driver's error, for a sentence."""
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


class PostgresStore(StoreBase):
    """The :class:`~server.store.Store` in PostgreSQL (open it with :meth:`open`)."""

    stores = True

    def __init__(self, url: str, connection: Connection, *, timeout: float) -> None:
        super().__init__()
        self.url = url
        self._timeout = timeout
        self._connection: Connection | None = connection
        """The writer's connection; ``None`` while the database cannot be reached."""
        self._reader: Connection | None = None
        """Reads, never inside the writer's pipeline."""
        self._reading = asyncio.Lock()
        self._leasing: Connection | None = None
        """A cluster's lease statements and its look for lapsed leases, on a connection of
        their own: never queued behind the reads that sessions make (a failover's resumes
        read hundreds of players at once), which would delay a node's renewals past its
        leases' expiry, and its takeovers."""
        self._lease_lock = asyncio.Lock()
        self._players_asked: dict[bytes, list[asyncio.Future[PlayerRecord | None]]] = {}
        """Players asked for by resume token digest, to read in the next read of them."""
        self._reading_players: asyncio.Task[None] | None = None
        self._jobs: Connection | None = None
        """Jobs that write (:meth:`run`), one at a time."""
        self._running_job = asyncio.Lock()
        self._loop = asyncio.get_running_loop()
        self._gathering: dict[frozenset[str], _Group] = {}
        """This iteration's records, by the races and tournaments they write."""
        self._handed: list[_Group] = []
        """Iterations' records handed to the writer and not yet in a transaction."""
        self._wake = asyncio.Event()
        self._closed = False
        self._health = Health.AVAILABLE
        self._back = asyncio.Event()
        self._back.set()
        self._reconnecting: asyncio.Task[None] | None = None
        self.batches_committed = 0
        self.records_committed = 0
        self._writer = self._loop.create_task(self._write_handed(), name="store-writer")

    @classmethod
    async def open(
        cls, url: str, *, timeout: float = 5.0, lease_everything: bool = True,
        for_writing: bool = True,
    ) -> PostgresStore:
        """Connect to the database at ``url``; create or migrate its tables and take the
        lease of every resource (``lease_everything``, as a lone server does). Read-only
        (``for_writing=False``: the commands) it creates nothing and refuses a database
        without the tables. Raises :class:`~server.journal_file.JournalRefused`."""
        try:
            connection = await _connect(url, timeout)
        except (psycopg.Error, TimeoutError) as error:
            raise _refusal(url, f"cannot be reached ({_reason(error)})") from None
        try:
            if for_writing:
                await _prepare(url, connection)
            else:
                await _check(url, connection)
            store = cls(url, connection, timeout=timeout)
        except BaseException:
            await connection.close()
            raise
        if for_writing and lease_everything:
            try:
                await store.acquire_lease(EVERY_RESOURCE, LONE_SERVER, None)
            except StoreError as error:
                await store.aclose()
                raise _refusal(url, f"cannot be leased ({error})") from None
            except BaseException:
                await store.aclose()
                raise
        return store

    # ------------------------------------------------------------- state

    @property
    def where(self) -> str:
        """The URL without its password."""
        return shown(self.url)

    @property
    def health(self) -> Health:
        """``unavailable`` from a lost connection until the store has connected again."""
        return self._health

    async def available(self) -> None:
        """Return once the store is connected (at once if it is)."""
        await self._back.wait()

    # ------------------------------------------------------------- writing

    def submit(self, *records: Record) -> concurrent.futures.Future[None]:
        """Queue ``records`` for the transaction of this loop iteration (call it from the
        event loop); the future, shared with the records this iteration submits for the
        same races and tournaments, resolves once they are committed. A transaction one
        of whose leases was taken over is written again without the records of that
        lease, whose futures alone are refused (:class:`LeaseLost`)."""
        if self._closed:
            raise RuntimeError("the store is closed")
        if not self._gathering:
            self._loop.call_soon(self._hand_over)  # at the end of this iteration
        key = frozenset(
            resource for record in records if (resource := resource_of(record)) is not None
        )
        group = self._gathering.get(key)
        if group is None:
            group = self._gathering[key] = _Group([], concurrent.futures.Future())
        group.records.extend(records)
        return group.done

    def _hand_over(self) -> None:
        if not self._gathering:
            return
        self._handed.extend(self._gathering.values())
        self._gathering = {}
        self._wake.set()

    async def _write_handed(self) -> None:
        """The writer: one transaction at a time, holding everything handed over while the
        last one was on its way."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._handed:
                handed, self._handed = self._handed, []
                while handed:
                    records = [record for group in handed for record in group.records]
                    try:
                        error = await self._commit(records)
                    except Exception as failure:  # a dead writer would leave every move waiting
                        error = failure
                    refused = self._refused_groups(handed, error)
                    for group in refused:
                        self._settle(group.done, error)
                    handed = [group for group in handed if group not in refused]
            if self._closed:
                return

    def _refused_groups(self, handed: list[_Group], error: Exception | None) -> list[_Group]:
        """The groups a transaction's outcome settles: all of them, unless it was refused
        for leases some groups alone depend on (the others are written again)."""
        if not isinstance(error, LeaseLost):
            return handed
        stale = set(error.resources)
        if EVERY_RESOURCE in stale:
            return handed  # a lone server's lease covers every record
        refused = []
        for group in handed:
            try:
                fences = fences_of(group.records, self._held)
            except LeaseLost:
                refused.append(group)  # a lease found lost: let go already
                continue
            if stale & set(fences):
                refused.append(group)
        return refused or handed

    async def _commit(self, records: list[Record]) -> Exception | None:
        """Write ``records`` in one transaction; what refused it, if anything."""
        connection = self._connection
        if connection is None:
            return self._unavailable("it was lost and has not come back yet")
        try:
            fences = fences_of(records, self._held)
        except LeaseLost as unheld:
            return unheld
        try:
            async with asyncio.timeout(self._timeout):
                await _write_transaction(connection, records, fences)
        except psycopg.Error as error:
            if error.sqlstate == STALE_EPOCH:
                lost = LeaseLost(json.loads(error.diag.message_detail or "[]"))
                self._let_go(lost.resources)
                return lost
            if connection.broken or connection.closed:
                return self._lose(connection, _reason(error))
            return error
        except TimeoutError:
            return self._lose(connection, f"no answer within {self._timeout:g} s")
        self.batches_committed += 1
        self.records_committed += len(records)
        return None

    def _lose(self, connection: Connection, reason: str) -> StoreUnavailable:
        """The writer's connection is gone (or in a state nobody knows): close it, count
        the store unavailable, and start connecting again."""
        if self._connection is connection:
            self._connection = None
            self._health = Health.UNAVAILABLE
            self._back.clear()
            log_event("store_unavailable", logging.ERROR, store=self.where, error=reason)
            self._loop.create_task(connection.close())
            if self._reconnecting is None or self._reconnecting.done():
                self._reconnecting = self._loop.create_task(self._reconnect())
        return self._unavailable(reason)

    def _unavailable(self, reason: str) -> StoreUnavailable:
        return StoreUnavailable(
            f"the database {self.where} cannot be reached ({reason}), so nothing of this "
            "transaction is acknowledged"
        )

    async def _reconnect(self) -> None:
        delay = RECONNECT_FIRST
        while not self._closed:
            await asyncio.sleep(delay)
            try:
                connection = await _connect(self.url, self._timeout)
            except (psycopg.Error, TimeoutError):
                delay = min(delay * 2, RECONNECT_LAST)
                continue
            self._connection = connection
            self._health = Health.AVAILABLE
            self._back.set()
            log_event("store_available", store=self.where)
            return

    async def aclose(self) -> None:
        """Commit what is queued, stop the writer, close the connections."""
        if self._closed:
            return
        self._hand_over()
        self._closed = True
        self._wake.set()
        await self._writer
        if self._reconnecting is not None:
            self._reconnecting.cancel()
        for connection in (self._connection, self._reader, self._leasing, self._jobs):
            if connection is not None:
                await connection.close()
        self._connection = self._reader = self._leasing = self._jobs = None

    # ------------------------------------------------------------- reading

    async def _on_reader(self, read: Callable[[Connection], Awaitable[T]]) -> T:
        """Run ``read`` on the reader's connection (connected again if it was lost), in a
        read-only transaction that sees one snapshot. Driver errors propagate."""
        async with self._reading, asyncio.timeout(self._timeout):
            if self._reader is None or self._reader.closed or self._reader.broken:
                self._reader = await _connect(self.url, self._timeout)
            async with self._reader.transaction():
                await self._reader.execute(
                    "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY"
                )
                return await read(self._reader)

    async def _read(self, read: Callable[[Connection], Awaitable[T]]) -> T:
        """:meth:`_on_reader`, once more on a new connection if the reader's was found cut
        (reading twice is harmless), its failures as :class:`JournalRefused` (like the
        SQLite journal's reads)."""
        for attempt in (1, 2):
            try:
                return await self._on_reader(read)
            except (psycopg.Error, TimeoutError) as error:
                cut = self._reader is not None and self._reader.broken
                if attempt == 1 and cut:
                    continue
                raise _refusal(self.url, f"cannot be read now ({_reason(error)})") from None
        raise AssertionError("unreachable")

    async def recover(self) -> Recovered:
        """Every player, every unfinished race and what players watch."""

        async def read(connection: Connection) -> Recovered:
            players = await _rows(connection, PLAYERS_QUERY)
            unfinished = await _rows(connection, _UNFINISHED)
            race_ids = [row[0] for row in unfinished]
            commands = await _rows(connection, _COMMANDS_OF, (race_ids,)) if race_ids else []
            watching = await _rows(connection, "SELECT player_id, race_id FROM watching"
                                               " ORDER BY seq")
            try:
                return recovered_from(players, unfinished, commands, watching)
            except (ValueError, KeyError, TypeError) as error:
                # Its type and place, not its message: a record holds what clients sent.
                raise _refusal(
                    self.url, f"holds a record that cannot be read ({failure(error)})"
                ) from None

        return await self._read(read)

    # ------------------------------------------------- a cluster's leases

    async def read_races(self, race_ids: Collection[str]) -> Recovered:
        """Those of ``race_ids`` that are unfinished, with their commands and who watches
        them (no players): what a node reads to take races over (on the reader's
        connection: a read of many races must not hold up the renewals)."""

        async def read(connection: Connection) -> Recovered:
            ids = list(race_ids)
            unfinished = await _rows(connection, _UNFINISHED_OF, (ids,))
            commands = await _rows(connection, _COMMANDS_OF, (ids,)) if unfinished else []
            watching = await _rows(connection, _WATCHING_OF, (ids,))
            try:
                return recovered_from((), unfinished, commands, watching)
            except (ValueError, KeyError, TypeError) as error:
                raise _refusal(
                    self.url, f"holds a record that cannot be read ({failure(error)})"
                ) from None

        return await self._read(read)

    async def lapsed(self, owner: str, lobby: str) -> Lapsed:
        """The unfinished races (a tournament's once placed) and the unfinished
        tournaments whose lease has lapsed, oldest first (what a node of a cluster may
        take over), and when the next of those and ``lobby``'s that a node other than
        ``owner`` holds can lapse."""

        async def read(connection: Connection) -> Lapsed:
            races = await _rows(connection, _LAPSED_RACES.format(now=_NOW))
            tournaments = await _rows(connection, _LAPSED_TOURNAMENTS.format(now=_NOW))
            ((after,),) = await _rows(connection, _NEXT_LAPSE.format(now=_NOW), (lobby, owner))
            return Lapsed(
                races=[row[0] for row in races],
                tournaments=[row[0] for row in tournaments],
                lapsed_at=max((row[1] for row in [*races, *tournaments]), default=None),
                next_in=after,
            )

        return await self._on_lease_connection(read)

    async def races_of(self, tournament_ids: Collection[str]) -> list[tuple[str, str, bool]]:
        """The unfinished races of these tournaments, oldest first, each with its
        tournament and whether it was placed (:meth:`place_races`: it has a lease of its
        own, and runs wherever that lease is held)."""
        if not tournament_ids:
            return []

        async def read(connection: Connection) -> list[tuple[str, str, bool]]:
            rows = await _rows(connection, _TOURNAMENT_RACES, (list(tournament_ids),))
            return [(row[0], row[1], bool(row[2])) for row in rows]

        return await self._read(read)

    async def place_races(
        self, race_ids: Collection[str], tournament: Lease, owner: str, ttl: float
    ) -> None:
        """Give these races of ``tournament`` (written under its lease so far) leases of
        their own, held by node ``owner`` for ``ttl`` seconds, all expiring together, in
        one statement fenced by ``tournament``'s lease: :class:`LeaseLost` if that lease
        was taken over (nothing is leased then). Each race id must never have had a lease;
        :class:`StoreError` otherwise, with nothing leased."""
        ids = sorted(race_ids)
        parameters = (*_fence_arrays({tournament.resource_id: tournament.epoch}), owner, ttl, ids)

        async def run(connection: Connection) -> list[tuple[Any, ...]] | None:
            try:
                return await _rows(connection, _PLACE_RACES.format(now=_NOW), parameters)
            except psycopg.Error as error:
                if error.sqlstate == STALE_EPOCH:  # (raised as an OperationalError)
                    return None
                raise

        try:
            rows = await self._on_lease_connection(run)
        except psycopg.Error as error:  # (not a lost connection: StoreUnavailable)
            raise StoreError(f"the races could not be placed: {_reason(error)}") from None
        if rows is None:
            raise LeaseLost((tournament.resource_id,))
        if len(rows) != len(ids):
            raise StoreError(f"only {len(rows)} of {len(ids)} races were placed")

    async def node_loads(self) -> dict[str, int]:
        """The nodes of the cluster alive now (holding a lease that has not lapsed), each
        with the number of unfinished races whose lease it holds: where the lobby places
        a race (:func:`~server.lobby.least_loaded`)."""

        async def read(connection: Connection) -> dict[str, int]:
            rows = await _rows(connection, _NODE_LOADS.format(now=_NOW))
            return {str(row[0]): int(row[1]) for row in rows}

        return await self._read(read)

    async def seat_of(self, player_id: str) -> str | None:
        """The race session ``player_id`` is tied to (:mod:`server.seats`), if any and not
        over. Raises :class:`JournalRefused` if the store cannot be read now."""

        async def read(connection: Connection) -> str | None:
            rows = await _rows(connection, _BUSY_SEATS_OF, ([player_id],))
            return str(rows[0][1]) if rows else None

        return await self._read(read)

    async def held(self, player_ids: Collection[str]) -> set[str]:
        """Those of ``player_ids`` that race in a race not over (on any node: the race
        each raced in last, its own game over or not), or that are entered in a
        tournament not over: sessions the expiry keeps. Raises
        :class:`JournalRefused` if the store cannot be read now."""
        ids = list(player_ids)

        async def read(connection: Connection) -> set[str]:
            seated = await _rows(connection, _SEATS_OF, (ids,))
            entered = await _rows(connection, _ENTERED, (ids,))
            return {str(row[0]) for row in seated} | {str(row[0]) for row in entered}

        return await self._read(read)

    async def count_tournaments(
        self, session_id: str, since: float, here: Collection[str]
    ) -> TournamentCount:
        """The tournaments against the caps (those of the join codes ``here`` left out):
        those not finished, and those ``session_id`` created, not finished or finished
        after ``since``. Raises :class:`JournalRefused` if the store cannot be read now."""
        parameters = {"session": session_id, "since": since, "here": list(here)}

        async def read(connection: Connection) -> TournamentCount:
            rows = await _rows(connection, _TOURNAMENT_COUNT, parameters)
            unfinished, created = rows[0]
            return TournamentCount(int(unfinished), int(created))

        return await self._read(read)

    async def claim_names(
        self, player_id: str, node: str, looks: Collection[str], *, all_or_none: bool
    ) -> bool:
        """Take the look-alike keys ``looks`` of session ``player_id``'s name for it,
        connected to ``node``: each is free, or held by this session, or by one on a
        node that no longer lives (its leases lapsed). With
        ``all_or_none`` nothing is taken unless every key is. Whether every key was
        taken. Raises :class:`StoreUnavailable` if the store cannot be written."""
        keys = sorted(looks)  # (rows locked in one order: two claims never deadlock)

        async def run(connection: Connection) -> bool:
            taken = False
            async with connection.transaction() as transaction:
                rows = await _rows(
                    connection, _CLAIM_NAMES.format(now=_NOW), (player_id, node, keys)
                )
                taken = len(rows) == len(keys)
                if all_or_none and not taken:
                    raise psycopg.Rollback(transaction)  # (leaves the block, and nothing taken)
            return taken

        return await self._on_jobs_connection(run)

    async def name_holders(self, looks: Collection[str]) -> set[tuple[str, str]]:
        """The sessions holding any of ``looks``, each with its node. Raises
        :class:`StoreUnavailable` if the store cannot be read."""

        async def run(connection: Connection) -> set[tuple[str, str]]:
            rows = await _rows(connection, _NAME_HOLDERS, (list(looks),))
            return {(str(row[0]), str(row[1])) for row in rows}

        return await self._on_jobs_connection(run)

    async def release_names(self, player_id: str, node: str) -> None:
        """Session ``player_id``'s name is no longer held for it on ``node`` (its
        connection there is gone). Raises :class:`StoreUnavailable` if the store cannot
        be written (the keys are then free once ``node`` is gone)."""

        async def run(connection: Connection) -> None:
            await connection.execute(_RELEASE_NAMES, (player_id, node))

        await self._on_jobs_connection(run)

    async def _on_jobs_connection(self, run: Callable[[Connection], Awaitable[T]]) -> T:
        """``run`` on the jobs' connection (each statement its own transaction unless it
        opens one); a database that cannot be reached is :class:`StoreUnavailable`."""
        try:
            async with self._running_job, asyncio.timeout(self._timeout):
                if self._jobs is None or self._jobs.closed or self._jobs.broken:
                    self._jobs = await _connect(self.url, self._timeout)
                return await run(self._jobs)
        except (psycopg.OperationalError, TimeoutError) as error:
            raise self._unavailable(_reason(error)) from None

    async def read_leases(self, resource_ids: Collection[str]) -> dict[str, Lease]:
        """The leases of those of ``resource_ids`` that have one, as the database holds
        them now (where a node of a cluster sends a race's commands)."""

        async def read(connection: Connection) -> dict[str, Lease]:
            rows = await _rows(connection, _READ_LEASES, (list(resource_ids),))
            return {row[0]: Lease(*row) for row in rows}

        return await self._read(read)

    async def lease_fresh(
        self, resource_ids: Collection[str], owner: str, ttl: float
    ) -> list[Lease]:
        """Take the leases of those of ``resource_ids`` that have never had one (new race
        ids, leased ahead), in one statement; the leases taken (an id taken before, by
        any node, is left out)."""
        if not resource_ids:
            return []
        ids = list(resource_ids)

        async def run(connection: Connection) -> list[tuple[Any, ...]]:
            return await _rows(connection, _LEASE_FRESH.format(now=_NOW), (owner, ttl, ids))

        rows = await self._on_lease_connection(run)
        taken = [Lease(*row) for row in rows]
        with self._held_lock:
            self._held = {**self._held, **{lease.resource_id: lease for lease in taken}}
        return taken

    async def acquire_lapsed(
        self, resource_ids: Collection[str], owner: str, ttl: float
    ) -> list[Lease]:
        """Take for ``owner`` those of ``resource_ids``' leases that have lapsed (or are
        ``owner``'s), in one statement, each at its next epoch: what a node of a cluster
        takes over (those another node took first are left out)."""
        if not resource_ids:
            return []
        ids = sorted(resource_ids)

        async def run(connection: Connection) -> list[tuple[Any, ...]]:
            return await _rows(
                connection, _ACQUIRE_LAPSED.format(now=_NOW), (ids, owner, ttl, owner)
            )

        rows = await self._on_lease_connection(run)
        taken = [Lease(*row) for row in rows]
        with self._held_lock:
            self._held = {**self._held, **{lease.resource_id: lease for lease in taken}}
        return taken

    async def _on_lease_connection(self, run: Callable[[Connection], Awaitable[T]]) -> T:
        """``run`` statements (each its own transaction) on the connection of leases; a
        database that cannot be reached is :class:`StoreUnavailable`."""
        try:
            async with self._lease_lock, asyncio.timeout(self._timeout):
                if self._leasing is None or self._leasing.closed or self._leasing.broken:
                    self._leasing = await _connect(self.url, self._timeout)
                return await run(self._leasing)
        except (psycopg.OperationalError, TimeoutError) as error:
            raise self._unavailable(_reason(error)) from None

    async def renew_leases(self, leases: Collection[Lease], ttl: float) -> list[Lease]:
        """Extend every one of ``leases`` still at its epoch, in one statement; the
        renewed ones (those missing were taken over, and are no longer held)."""
        if not leases:
            return []
        ids = [lease.resource_id for lease in leases]
        epochs = [lease.epoch for lease in leases]

        async def run(connection: Connection) -> list[tuple[Any, ...]]:
            return await _rows(
                connection, _RENEW_LEASES.format(now=_NOW), (ids, ttl, ids, epochs)
            )

        rows = await self._on_lease_connection(run)
        renewed = [Lease(*row) for row in rows]
        lost = set(ids) - {lease.resource_id for lease in renewed}
        with self._held_lock:  # one new mapping, however many leases
            self._held = {
                **{r: held for r, held in self._held.items() if r not in lost},
                **{lease.resource_id: lease for lease in renewed},
            }
        return renewed

    async def release_leases(self, leases: Collection[Lease]) -> None:
        """Let every one of ``leases`` still at its epoch expire now, in one statement
        (see :meth:`release_lease`), all at the same moment."""
        if not leases:
            return
        ids = [lease.resource_id for lease in leases]
        epochs = [lease.epoch for lease in leases]
        self._let_go(ids)

        async def run(connection: Connection) -> None:
            await connection.execute(_RELEASE_LEASES.format(now=_NOW), (ids, ids, epochs))

        await self._on_lease_connection(run)

    def cover(self, resource_id: str, lease: Lease) -> None:
        """Fence the writes of ``resource_id`` with ``lease``, another resource's (a
        cluster's tournaments and their races are written under the lobby's lease)."""
        with self._held_lock:
            self._held = {**self._held, resource_id: lease}

    def let_go(self, resource_ids: Collection[str]) -> None:
        """Fence nothing more for ``resource_ids``: a write of theirs is refused with
        :class:`LeaseLost` here, before it reaches the database."""
        self._let_go(resource_ids)

    async def read_results(self, race_ids: Collection[str]) -> dict[str, RaceResult]:
        """The stored results of those of ``race_ids`` that have one."""
        if not race_ids:
            return {}

        async def read(connection: Connection) -> dict[str, RaceResult]:
            rows = await _rows(
                connection,
                "SELECT race_id, result FROM results WHERE race_id = ANY(%s) ORDER BY race_id",
                (list(race_ids),),
            )
            return {race_id: RaceResult.from_json(text) for race_id, text in rows}

        return await self._read(read)

    async def stored_race_ids(self, race_ids: Collection[str]) -> set[str]:
        """Those of ``race_ids`` that a stored race has (over and forgotten, or not)."""
        if not race_ids:
            return set()

        async def read(connection: Connection) -> set[str]:
            rows = await _rows(
                connection, "SELECT race_id FROM races WHERE race_id = ANY(%s)", (list(race_ids),)
            )
            return {race_id for (race_id,) in rows}

        return await self._read(read)

    async def read_player(self, token_hash: bytes) -> PlayerRecord | None:
        """The stored player whose resume token has digest ``token_hash``. Those asked for
        while a read of them is under way are read together in the next, one statement:
        after a failover hundreds of clients resume at once on a node that has never seen
        them, and a read each, in turn on the reader's connection, took tens of
        milliseconds each on a busy machine."""
        asked = self._loop.create_future()
        self._players_asked.setdefault(token_hash, []).append(asked)
        if self._reading_players is None or self._reading_players.done():
            self._reading_players = self._loop.create_task(self._read_players())
        found: PlayerRecord | None = await asked
        return found

    async def _read_players(self) -> None:
        """Read the players asked for, all at once, until none is."""
        query = _sql(PLAYER_BY_TOKEN_QUERY.replace("token_hash = ?", "token_hash = ANY(?)"))
        while self._players_asked:
            asked, self._players_asked = self._players_asked, {}
            digests = list(asked)

            async def read(
                connection: Connection, digests: list[bytes] = digests
            ) -> dict[bytes, PlayerRecord]:
                rows = await _rows(connection, query, (digests,))
                return {player.token_hash: player for player in map(player_from_row, rows)}

            try:
                found = await self._read(read)
            except Exception as error:  # (JournalRefused) each caller is refused alike
                for futures in asked.values():
                    for future in futures:
                        if not future.done():
                            future.set_exception(error)
                continue
            for digest, futures in asked.items():
                for future in futures:
                    if not future.done():  # (its hello was given up meanwhile)
                        future.set_result(found.get(digest))

    async def read_tournaments(
        self, code: str | None = None, *, include_finished: bool = True
    ) -> list[StoredTournament]:
        """Every stored tournament, oldest first (only the one with ``code`` if given; not
        the finished ones unless ``include_finished``)."""

        async def read(connection: Connection) -> list[StoredTournament]:
            (creator,) = (await _rows(connection, _HAS_CREATOR))[0]
            query = tournaments_query(
                code=bool(code), include_finished=include_finished, has_creator=creator
            )
            rows = await _rows(
                connection, _sql(query) + " ORDER BY created_at, seq", (code,) if code else ()
            )
            return [
                stored_tournament(row, await _rows(connection, _sql(EVENTS_QUERY), (row[0],)))
                for row in rows
            ]

        return await self._read(read)

    async def run(self, job: JobFactory, *, writes: bool) -> Any:
        """See :meth:`server.store.Store.run`: a reading job on the reader's connection
        (one snapshot), a writing one on a connection of its own under the jobs' advisory
        lock. A database that cannot be reached is :class:`StoreUnavailable`."""
        if not writes:
            return await self._read(lambda connection: _drive(connection, job()))
        try:
            async with self._running_job, asyncio.timeout(self._timeout):
                if self._jobs is None or self._jobs.closed or self._jobs.broken:
                    self._jobs = await _connect(self.url, self._timeout)
                async with self._jobs.transaction():
                    await self._jobs.execute("SELECT pg_advisory_xact_lock(%s)", (_JOBS_LOCK,))
                    return await _drive(self._jobs, job())
        except (psycopg.OperationalError, TimeoutError) as error:
            raise self._unavailable(_reason(error)) from None

    async def _run_lease(self, sql: str, parameters: tuple[object, ...]) -> LeaseRow | None:
        async def run(connection: Connection) -> list[tuple[Any, ...]]:
            return await _rows(connection, _sql(sql.format(now=_NOW)), parameters)

        rows = await self._on_lease_connection(run)
        return (rows[0][0], rows[0][1], rows[0][2], rows[0][3]) if rows else None


async def _drive(connection: Connection, job: Job) -> Any:
    """Run ``job``'s statements on ``connection``, each one's rows sent back to it."""
    cursor = connection.cursor()
    try:
        statement = next(job)
        while True:
            sql, parameters = statement
            await cursor.execute(_sql(sql), parameters)
            rows = await cursor.fetchall() if cursor.description is not None else []
            statement = job.send(rows)
    except StopIteration as done:
        return done.value


async def _rows(
    connection: Connection, sql: str, parameters: Sequence[object] | Mapping[str, object] = ()
) -> list[tuple[Any, ...]]:
    cursor = await connection.execute(sql, parameters or None)
    return await cursor.fetchall()


async def _write_transaction(
    connection: Connection, records: list[Record], fences: Mapping[str, int]
) -> None:
    """Write ``records`` in one transaction, in one round trip.

    Commands alone (the common case: moves) are one statement, fence included, which
    PostgreSQL runs as a transaction of its own. Anything else goes in pipeline mode,
    which sends BEGIN, the fence check, the statements and COMMIT without waiting for any
    answer, then waits for them all (measured: a third of the client's CPU of the pipeline
    for a transaction of moves). An error anywhere rolls the whole transaction back.
    """
    if all(type(record) is CommandRecord for record in records):
        await connection.execute(
            _INSERT_FENCED_COMMANDS if fences else _INSERT_COMMANDS,
            (*_fence_arrays(fences), *_command_arrays(records)) if fences
            else _command_arrays(records),
        )
        return
    async with connection.pipeline(), connection.transaction():
        cursor = connection.cursor()
        if fences:
            await cursor.execute(_FENCE, _fence_arrays(fences))
        # Runs of commands, and of spectators starting to watch (hundreds a second when a
        # crowd comes to a big race), are one statement each, in their place in the order.
        run: list[CommandRecord] = []
        watchers: list[Watching] = []
        for record in records:
            if type(record) is CommandRecord:
                if watchers:
                    await _insert_watching(cursor, watchers)
                    watchers = []
                run.append(record)
                continue
            if run:
                await _insert_commands(cursor, run)
                run = []
            if type(record) is Watching:
                watchers.append(record)
                continue
            if watchers:
                await _insert_watching(cursor, watchers)
                watchers = []
            if isinstance(record, RaceOpened):
                await cursor.execute(_INSERT_RACE, (
                    record.race_id, record.code, record.seed,
                    json.dumps(record.options.to_dict()), record.tournament_id,
                    record.created_at,
                ))
                continue
            for sql, parameters in statements_of(record):
                await cursor.execute(_sql(sql), parameters)
        if run:
            await _insert_commands(cursor, run)
        if watchers:
            await _insert_watching(cursor, watchers)


async def _insert_watching(
    cursor: psycopg.AsyncCursor[tuple[Any, ...]], run: list[Watching]
) -> None:
    """A run of sessions starting to watch races as one INSERT of two arrays."""
    await cursor.execute(_INSERT_WATCHING, ([watching.player_id for watching in run],
                                            [watching.race_id for watching in run]))


async def _insert_commands(
    cursor: psycopg.AsyncCursor[tuple[Any, ...]], run: list[CommandRecord]
) -> None:
    """A run of commands as one INSERT of three arrays, whatever its length."""
    await cursor.execute(_INSERT_COMMANDS, _command_arrays(run))


def _command_arrays(run: Sequence[Record]) -> tuple[list[str], list[str], list[float]]:
    """The races, commands and times of a run of :class:`CommandRecord`."""
    commands = [record for record in run if isinstance(record, CommandRecord)]
    return (
        [record.race_id for record in commands],
        [command_to_json(record.command) for record in commands],
        [record.at for record in commands],
    )


def _fence_arrays(fences: Mapping[str, int]) -> tuple[list[str], list[int]]:
    return list(fences), list(fences.values())


async def _prepare(url: str, connection: Connection) -> None:
    """Create the tables (or bring them up to :data:`SCHEMA_VERSION`), one server at a
    time."""
    try:
        async with connection.transaction():
            await connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            await connection.execute(_SCHEMA)
            version = await _version(url, connection)
            await connection.execute(PLAYER_SCHEMA)
            await connection.execute(DAILY_SCHEMA)
            if version is None:
                await connection.execute(
                    "INSERT INTO schema_version VALUES (%s)", (SCHEMA_VERSION,)
                )
            else:
                if version < 2:
                    # The sessions' claimed players (the player tables are created above).
                    await connection.execute(
                        "ALTER TABLE players ADD COLUMN IF NOT EXISTS claimed_by text"
                    )
                if version < 3:
                    # The session that created each tournament (NULL before).
                    await connection.execute(
                        "ALTER TABLE tournaments ADD COLUMN IF NOT EXISTS created_by text"
                    )
                if version < 6:
                    # A racer's row kept after its own game (rows before were all busy).
                    await connection.execute(
                        "ALTER TABLE seats ADD COLUMN IF NOT EXISTS busy boolean"
                        " NOT NULL DEFAULT true"
                    )
                if version < SCHEMA_VERSION:
                    await connection.execute(
                        "UPDATE schema_version SET version = %s", (SCHEMA_VERSION,)
                    )
            # (Once ``created_by`` is there: an older store gains it just above.)
            await connection.execute(_CREATOR_INDEX)
    except psycopg.Error as error:
        raise _refusal(url, f"cannot be prepared ({_reason(error)})") from None


async def _check(url: str, connection: Connection) -> None:
    """Refuse a database without the tables, or with a newer version (read-only)."""
    try:
        (table,) = (await _rows(connection, "SELECT to_regclass('schema_version')::text"))[0]
        if table is None:
            raise _refusal(url, "holds no foursquare tables", "give the server's database with "
                           "--db or FOURSQUARE_DB")
        await _version(url, connection)
    except psycopg.Error as error:
        raise _refusal(url, f"cannot be read ({_reason(error)})") from None


async def _version(url: str, connection: Connection) -> int | None:
    """The tables' version (``None``: new); refuses one newer than this code knows."""
    (version,) = (await _rows(connection, "SELECT max(version) FROM schema_version"))[0]
    if version is not None and version > SCHEMA_VERSION:
        raise _refusal(
            url,
            f"has schema version {version}, newer than this foursquare knows ({SCHEMA_VERSION})",
            "run the version of foursquare that wrote it",
        )
    return None if version is None else int(version)


def _refusal(
    url: str,
    problem: str,
    remedy: str = "check that PostgreSQL runs and that the URL given with --db or "
    "FOURSQUARE_DB is right, then start again",
) -> JournalRefused:
    """A database is never ``damaged`` in the sense of ``--new-journal``: there are no
    files to move aside."""
    return JournalRefused(shown(url), problem, remedy, damaged=False)


def read_once(
    url: str, read: Callable[[PostgresStore], Awaitable[T]], *, timeout: float = 5.0
) -> T:
    """Open the database at ``url`` read-only, ``read`` it, close it (for the commands:
    blocks). Raises :class:`~server.journal_file.JournalRefused`."""

    async def run() -> T:
        store = await PostgresStore.open(url, timeout=timeout, for_writing=False)
        try:
            return await read(store)
        finally:
            await store.aclose()

    return asyncio.run(run())

