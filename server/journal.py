"""The journal: every accepted command and every result, in SQLite, before anyone hears of it.

What the event loop submits in one iteration is committed together at its end (group
commit): a burst of moves costs one commit. With ``NORMAL`` the loop commits it itself, a
write into the operating system's cache like its socket writes, and so never waits on
the disk; anything that could wait (every commit with ``FULL``, a commit that meets a
checkpoint's lock, what other threads write) goes to a dedicated writer thread, and the
loop awaits a future instead.

How durable a commit is depends on :class:`Sync`. With ``NORMAL`` (the default) a commit
is in the operating system's hands when it returns: a server process killed at any
moment (SIGKILL, a crash, an out-of-memory kill) loses no committed transaction, because
WAL frames written before the kill are read back at the next start. Only a crash of the
operating system or a power loss can roll back the last commits before the WAL's next
checkpoint. With ``FULL`` every commit also waits for ``fsync``, which survives power
loss too, at the price of one disk flush per group commit on every move's path.

A race is journaled as its opening (id, seed, options) and the list of commands it
accepted with their times; :func:`rebuild` replays them through a fresh
:class:`~server.race.Race`, which is deterministic, so a server killed at any moment comes
back with every race exactly as it was after the last acknowledged command.

A journal file is opened only once :mod:`server.journal_file` has checked it (a file
that is not a whole journal of a known version, fails SQLite's integrity check, or lost
its write-ahead log is refused); a new one is created whole under another name and renamed
into place.

The journal is one implementation of :class:`server.store.Store`, the embedded one
(:mod:`server.postgres` is the other). Every transaction carries the epochs of the leases
it writes under (:func:`server.store.fences_of`): a journal opened by a server holds the
lease of every resource, and a second journal opened on the same file takes it over, so
the first one's writes are refused from then on (:class:`~server.store.LeaseLost`).

Tables (``schema_version`` 11; an older file is brought up to it when opened: version 1
gains ``players.role``, ``race_commands`` of versions 1 and 2 loses ``AUTOINCREMENT``,
versions 1 to 3 lose the index of ``race_commands`` by race, ``races`` gaining
``commands_after`` instead, versions 1 to 4 gain ``players.last_seen``, versions 1 to 5
gain ``journal_state``, versions 1 to 6 gain ``watching``, versions 1 to 7 gain
``leases``, versions 1 to 8 gain ``players.claimed_by`` and the tables of
:mod:`server.player_store`, versions 1 to 9 gain ``tournaments.created_by``, and
versions 1 to 10 gain the daily deal's tables, :mod:`server.daily_store`):

- ``players``: one row per session and its role (player or spectator); the resume
  token is kept only as a SHA-256. ``last_seen`` is when it last connected or left; a
  session idle for too long is deleted (see :mod:`server.expiry`), so the rows a start
  reads do not grow with every session ever made. ``claimed_by`` is the claimed player
  (:mod:`server.player_store`) the session plays as, if any.
- ``races``: one row per race; ``tournament_id`` is there for hosted tournaments, and
  ``commands_after`` is the last command's ``seq`` when the race was opened: its own
  commands all come after it.
- ``race_commands``: every race's commands, in the order they were accepted (``seq``).
- ``results``: the result of each finished race, as the JSON record ``verify`` reads.
- ``watching``: the races each player spectates (a few per player, bounded by
  ``ServerConfig.watched_races``), so that a spectator resumed after a restart is sent
  them again; a player's rows go with it.
- ``journal_state``: whether a server has the journal open (see
  :func:`server.journal_file.mark_open`).
- ``leases``: who may write each resource, and the epoch its writes must carry (see
  :mod:`server.store`).

The tournament tables (:mod:`server.tournament_store`) are created with the others.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import json
import os
import queue
import sqlite3
import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from protocol import Role
from protocol.result import RaceResult
from server.daily_store import SQLITE_SCHEMA as DAILY_SCHEMA
from server.journal_file import (
    MARK_SCHEMA,
    JournalRefused,
    check_journal,
    fsync_directory,
    has_log,
    journal_files,
    mark_closed,
    mark_open,
    read_journal,
    refusing,
)
from server.journal_file import SCHEMA_VERSION as SCHEMA_VERSION  # part of this API
from server.logs import failure, log_event
from server.player_store import SQLITE_SCHEMA as PLAYER_SCHEMA
from server.player_store import Job, JobFactory
from server.race import (
    Command,
    Disconnect,
    Join,
    Leave,
    Place,
    Race,
    RaceOptions,
    Reconnect,
    Resign,
    SetReady,
    Start,
    StartCountdown,
    Tick,
)
from server.store import (
    ACQUIRE_LEASE,
    EVERY_RESOURCE,
    LONE_SERVER,
    Health,
    Lease,
    LeaseLost,
    LeaseRow,
    StoreBase,
    StoreError,
    fences_of,
    stale_fences,
)

if TYPE_CHECKING:
    from server.tournament_store import StoredTournament

# seq is the rowid: commands are never deleted, so it only grows (see _drop_autoincrement
# for why not AUTOINCREMENT). No index by race: see _drop_index_by_race.
_RACE_COMMANDS_TABLE = """CREATE TABLE IF NOT EXISTS race_commands (
    seq INTEGER PRIMARY KEY,
    race_id TEXT NOT NULL REFERENCES races(race_id),
    command TEXT NOT NULL,
    at REAL NOT NULL
)"""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS players (
    player_id TEXT PRIMARY KEY,
    token_hash BLOB NOT NULL UNIQUE,
    name TEXT NOT NULL,
    bot INTEGER NOT NULL,
    created_at REAL NOT NULL,
    role TEXT NOT NULL DEFAULT 'player',
    last_seen REAL,
    claimed_by TEXT
);
CREATE TABLE IF NOT EXISTS races (
    race_id TEXT PRIMARY KEY,
    code TEXT,
    seed TEXT NOT NULL,
    options TEXT NOT NULL,
    tournament_id TEXT,
    created_at REAL NOT NULL,
    finished_at REAL,
    commands_after INTEGER NOT NULL DEFAULT 0
);
""" + _RACE_COMMANDS_TABLE + """;
CREATE TABLE IF NOT EXISTS results (
    race_id TEXT PRIMARY KEY REFERENCES races(race_id),
    result TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS watching (
    player_id TEXT NOT NULL,
    race_id TEXT NOT NULL,
    UNIQUE (player_id, race_id)
);
CREATE TABLE IF NOT EXISTS leases (
    resource_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    expires_at REAL
);
""" + MARK_SCHEMA + ";\n"

#: "Now" in seconds since the Unix epoch, in SQLite's SQL (the lease statements' clock).
_NOW = "((julianday('now') - 2440587.5) * 86400.0)"

class Sync(Enum):
    """SQLite's ``synchronous`` setting for the journal: what a commit survives."""

    NORMAL = "normal"
    """A commit survives the server process being killed (WAL); an OS crash or power loss
    may roll back the last commits."""
    FULL = "full"
    """A commit is flushed to the disk (``fsync``) before it counts: survives power loss."""


# ------------------------------------------------------------------ records


@dataclass(frozen=True, slots=True)
class PlayerRecord:
    """A player identity: its resume token is stored only as ``token_hash``."""

    player_id: str
    token_hash: bytes
    name: str
    bot: bool
    created_at: float
    role: Role = Role.PLAYER
    """A spectator session stays one after a restart."""
    last_seen: float | None = None
    """When the player last connected or left (``created_at`` until then): how long it
    has been idle, for session expiry."""
    claimed_by: str | None = None
    """The claimed player the session plays as (:mod:`server.player_store`), if any."""


@dataclass(frozen=True, slots=True)
class PlayerSeen:
    """Player ``player_id`` connected or left at ``at``."""

    player_id: str
    at: float


@dataclass(frozen=True, slots=True)
class PlayersForgotten:
    """These players' sessions expired: their rows go, and their tokens with them."""

    player_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Watching:
    """Player ``player_id`` spectates race ``race_id`` (it does again after a restart)."""

    player_id: str
    race_id: str


@dataclass(frozen=True, slots=True)
class StoppedWatching:
    """Player ``player_id`` no longer spectates these races."""

    player_id: str
    race_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RaceOpened:
    """A race was created with this seed and these options."""

    race_id: str
    seed: str
    options: RaceOptions
    code: str | None
    created_at: float
    tournament_id: str | None = None


@dataclass(frozen=True, slots=True)
class CommandRecord:
    """Race ``race_id`` accepted ``command`` at time ``at``."""

    race_id: str
    command: Command
    at: float


@dataclass(frozen=True, slots=True)
class ResultRecord:
    """Race ``race_id`` finished at ``finished_at`` with ``result``."""

    race_id: str
    result: RaceResult
    finished_at: float


Statement = tuple[str, Sequence[Any]]
"""An SQL statement and its parameters, written with ``?`` for each (SQLite's style; the
PostgreSQL store turns each into ``%s``), in SQL both databases take."""


class StoredRecord(Protocol):
    """A record of another module's tables (tournaments): its statements run in the
    batch's transaction, so it commits together with the race records written beside it."""

    @property
    def fenced_by(self) -> str:
        """The resource whose lease its writer must hold (its tournament)."""
        ...

    def statements(self) -> list[Statement]:
        """What writing it takes."""
        ...


Record = (
    PlayerRecord
    | PlayerSeen
    | PlayersForgotten
    | Watching
    | StoppedWatching
    | RaceOpened
    | CommandRecord
    | ResultRecord
    | StoredRecord
)


@dataclass(frozen=True, slots=True)
class StoredRace:
    """An unfinished race as the journal holds it."""

    opened: RaceOpened
    commands: tuple[CommandRecord, ...]


@dataclass(frozen=True, slots=True)
class Recovered:
    """What the journal held when opened: every player, and every unfinished race."""

    players: tuple[PlayerRecord, ...] = field(default=())
    races: tuple[StoredRace, ...] = field(default=())
    watching: tuple[Watching, ...] = field(default=())
    """The races each player spectates, in the order it began to."""


# ---------------------------------------------------------------- commands

_COMMAND_KINDS: dict[str, type[Command]] = {
    "join": Join,
    "leave": Leave,
    "ready": SetReady,
    "start": Start,
    "tick": Tick,
    "place": Place,
    "resign": Resign,
    "disconnect": Disconnect,
    "reconnect": Reconnect,
    "countdown": StartCountdown,
}
_KIND_OF = {kind: name for name, kind in _COMMAND_KINDS.items()}
_FIELD_NAMES = {
    kind: tuple(item.name for item in dataclasses.fields(kind)) for kind in _KIND_OF
}


def command_to_json(command: Command) -> str:
    """A command as one line of JSON, ``kind`` first."""
    if type(command) is Place:
        # Nearly every command is a move, and the writer thread holds the interpreter
        # lock while it encodes them: the same text as the general case, a third of the
        # time (a test checks the two agree).
        row, col = command.position
        return (
            f'{{"kind":"place","racer_id":{json.dumps(command.racer_id, ensure_ascii=False)},'
            f'"move_number":{command.move_number},"position":[{row},{col}]}}'
        )
    return _command_to_json(command)


def _command_to_json(command: Command) -> str:
    fields: dict[str, Any] = {"kind": _KIND_OF[type(command)]}
    for name in _FIELD_NAMES[type(command)]:
        value = getattr(command, name)
        fields[name] = list(value) if isinstance(value, tuple) else value
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def command_from_json(text: str) -> Command:
    """The inverse of :func:`command_to_json`."""
    fields = json.loads(text)
    kind = _COMMAND_KINDS[fields.pop("kind")]
    if "position" in fields:
        fields["position"] = tuple(fields["position"])
    return kind(**fields)


def rebuild(stored: StoredRace) -> Race:
    """Replay a stored race's commands from its seed: the race as it was when last journaled."""
    race = unplayed(stored)
    replay_commands(race, stored)
    return race


def unplayed(stored: StoredRace) -> Race:
    """A stored race as it was opened, before any command (to join a shared deal first)."""
    opened = stored.opened
    return Race(opened.race_id, opened.seed, opened.options, opened.code)


def replay_commands(race: Race, stored: StoredRace) -> None:
    """Apply a stored race's commands, at their times, to ``race`` from :func:`unplayed`."""
    for record in stored.commands:
        race.apply(record.command, record.at)


# ------------------------------------------------------------------ journal


#: Seconds between the checkpointer's copies of the WAL into the database.
CHECKPOINT_INTERVAL = 1.0

#: WAL pages past which the checkpointer also restarts the WAL (about 40 MB).
WAL_RESTART_PAGES = 10_000


class Journal(StoreBase):
    """The SQLite journal (WAL mode), its writer thread, and a thread that checkpoints
    the WAL beside it (:class:`_Checkpointer`): the embedded :class:`~server.store.Store`.

    Records submitted while the writer is busy wait together and go into its next
    transaction; they share one future, so a commit costs the event loop one wake-up
    however many moves it held.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "j.db")
    >>> journal = Journal(path)
    >>> journal.write_now(PlayerRecord("p1", b"hash", "ann", False, 0.0))
    >>> journal.close()
    >>> [p.name for p in Journal.load(path).players]
    ['ann']
    """

    stores = True
    """Whether anything written is kept (``False`` only for :class:`DisabledJournal`)."""

    def __init__(
        self,
        path: str | Path,
        *,
        sync: Sync = Sync.NORMAL,
        checkpoint_interval: float = CHECKPOINT_INTERVAL,
        wal_restart_pages: int = WAL_RESTART_PAGES,
        lease_everything: bool = True,
    ):
        """``lease_everything``: take the lease of every resource
        (:data:`~server.store.EVERY_RESOURCE`) as a lone server does; without it the
        journal writes only what it takes leases for (:meth:`acquire_lease`)."""
        super().__init__()
        self.path = Path(path)
        self.sync = sync
        self._holder = _open_for_writing(self.path, sync)
        """The connection that marked the journal open, kept until it marks it closed: as
        long as it is open the write-ahead log stays beside the file (SQLite deletes the
        log when its last connection closes), so a killed server leaves its log behind.
        The lease statements run on it too (under :attr:`_holder_lock`)."""
        self._holder_lock = threading.Lock()
        if lease_everything:
            row = self._lease_row(ACQUIRE_LEASE, (EVERY_RESOURCE, LONE_SERVER, None))
            assert row is not None, "the lone server's lease is always its own"
            self._hold(Lease(*row))
        self._lock = threading.Lock()
        """Guards what is gathering (records may come from the loop and other threads)."""
        self._gathering: list[Record] = []
        self._gathered: concurrent.futures.Future[None] | None = None
        """The future of the records gathering for the next transaction."""
        self._gathered_loop: asyncio.AbstractEventLoop | None = None
        """The event loop that submitted some of them, told once they commit."""
        self._gathered_blocking = False
        """Whether a caller blocks on them (:meth:`write_now`), so the writer itself must
        resolve the future: the loop that would may be the one blocked."""
        self._hand_over_due = False
        """Whether the event loop will hand the gathered records over this iteration."""
        self._known_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
        """The thread that last submitted from an event loop, and that loop."""
        self._queue: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        """Batches handed to the writer thread; ``None`` tells it to stop."""
        self._closed = False
        self._commits_in_loop = sync is not Sync.FULL
        """Whether the event loop may commit its own records (never an ``fsync`` there)."""
        self._in_flight = 0
        """Batches handed to the writer thread and not yet committed: while there are
        any, the loop hands its own over too, behind them, so commits keep their order."""
        self._loop_connection: sqlite3.Connection | None = None
        """The connection the event loop commits on (opened at its first commit)."""
        self.batches_committed = 0
        self.records_committed = 0
        self.loop_commits = 0
        """Transactions the event loop committed itself (the rest: the writer thread)."""
        self._thread = threading.Thread(target=self._run, name="journal-writer", daemon=True)
        self._thread.start()
        self._checkpointer = _Checkpointer(self.path, sync, checkpoint_interval, wal_restart_pages)

    # ------------------------------------------------------------- writing

    def submit(self, *records: Record) -> concurrent.futures.Future[None]:
        """Queue ``records`` for the next transaction; the future resolves once committed
        (it is shared with the other records of that transaction).

        Called in an event loop, the records are committed at the end of the loop's
        current iteration, together with everything else it submitted: by the loop itself
        when it may (see :meth:`_hand_over`), else by the writer thread, which is then
        woken once per iteration, not once per move (waking it costs the loop the
        processor).
        """
        return self._submit(records, at_once=False)

    def _submit(
        self, records: tuple[Record, ...], at_once: bool
    ) -> concurrent.futures.Future[None]:
        loop = self._running_loop()
        with self._lock:
            if self._closed:
                raise RuntimeError("the journal is closed")
            done = self._gathered
            if done is None:
                done = self._gathered = concurrent.futures.Future()
            self._gathering.extend(records)
            if loop is not None:
                self._gathered_loop = loop
            if at_once or loop is None:
                self._gathered_blocking = True
                self._hand_over_locked()
            elif not self._hand_over_due:
                self._hand_over_due = True
                loop.call_soon(self._hand_over)
            return done

    def _running_loop(self) -> asyncio.AbstractEventLoop | None:
        """The event loop running in this thread, if any: remembered for the thread,
        since ``asyncio.get_running_loop()`` makes a ``getpid`` system call each time
        (to notice a fork), and a move's submit was the server's most frequent caller."""
        known = self._known_loop
        if known is not None and known[0] == threading.get_ident() and known[1].is_running():
            return known[1]
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not in an event loop
            return None
        self._known_loop = (threading.get_ident(), loop)
        return loop

    def _hand_over(self) -> None:
        """At the end of a loop iteration: commit what the loop submitted.

        On one processor core, handing a transaction to the writer thread and getting the
        loop woken back cost more than the transaction (measured at 1,000 racers: 0.26 ms
        from hand-over to the loop's wake-up at the median, against 28 us for committing a
        move here), so the loop commits it itself when it can do so without waiting:
        ``NORMAL`` (no ``fsync``), no transaction of the writer's still pending (commits
        keep their order), and the database not locked (a RESTART checkpoint holds
        writers: this connection does not wait, ``busy_timeout`` 0). Otherwise, or if the
        commit fails, the writer thread takes the records, as it does with ``FULL``.
        """
        with self._lock:
            batch = self._take_gathered()
            if batch is None:
                return  # handed over already (by a blocking write in the same iteration)
            committed = self._commit_in_loop(batch)
            if not committed:
                self._send_to_writer(batch)
        if committed:  # outside the lock: the callbacks may submit again
            self._settle(batch.done, None)

    def _commit_in_loop(self, batch: _Batch) -> bool:
        """Commit ``batch`` on the loop's connection, if it may and can; whether it did."""
        if not self._commits_in_loop or self._in_flight or batch.blocking:
            return False
        connection = self._loop_connection
        try:
            if connection is None:
                # Not bound to this thread: close() may close it from another one.
                connection = self._loop_connection = _connect(
                    self.path, self.sync, checkpoints=False, busy_timeout=0, same_thread=False
                )
            _write_transaction(connection, batch.records, fences_of(batch.records, self._held))
        except (sqlite3.Error, StoreError):  # locked, or worse: the writer tries again, and
            # reports it
            if connection is not None and connection.in_transaction:
                # Never raise from here: the records must still reach the writer.
                with contextlib.suppress(sqlite3.Error):
                    connection.execute("ROLLBACK")
            return False
        self.batches_committed += 1
        self.records_committed += len(batch.records)
        self.loop_commits += 1
        return True

    def _hand_over_locked(self) -> None:
        batch = self._take_gathered()
        if batch is not None:
            self._send_to_writer(batch)

    def _take_gathered(self) -> _Batch | None:
        """The records gathered for the next transaction, as one batch (``None`` if there
        are none), and a fresh start for the next."""
        self._hand_over_due = False
        if self._gathered is None:
            return None
        batch = _Batch(self._gathering, self._gathered, self._gathered_loop,
                       self._gathered_blocking)
        self._gathering, self._gathered = [], None
        self._gathered_loop, self._gathered_blocking = None, False
        return batch

    def _send_to_writer(self, batch: _Batch) -> None:
        self._in_flight += 1
        self._queue.put(batch)

    def write_now(self, *records: Record) -> None:
        """Write ``records`` and wait for the commit (for code outside an event loop, or
        that must block it: starting up, tournaments' rare writes)."""
        self._submit(records, at_once=True).result()

    def close(self) -> None:
        """Commit everything queued, stop the writer thread, then mark the journal closed
        (cleanly: everything it acknowledged is in the file once the log is copied)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._hand_over_locked()
            self._queue.put(None)
            if self._loop_connection is not None:
                self._loop_connection.close()
        self._thread.join()
        self._checkpointer.stop()
        try:
            with self._holder_lock:
                mark_closed(self._holder)
        except sqlite3.Error as error:
            # Left marked open; if the log is then copied into the file and deleted (this
            # was its last connection), the next start takes it for a lost log: better
            # than taking a lost log for a clean close.
            log_event("journal_close_error", error=repr(error))
        finally:
            self._holder.close()

    def _run(self) -> None:
        """The writer thread: commit each batch handed over, together with any others
        already waiting, in one transaction.

        Everything here that needs the interpreter lock waits for the event loop's thread
        to give it up, so the writer does as little Python as it can: one blocking
        ``get`` (no condition variable), one statement for a batch of moves, and one
        wake-up of the loop per transaction, where the loop resolves the future itself.
        """
        connection = _connect(self.path, self.sync, checkpoints=False)
        try:
            while True:
                handed = [self._queue.get()]
                while not self._queue.empty():
                    handed.append(self._queue.get())
                batches = [batch for batch in handed if batch is not None]
                if batches:
                    self._commit(connection, batches)
                if len(batches) < len(handed):  # None: close() has handed over the last
                    return
        finally:
            connection.close()

    def _commit(self, connection: sqlite3.Connection, batches: list[_Batch]) -> None:
        records = [record for batch in batches for record in batch.records]
        error: Exception | None = None
        try:
            _write_transaction(connection, records, fences_of(records, self._held))
        except (sqlite3.Error, StoreError) as failure:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            if isinstance(failure, LeaseLost):
                self._let_go(failure.resources)
            error = failure
        else:
            self.batches_committed += 1
            self.records_committed += len(records)
        with self._lock:
            self._in_flight -= len(batches)
        for batch in batches:
            if batch.blocking:  # its caller may be blocking the loop: resolve it here
                if error is None:
                    batch.done.set_result(None)
                else:
                    batch.done.set_exception(error)
            if batch.loop is not None:
                with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
                    batch.loop.call_soon_threadsafe(self._settle, batch.done, error)

    # ------------------------------------------------------------- the store

    @property
    def where(self) -> str:
        """The journal's file."""
        return str(self.path)

    @property
    def health(self) -> Health:
        """Always available: a file that fails to write stops the server instead."""
        return Health.AVAILABLE

    async def available(self) -> None:
        """At once (see :attr:`health`)."""

    async def recover(self) -> Recovered:
        """:meth:`recovered`, in a thread."""
        return await asyncio.to_thread(self.recovered)

    async def read_results(self, race_ids: Collection[str]) -> dict[str, RaceResult]:
        """:meth:`results`, in a thread."""
        return await asyncio.to_thread(self.results, race_ids)

    async def stored_race_ids(self, race_ids: Collection[str]) -> set[str]:
        """:meth:`race_ids_stored`, in a thread."""
        return await asyncio.to_thread(self.race_ids_stored, race_ids)

    async def read_player(self, token_hash: bytes) -> PlayerRecord | None:
        """The stored player whose resume token has digest ``token_hash``, read in a
        thread."""

        def read() -> PlayerRecord | None:
            with self.reading() as connection:
                row = connection.execute(PLAYER_BY_TOKEN_QUERY, (token_hash,)).fetchone()
            return None if row is None else player_from_row(row)

        return await asyncio.to_thread(read)

    async def read_tournaments(
        self, code: str | None = None, *, include_finished: bool = True
    ) -> list[StoredTournament]:
        """The stored tournaments (only the one with join code ``code`` if given; not the
        finished ones unless ``include_finished``), read in a thread."""
        from server.tournament_store import stored_tournaments_in

        def read() -> list[StoredTournament]:
            with self.reading() as connection:
                return stored_tournaments_in(connection, code, include_finished)

        return await asyncio.to_thread(read)

    async def aclose(self) -> None:
        """:meth:`close`, in a thread."""
        await asyncio.to_thread(self.close)

    async def run(self, job: JobFactory, *, writes: bool) -> Any:
        """See :meth:`server.store.Store.run`: in a thread, on a connection of its own
        (a writing job takes the write lock first, waiting for it as long as a commit's
        ``busy_timeout`` allows; a reading one sees the snapshot of its first read)."""

        def run() -> Any:
            with self.reading() as connection:
                return run_job(connection, job(), writes=writes)

        return await asyncio.to_thread(run)

    def _lease_row(self, sql: str, parameters: tuple[object, ...]) -> LeaseRow | None:
        with self._holder_lock:
            # fetchall: the statement runs to its end, which commits it (autocommit).
            rows = self._holder.execute(sql.format(now=_NOW), parameters).fetchall()
        return rows[0] if rows else None

    async def _run_lease(self, sql: str, parameters: tuple[object, ...]) -> LeaseRow | None:
        return await asyncio.to_thread(self._lease_row, sql, parameters)

    # ------------------------------------------------------------- reading

    @staticmethod
    def load(path: str | Path) -> Recovered:
        """Every player and every unfinished race in the journal at ``path``, once
        :func:`~server.journal_file.read_journal` has checked it (raises
        :class:`JournalRefused` if it may not be opened)."""
        with read_journal(Path(path)) as connection:
            return _recovered(Path(path), connection)

    def recovered(self) -> Recovered:
        """Every player and every unfinished race in this journal (opened, so checked)."""
        with self.reading() as connection:
            return _recovered(self.path, connection)

    @contextlib.contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A connection to read this open journal with (checked when it was opened; SQLite
        errors become :class:`JournalRefused`)."""
        connection = _connect(self.path)
        try:
            with refusing(self.path):
                yield connection
        finally:
            connection.close()

    def results(self, race_ids: Collection[str]) -> dict[str, RaceResult]:
        """The stored results of those of ``race_ids`` that have one (blocking: call it in
        a thread)."""
        if not race_ids:
            return {}
        with self.reading() as connection:
            rows = connection.execute(
                f"SELECT race_id, result FROM results WHERE race_id IN"
                f" ({', '.join('?' * len(race_ids))})",
                tuple(race_ids),
            ).fetchall()
        return {race_id: RaceResult.from_json(text) for race_id, text in rows}

    def race_ids_stored(self, race_ids: Collection[str]) -> set[str]:
        """Those of ``race_ids`` that a stored race has (blocking: call it in a thread)."""
        if not race_ids:
            return set()
        with self.reading() as connection:
            rows = connection.execute(
                f"SELECT race_id FROM races WHERE race_id IN ({', '.join('?' * len(race_ids))})",
                tuple(race_ids),
            ).fetchall()
        return {race_id for (race_id,) in rows}

    @staticmethod
    def load_result(path: str | Path, race_id: str) -> RaceResult | None:
        """The stored result of race ``race_id``, or ``None`` if it has none (raises
        :class:`JournalRefused` if the journal may not be opened)."""
        with read_journal(Path(path)) as connection:
            row = connection.execute(
                "SELECT result FROM results WHERE race_id = ?", (race_id,)
            ).fetchone()
        return None if row is None else RaceResult.from_json(row[0])


def _recovered(path: Path, connection: sqlite3.Connection) -> Recovered:
    """What :meth:`Journal.load` reads; a record that cannot be decoded is damage."""
    try:
        return _read_recovered(connection)
    except (ValueError, KeyError, TypeError) as error:
        # Its type and place, not its message: a record holds what clients sent.
        raise JournalRefused(
            path, f"holds a record that cannot be read ({failure(error)})"
        ) from None


def _read_recovered(connection: sqlite3.Connection) -> Recovered:
    unfinished = connection.execute(
        "SELECT race_id, code, seed, options, tournament_id, created_at, commands_after"
        " FROM races WHERE race_id NOT IN (SELECT race_id FROM results)"
        " ORDER BY created_at"
    ).fetchall()
    # One pass over the commands since the oldest unfinished race opened, in the order
    # they were accepted (recovered_from keeps the unfinished races' own).
    commands = connection.execute(
        "SELECT race_id, command, at FROM race_commands WHERE seq > ? ORDER BY seq",
        (min(row[6] for row in unfinished),),
    ) if unfinished else ()
    return recovered_from(
        connection.execute(PLAYERS_QUERY),
        [row[:6] for row in unfinished],
        commands,
        connection.execute("SELECT player_id, race_id FROM watching ORDER BY rowid"),
    )


#: Every player, in the order they were last seen (the same SQL in either store).
PLAYERS_QUERY = (
    "SELECT player_id, token_hash, name, bot, created_at, role,"
    " coalesce(last_seen, created_at) AS seen, claimed_by FROM players ORDER BY seen"
)


#: The player whose resume token has this digest (a row as :data:`PLAYERS_QUERY`'s).
PLAYER_BY_TOKEN_QUERY = (
    "SELECT player_id, token_hash, name, bot, created_at, role,"
    " coalesce(last_seen, created_at) AS seen, claimed_by FROM players WHERE token_hash = ?"
)


def player_from_row(row: Sequence[Any]) -> PlayerRecord:
    """A row of :data:`PLAYERS_QUERY` as a record (raises ``ValueError`` for a role it
    does not know)."""
    return PlayerRecord(row[0], bytes(row[1]), row[2], bool(row[3]), row[4], Role(row[5]),
                        row[6], row[7])


def recovered_from(
    players: Iterable[Sequence[Any]],
    unfinished: Iterable[Sequence[Any]],
    commands: Iterable[Sequence[Any]],
    watching: Iterable[Sequence[Any]],
) -> Recovered:
    """What a store read, as records: rows of :data:`PLAYERS_QUERY`; of the unfinished
    races (id, code, seed, options, tournament, created), oldest first; of commands (race,
    command, time) in the order they were accepted, those of other races left out; of
    what players watch (player, race), in the order they began to. Raises ``ValueError``,
    ``KeyError`` or ``TypeError`` for a record that cannot be decoded."""
    races = [
        RaceOpened(
            race_id, seed, RaceOptions.from_dict(json.loads(options)), code, created_at,
            tournament_id,
        )
        for race_id, code, seed, options, tournament_id, created_at in unfinished
    ]
    kept: dict[str, list[CommandRecord]] = {opened.race_id: [] for opened in races}
    for race_id, command, at in commands:
        own = kept.get(race_id)
        if own is not None:
            own.append(CommandRecord(race_id, command_from_json(command), at))
    return Recovered(
        tuple(player_from_row(row) for row in players),
        tuple(StoredRace(opened, tuple(kept[opened.race_id])) for opened in races),
        tuple(Watching(player_id, race_id) for player_id, race_id in watching),
    )


def _open_for_writing(path: Path, sync: Sync) -> sqlite3.Connection:
    """Check the journal at ``path`` (or create it, if it is new), bring it up to
    :data:`SCHEMA_VERSION` and mark it open; the connection that did it, left open.

    A journal is new when neither its file nor a log with anything in it exists.
    """
    if path.exists() or has_log(path):
        check_journal(path)
    else:
        _create(path)
    from server.tournament_store import SQLITE_SCHEMA as TOURNAMENT_SCHEMA

    connection = _connect(path, sync, same_thread=False)
    try:
        with refusing(path):
            connection.executescript(_SCHEMA)
            connection.executescript(TOURNAMENT_SCHEMA)
            connection.executescript(PLAYER_SCHEMA + DAILY_SCHEMA)
            _migrate(connection)
            mark_open(connection, path)
    except BaseException:
        connection.close()
        raise
    return connection


def _create(path: Path) -> None:
    """Create a new journal at ``path``: built beside it under another name (with no
    write-ahead log) and renamed into place with its tables, so that a file at ``path``
    has always been a whole journal, and an empty one there is damage."""
    building = path.with_name(path.name + ".new")
    with refusing(path):  # a missing directory, a file where one should be, a full disk
        for stale in journal_files(building):  # what a start killed while building left
            stale.unlink(missing_ok=True)
        connection = sqlite3.connect(building, isolation_level=None)
        try:
            connection.executescript(_SCHEMA)
            connection.executescript(PLAYER_SCHEMA + DAILY_SCHEMA)
            _migrate(connection)  # gives it its schema version
            mark_closed(connection)
        finally:
            connection.close()
        building.replace(path)
        fsync_directory(path)


def _migrate(connection: sqlite3.Connection) -> None:
    """Bring a journal written by an older server up to :data:`SCHEMA_VERSION` (a new one:
    give it its version). Version 6 only added ``journal_state`` (``_SCHEMA`` creates it;
    :func:`~server.journal_file.mark_open` fills it), version 7 only ``watching``
    (``_SCHEMA`` creates it empty: an older server kept what its sessions watched in
    memory only), version 8 only ``leases`` (created empty: the server opening it
    takes its lease), version 9 ``players.claimed_by`` (no session of an older
    server played as a claimed player) and the player tables (created empty), version
    10 the creator of each tournament (``created_by``: NULL for those stored before, which
    no session's cap counts), and version 11 only the daily deal's tables (created
    empty: no day was dealt before)."""
    row = connection.execute("SELECT max(version) FROM schema_version").fetchone()
    version = row[0]
    if version is None:
        connection.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
        return
    if version >= SCHEMA_VERSION:
        return
    connection.execute("BEGIN IMMEDIATE")
    if version < 2:
        columns = {info[1] for info in connection.execute("PRAGMA table_info(players)")}
        if "role" not in columns:
            # Version 1 did not store roles: every session it kept was a player's.
            connection.execute(
                "ALTER TABLE players ADD COLUMN role TEXT NOT NULL DEFAULT 'player'"
            )
    if version < 3:
        _drop_autoincrement(connection)
    if version < 4:
        _drop_index_by_race(connection)
    if version < 5:
        # When a player was last seen, for session expiry (NULL: its created_at).
        connection.execute("ALTER TABLE players ADD COLUMN last_seen REAL")
    if version < 9:
        columns = {info[1] for info in connection.execute("PRAGMA table_info(players)")}
        if "claimed_by" not in columns:
            connection.execute("ALTER TABLE players ADD COLUMN claimed_by TEXT")
    if version < 10:
        columns = {info[1] for info in connection.execute("PRAGMA table_info(tournaments)")}
        if columns and "created_by" not in columns:
            connection.execute("ALTER TABLE tournaments ADD COLUMN created_by TEXT")
    connection.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
    connection.execute("COMMIT")


def _drop_autoincrement(connection: sqlite3.Connection) -> None:
    """Rebuild ``race_commands`` without ``AUTOINCREMENT`` (versions 1 and 2 had it).

    ``AUTOINCREMENT`` keeps the highest ``seq`` in ``sqlite_sequence``, one more page for
    every commit to write to the WAL (3.5 pages a one-move commit, against 2.5 without)
    and 5 us more of the commit. Commands are never deleted, so a plain rowid is just as
    increasing: ``seq`` keeps its order, and the rows keep their values.
    """
    (sql,) = connection.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'race_commands'"
    ).fetchone()
    if "AUTOINCREMENT" not in sql.upper():
        return
    connection.execute("ALTER TABLE race_commands RENAME TO race_commands_v2")
    connection.execute("DROP INDEX race_commands_by_race")
    connection.execute(_RACE_COMMANDS_TABLE)
    connection.execute(
        "INSERT INTO race_commands (seq, race_id, command, at)"
        " SELECT seq, race_id, command, at FROM race_commands_v2 ORDER BY seq"
    )
    connection.execute("DROP TABLE race_commands_v2")


def _drop_index_by_race(connection: sqlite3.Connection) -> None:
    """Drop the index of ``race_commands`` by race (versions 1 to 3 had it), and give
    each race its ``commands_after`` instead.

    A commit of moves from several races wrote one leaf of that index per race, besides
    the table's last leaf: at 5,000 racers a commit of 13 moves wrote about 14 pages to
    the WAL, 20 MB a second for the checkpointer to copy. Recovery reads the commands in
    one pass from the oldest unfinished race's ``commands_after`` instead (see
    :meth:`Journal.load`). A race's is the ``seq`` before its first command, or the last
    ``seq`` when it has none yet.
    """
    columns = {info[1] for info in connection.execute("PRAGMA table_info(races)")}
    if "commands_after" not in columns:
        connection.execute(
            "ALTER TABLE races ADD COLUMN commands_after INTEGER NOT NULL DEFAULT 0"
        )
    connection.execute(
        "CREATE TEMP TABLE first_commands (race_id TEXT PRIMARY KEY, seq INTEGER NOT NULL)"
    )
    connection.execute(
        "INSERT INTO first_commands SELECT race_id, min(seq) FROM race_commands GROUP BY race_id"
    )
    connection.execute(
        "UPDATE races SET commands_after = coalesce("
        " (SELECT seq - 1 FROM first_commands WHERE race_id = races.race_id),"
        " (SELECT coalesce(max(seq), 0) FROM race_commands))"
    )
    connection.execute("DROP TABLE first_commands")
    connection.execute("DROP INDEX IF EXISTS race_commands_by_race")


class _Checkpointer:
    """A thread that copies the WAL into the database, on a connection of its own, so
    that no commit waits for a checkpoint.

    SQLite's automatic checkpoint runs inside the commit that crosses its threshold, and
    every move behind that commit waited for its copying and its two ``fsync`` calls: with
    the journal on disk, measured at 1,000 racers, the moves' p99 was 2-3 ms above the same
    server's with the journal in RAM, and their maximum 40 ms against 13-27 ms. Here a
    PASSIVE checkpoint every :data:`CHECKPOINT_INTERVAL` copies what has been committed
    without blocking the writer. The WAL starts again from its beginning only once every
    frame in it is copied, which under constant writes never happens between two commits:
    past :data:`WAL_RESTART_PAGES` pages a RESTART checkpoint makes it happen, holding the
    writer only while it copies the few frames committed since the last PASSIVE one.
    """

    def __init__(self, path: Path, sync: Sync, interval: float, restart_pages: int) -> None:
        self._path, self._sync = path, sync
        self._interval, self._restart_pages = interval, restart_pages
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="journal-checkpointer",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop after the checkpoint under way, if any (closing the journal's last
        connection then checkpoints what is left)."""
        self._stopping.set()
        self._thread.join()

    def _run(self) -> None:
        connection = _connect(self._path, self._sync)
        try:
            while not self._stopping.wait(self._interval):
                try:
                    self._checkpoint(connection)
                except sqlite3.Error as error:  # busy past the timeout: try again next time
                    log_event("checkpoint_error", error=repr(error))
        finally:
            connection.close()

    def _checkpoint(self, connection: sqlite3.Connection) -> None:
        _, wal_pages, _ = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if wal_pages >= self._restart_pages:
            connection.execute("PRAGMA wal_checkpoint(RESTART)").fetchone()


def _connect(
    path: Path,
    sync: Sync = Sync.NORMAL,
    *,
    checkpoints: bool = True,
    busy_timeout: int = 5000,
    same_thread: bool = True,
) -> sqlite3.Connection:
    """A connection to the journal at ``path``; with ``checkpoints=False`` its commits
    never checkpoint (the writers': :class:`_Checkpointer` does it). ``busy_timeout`` is
    how long (ms) a statement waits for a lock before failing; ``same_thread=False``
    lets another thread than the one that opened it use it (the caller serialises)."""
    # Autocommit mode: _write_transaction begins and commits transactions itself (or lets
    # one multi-row INSERT be its own).
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=same_thread)
    connection.execute("PRAGMA journal_mode=WAL")
    # What a commit survives before the move it holds is acknowledged: see Sync.
    connection.execute(f"PRAGMA synchronous={sync.value.upper()}")
    connection.execute(f"PRAGMA busy_timeout={busy_timeout}")
    if not checkpoints:
        connection.execute("PRAGMA wal_autocheckpoint=0")
    return connection


class DisabledJournal(Journal):
    """No journal: every write counts as committed at once and nothing is stored.

    Only for measuring what the journal costs (``foursquare serve --no-journal``, which
    says so): a server run like this forgets every race and player when it stops.
    """

    stores = False

    def __init__(self) -> None:
        StoreBase.__init__(self)
        self.path = Path(os.devnull)
        self.sync = Sync.NORMAL
        self._closed = False
        self._memory: sqlite3.Connection | None = None
        self.batches_committed = 0
        self.records_committed = 0

    def results(self, race_ids: Collection[str]) -> dict[str, RaceResult]:
        """None: nothing was stored."""
        return {}

    def race_ids_stored(self, race_ids: Collection[str]) -> set[str]:
        """None: nothing was stored."""
        return set()

    def recovered(self) -> Recovered:
        """Nothing: nothing was stored."""
        return Recovered()

    async def read_player(self, token_hash: bytes) -> PlayerRecord | None:
        """None: nothing was stored."""
        return None

    async def read_tournaments(
        self, code: str | None = None, *, include_finished: bool = True
    ) -> list[StoredTournament]:
        """None: nothing was stored."""
        return []

    async def _run_lease(self, sql: str, parameters: tuple[object, ...]) -> LeaseRow | None:
        raise RuntimeError("a server without a journal keeps no leases")

    async def run(self, job: JobFactory, *, writes: bool) -> Any:
        """Jobs run on a database in memory, forgotten when the server stops (so a
        benchmark's players can still claim names and race)."""
        if self._memory is None:
            self._memory = sqlite3.connect(":memory:", isolation_level=None)
            self._memory.executescript(_SCHEMA + PLAYER_SCHEMA + DAILY_SCHEMA)
        return run_job(self._memory, job(), writes=writes)

    def submit(self, *records: Record) -> concurrent.futures.Future[None]:
        """A future that is already done: nothing is written."""
        if self._closed:
            raise RuntimeError("the journal is closed")
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        done.set_result(None)
        self.batches_committed += 1
        self.records_committed += len(records)
        return done

    def close(self) -> None:
        """Refuse further writes."""
        self._closed = True


@dataclass(frozen=True, slots=True)
class _Batch:
    """Records handed to the writer thread together, and who to tell when they commit."""

    records: list[Record]
    done: concurrent.futures.Future[None]
    loop: asyncio.AbstractEventLoop | None
    """The event loop to wake once they commit (``None``: none submitted any)."""
    blocking: bool
    """Someone may wait for ``done`` outside the loop (:meth:`Journal.write_now`, or a
    submit from outside any loop), so the writer resolves it itself."""


def run_job(connection: sqlite3.Connection, job: Job, *, writes: bool) -> Any:
    """Run ``job`` as one transaction on ``connection`` (autocommit mode): ``BEGIN
    IMMEDIATE`` for one that writes, so that no other writer comes between its reads and
    its writes; rolled back if it raises."""
    connection.execute("BEGIN IMMEDIATE" if writes else "BEGIN")
    try:
        statement = next(job)
        while True:
            rows = connection.execute(*statement).fetchall()
            statement = job.send(rows)
    except StopIteration as done:
        connection.execute("COMMIT")
        return done.value
    except BaseException:
        connection.execute("ROLLBACK")
        raise


def _write_transaction(
    connection: sqlite3.Connection, records: list[Record], fences: Mapping[str, int]
) -> None:
    """Write ``records`` in one transaction, if the ``leases`` table still has every epoch
    of ``fences`` (raises :class:`~server.store.LeaseLost`, nothing written, if not).

    Moves alone (the common case under load) fit one multi-row INSERT, which SQLite runs
    as a transaction of its own: one statement, so the writer thread takes the
    interpreter lock back once instead of three times (BEGIN, INSERT, COMMIT). The fences
    are checked inside that statement.
    """
    commands = [record for record in records if isinstance(record, CommandRecord)]
    if len(commands) == len(records) <= _COMMANDS_PER_INSERT:
        _insert_commands(connection, commands, fences)
        return
    connection.execute("BEGIN IMMEDIATE")  # the write lock: no takeover until COMMIT
    _check_fences(connection, fences)
    _insert_all(connection, records)
    connection.execute("COMMIT")


def _check_fences(connection: sqlite3.Connection, fences: Mapping[str, int]) -> None:
    """Raise :class:`~server.store.LeaseLost` unless the ``leases`` table holds every
    epoch of ``fences``."""
    if not fences:
        return
    marks = ", ".join("?" * len(fences))
    epochs = dict(connection.execute(
        f"SELECT resource_id, epoch FROM leases WHERE resource_id IN ({marks})", tuple(fences)
    ).fetchall())
    stale = stale_fences(fences, epochs)
    if stale:
        raise LeaseLost(stale)


#: Commands per multi-row INSERT (3 parameters each: under SQLite's oldest limit of 999).
_COMMANDS_PER_INSERT = 300

#: Players per DELETE of expired sessions (one parameter each, under the same limit).
_PLAYERS_PER_DELETE = 500


def _insert_all(connection: sqlite3.Connection, records: list[Record]) -> None:
    """Insert ``records`` in order, runs of commands as multi-row INSERTs.

    Each statement the writer thread runs lets the event loop's thread take the GIL, and
    the writer then waits for it back: one statement per run of moves, not per move,
    keeps a transaction's latency from growing with the number of moves it holds.
    """
    commands: list[CommandRecord] = []
    for record in records:
        if isinstance(record, CommandRecord):
            commands.append(record)
            continue
        _insert_commands(connection, commands)
        commands.clear()
        _insert(connection, record)
    _insert_commands(connection, commands)


def _insert_commands(
    connection: sqlite3.Connection,
    commands: list[CommandRecord],
    fences: Mapping[str, int] | None = None,
) -> None:
    """Insert ``commands``, runs of them as multi-row INSERTs; with ``fences`` (only for a
    single run) the INSERT writes its rows only if the ``leases`` table holds those epochs,
    so the check and the write are one statement."""
    for start in range(0, len(commands), _COMMANDS_PER_INSERT):
        chunk = commands[start : start + _COMMANDS_PER_INSERT]
        values: list[str | float] = []
        for record in chunk:
            values += (record.race_id, command_to_json(record.command), record.at)
        rows = ", ".join(["(?, ?, ?)"] * len(chunk))
        if not fences:
            connection.execute("INSERT INTO race_commands (race_id, command, at) VALUES " + rows,
                               values)
            continue
        claims = " OR ".join(["(resource_id = ? AND epoch = ?)"] * len(fences))
        for resource, epoch in fences.items():
            values += (resource, epoch)
        inserted = connection.execute(
            f"INSERT INTO race_commands (race_id, command, at) SELECT * FROM (VALUES {rows})"
            f" WHERE (SELECT count(*) FROM leases WHERE {claims}) = {len(fences)}",
            values,
        ).rowcount
        if inserted != len(chunk):
            _check_fences(connection, fences)  # says which
            raise LeaseLost(fences)


def _insert(connection: sqlite3.Connection, record: Record) -> None:
    match record:
        case RaceOpened(race_id, seed, options, code, created_at, tournament_id):
            connection.execute(
                "INSERT INTO races"
                " (race_id, code, seed, options, tournament_id, created_at, commands_after)"
                " VALUES (?, ?, ?, ?, ?, ?, (SELECT coalesce(max(seq), 0) FROM race_commands))",
                (race_id, code, seed, json.dumps(options.to_dict()), tournament_id, created_at),
            )
        case CommandRecord(race_id, command, at):
            connection.execute(
                "INSERT INTO race_commands (race_id, command, at) VALUES (?, ?, ?)",
                (race_id, command_to_json(command), at),
            )
        case _:
            for sql, parameters in statements_of(record):
                connection.execute(sql, parameters)


def statements_of(record: Record) -> list[Statement]:
    """The statements that write ``record``, the same in either store: every record but
    a race's opening and its commands, which each store writes its own way (raises
    ``TypeError`` for those)."""
    match record:
        case PlayerRecord(player_id, token_hash, name, bot, created_at, role, last_seen,
                          claimed_by):
            return [(
                "INSERT INTO players"
                " (player_id, token_hash, name, bot, created_at, role, last_seen, claimed_by)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (player_id) DO UPDATE SET"
                " token_hash = excluded.token_hash, name = excluded.name, bot = excluded.bot,"
                " created_at = excluded.created_at, role = excluded.role,"
                " last_seen = excluded.last_seen, claimed_by = excluded.claimed_by",
                (player_id, token_hash, name, int(bot), created_at, role.value, last_seen,
                 claimed_by),
            )]
        case PlayerSeen(player_id, at):
            return [("UPDATE players SET last_seen = ? WHERE player_id = ?", (at, player_id))]
        case PlayersForgotten(player_ids):
            statements: list[Statement] = []
            for start in range(0, len(player_ids), _PLAYERS_PER_DELETE):
                chunk = player_ids[start : start + _PLAYERS_PER_DELETE]
                marks = ", ".join("?" * len(chunk))
                statements.append((f"DELETE FROM players WHERE player_id IN ({marks})", chunk))
                statements.append((f"DELETE FROM watching WHERE player_id IN ({marks})", chunk))
            return statements
        case Watching(player_id, race_id):
            return [(
                "INSERT INTO watching (player_id, race_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (player_id, race_id),
            )]
        case StoppedWatching(player_id, race_ids):
            return [
                ("DELETE FROM watching WHERE player_id = ? AND race_id = ?", (player_id, race_id))
                for race_id in race_ids
            ]
        case ResultRecord(race_id, result, finished_at):
            return [
                (
                    "INSERT INTO results (race_id, result) VALUES (?, ?)"
                    " ON CONFLICT (race_id) DO UPDATE SET result = excluded.result",
                    (race_id, result.to_json()),
                ),
                ("UPDATE races SET finished_at = ? WHERE race_id = ?", (finished_at, race_id)),
            ]
        case RaceOpened() | CommandRecord():
            raise TypeError(f"each store writes a {type(record).__name__} its own way")
        case _:
            return record.statements()


def resource_of(record: Record) -> str | None:
    """The race or tournament whose lease fences ``record`` (``None``: a player's record,
    which no race's lease covers)."""
    if isinstance(record, CommandRecord | RaceOpened | ResultRecord):
        return record.race_id
    if isinstance(record, PlayerRecord | PlayerSeen | PlayersForgotten | Watching
                  | StoppedWatching):
        return None
    return record.fenced_by
