"""The journal: every accepted command and every result, in SQLite, before anyone hears of it.

Writes go through one dedicated thread that drains a queue and commits whatever has
gathered in one transaction (group commit): a burst of moves costs one ``fsync``, and the
event loop never waits on the disk, only on a future it can ``await``.

A race is journaled as its opening (id, seed, options) and the list of commands it
accepted with their times; :func:`rebuild` replays them through a fresh
:class:`~server.race.Race`, which is deterministic, so a server killed at any moment comes
back with every race exactly as it was after the last acknowledged command.

Tables (``schema_version`` 1):

- ``players``: one row per player identity; the resume token is kept only as a SHA-256.
- ``races``: one row per race; ``tournament_id`` is there for hosted tournaments.
- ``race_commands``: the commands, in order, by race.
- ``results``: the result of each finished race, as the JSON record ``verify`` reads.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import queue
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from protocol.result import RaceResult
from server.race import (
    Command,
    Disconnect,
    Join,
    Leave,
    Place,
    Race,
    RaceOptions,
    Resign,
    SetReady,
    Start,
    Tick,
)

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS players (
    player_id TEXT PRIMARY KEY,
    token_hash BLOB NOT NULL UNIQUE,
    name TEXT NOT NULL,
    bot INTEGER NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS races (
    race_id TEXT PRIMARY KEY,
    code TEXT,
    seed TEXT NOT NULL,
    options TEXT NOT NULL,
    tournament_id TEXT,
    created_at REAL NOT NULL,
    finished_at REAL
);
CREATE TABLE IF NOT EXISTS race_commands (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    race_id TEXT NOT NULL REFERENCES races(race_id),
    command TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS race_commands_by_race ON race_commands (race_id, seq);
CREATE TABLE IF NOT EXISTS results (
    race_id TEXT PRIMARY KEY REFERENCES races(race_id),
    result TEXT NOT NULL
);
"""

#: How many records one transaction takes at most, so a flood cannot starve the futures.
MAX_BATCH = 2000


# ------------------------------------------------------------------ records


@dataclass(frozen=True, slots=True)
class PlayerRecord:
    """A player identity: its resume token is stored only as ``token_hash``."""

    player_id: str
    token_hash: bytes
    name: str
    bot: bool
    created_at: float


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


class StoredRecord(Protocol):
    """A record of another module's tables (tournaments): it writes itself in the batch's
    transaction, so it commits together with the race records written beside it."""

    def store(self, connection: sqlite3.Connection) -> None: ...


Record = PlayerRecord | RaceOpened | CommandRecord | ResultRecord | StoredRecord


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
}
_KIND_OF = {kind: name for name, kind in _COMMAND_KINDS.items()}


def command_to_json(command: Command) -> str:
    """A command as one line of JSON, ``kind`` first."""
    fields: dict[str, Any] = {"kind": _KIND_OF[type(command)]}
    for item in dataclasses.fields(command):
        value = getattr(command, item.name)
        fields[item.name] = list(value) if isinstance(value, tuple) else value
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
    opened = stored.opened
    race = Race(opened.race_id, opened.seed, opened.options, opened.code)
    for record in stored.commands:
        race.apply(record.command, record.at)
    return race


# ------------------------------------------------------------------ journal


@dataclass(slots=True)
class _Batch:
    records: tuple[Record, ...]
    done: concurrent.futures.Future[None]


class Journal:
    """The SQLite journal (WAL mode) and its writer thread.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "j.db")
    >>> journal = Journal(path)
    >>> journal.write_now(PlayerRecord("p1", b"hash", "ann", False, 0.0))
    >>> journal.close()
    >>> [p.name for p in Journal.load(path).players]
    ['ann']
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        with _connect(self.path) as connection:
            connection.executescript(_SCHEMA)
            if connection.execute("SELECT count(*) FROM schema_version").fetchone()[0] == 0:
                connection.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
        connection.close()
        self._queue: queue.Queue[_Batch | None] = queue.Queue()
        self._closed = False
        self.batches_committed = 0
        self.records_committed = 0
        self._thread = threading.Thread(target=self._run, name="journal-writer", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------- writing

    def submit(self, *records: Record) -> concurrent.futures.Future[None]:
        """Queue ``records`` for the next transaction; the future resolves once committed."""
        if self._closed:
            raise RuntimeError("the journal is closed")
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._queue.put(_Batch(records, done))
        return done

    async def write(self, *records: Record) -> None:
        """Write ``records`` and return once they are committed, without blocking the loop."""
        await asyncio.wrap_future(self.submit(*records))

    def write_now(self, *records: Record) -> None:
        """Write ``records`` and wait for the commit (for code outside an event loop)."""
        self.submit(*records).result()

    def close(self) -> None:
        """Commit everything queued, then stop the writer thread."""
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        self._thread.join()

    def _run(self) -> None:
        connection = _connect(self.path)
        try:
            while True:
                first = self._queue.get()
                if first is None:
                    return
                batches = [first]
                stopping = False
                while len(batches) < MAX_BATCH:
                    try:
                        more = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        stopping = True
                        break
                    batches.append(more)
                self._commit(connection, batches)
                if stopping:
                    return
        finally:
            connection.close()

    def _commit(self, connection: sqlite3.Connection, batches: list[_Batch]) -> None:
        try:
            connection.execute("BEGIN IMMEDIATE")
            for batch in batches:
                for record in batch.records:
                    _insert(connection, record)
            connection.execute("COMMIT")
        except sqlite3.Error as error:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            for batch in batches:
                batch.done.set_exception(error)
            return
        self.batches_committed += 1
        self.records_committed += sum(len(batch.records) for batch in batches)
        for batch in batches:
            batch.done.set_result(None)

    # ------------------------------------------------------------- reading

    @staticmethod
    def load(path: str | Path) -> Recovered:
        """Every player and every unfinished race in the journal at ``path``."""
        if not Path(path).exists():
            return Recovered()
        connection = _connect(Path(path))
        try:
            players = tuple(
                PlayerRecord(row[0], bytes(row[1]), row[2], bool(row[3]), row[4])
                for row in connection.execute(
                    "SELECT player_id, token_hash, name, bot, created_at FROM players"
                )
            )
            races = []
            for race_id, code, seed, options, tournament_id, created_at in connection.execute(
                "SELECT race_id, code, seed, options, tournament_id, created_at FROM races"
                " WHERE race_id NOT IN (SELECT race_id FROM results) ORDER BY created_at"
            ).fetchall():
                opened = RaceOpened(
                    race_id,
                    seed,
                    RaceOptions.from_dict(json.loads(options)),
                    code,
                    created_at,
                    tournament_id,
                )
                commands = tuple(
                    CommandRecord(race_id, command_from_json(command), at)
                    for command, at in connection.execute(
                        "SELECT command, at FROM race_commands WHERE race_id = ? ORDER BY seq",
                        (race_id,),
                    )
                )
                races.append(StoredRace(opened, commands))
            return Recovered(players, tuple(races))
        finally:
            connection.close()

    @staticmethod
    def load_result(path: str | Path, race_id: str) -> RaceResult | None:
        """The stored result of race ``race_id``, or ``None`` if it has none."""
        connection = _connect(Path(path))
        try:
            row = connection.execute(
                "SELECT result FROM results WHERE race_id = ?", (race_id,)
            ).fetchone()
        finally:
            connection.close()
        return None if row is None else RaceResult.from_json(row[0])


def _connect(path: Path) -> sqlite3.Connection:
    # Autocommit mode: transactions are begun and committed explicitly in _commit.
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=True)
    connection.execute("PRAGMA journal_mode=WAL")
    # FULL: a commit is on disk before the move it holds is acknowledged.
    connection.execute("PRAGMA synchronous=FULL")
    connection.execute("PRAGMA busy_timeout=5000")
    return connection


def _insert(connection: sqlite3.Connection, record: Record) -> None:
    match record:
        case PlayerRecord(player_id, token_hash, name, bot, created_at):
            connection.execute(
                "INSERT OR REPLACE INTO players VALUES (?, ?, ?, ?, ?)",
                (player_id, token_hash, name, int(bot), created_at),
            )
        case RaceOpened(race_id, seed, options, code, created_at, tournament_id):
            connection.execute(
                "INSERT INTO races (race_id, code, seed, options, tournament_id, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (race_id, code, seed, json.dumps(options.to_dict()), tournament_id, created_at),
            )
        case CommandRecord(race_id, command, at):
            connection.execute(
                "INSERT INTO race_commands (race_id, command, at) VALUES (?, ?, ?)",
                (race_id, command_to_json(command), at),
            )
        case ResultRecord(race_id, result, finished_at):
            connection.execute(
                "INSERT OR REPLACE INTO results VALUES (?, ?)", (race_id, result.to_json())
            )
            connection.execute(
                "UPDATE races SET finished_at = ? WHERE race_id = ?", (finished_at, race_id)
            )
        case _:
            record.store(connection)
