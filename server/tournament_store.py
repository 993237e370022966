"""Tournaments in the store (the journal's SQLite database, or PostgreSQL), written in the
store's transactions.

A tournament is stored as its opening (:class:`TournamentOpened`: id, join code, host
token hash, settings, the session that created it) and the events its core produced, in
order, with their times (:class:`TournamentEventRecord`). Both are journal records: the
shell hands them to :meth:`~server.journal.Journal.write` in the same batch as the races
they order and the results they count, so one transaction holds them all.
:meth:`TournamentStore.load` replays the events through
:meth:`~server.tournament.Tournament.restore`, which needs no clock and no seed source: a
server restarted mid-tournament goes on from exactly where it was.

Beside the event log (the truth), each record also keeps plain tables up to date for
anyone reading the database with SQL; nothing is read back from them but the status of
``tournaments``, which the server reads to leave finished tournaments out at start:

- ``tournaments``: one row per tournament, with its status and creator (``created_by``,
  a session id; NULL for a tournament stored before it was recorded).
- ``tournament_entrants``: entrants and their state.
- ``tournament_rounds``: rounds, their seed and who was absent.
- ``tournament_races``: every race ordered, its entrants and its result once over. The
  race's moves are the journal's ``race_commands`` (``races.tournament_id`` links them).
- ``tournament_events``: the event log.

Each record's :meth:`statements` are SQL both databases take, so either store writes
them the same way; :func:`stored_tournaments_in` and :func:`restore` read them back.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.result import RaceResult
from server.journal import Journal, Statement, _connect
from server.journal_file import read_journal
from server.tournament import (
    ArenaStarted,
    AvailabilityChanged,
    Ending,
    EntrantJoined,
    EntrantLeft,
    EntrantRemoved,
    Event,
    Finished,
    Opened,
    Paused,
    RaceOrdered,
    ResultRecorded,
    Resumed,
    RoundStarted,
    SeedSource,
    Tournament,
    TournamentSettings,
)

#: The tournament tables in the journal's SQLite file (:mod:`server.postgres` has its own).
SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS tournaments (
    tournament_id TEXT PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    host_token_hash BLOB NOT NULL,
    settings TEXT NOT NULL,
    created_at REAL NOT NULL,
    status TEXT NOT NULL,
    created_by TEXT
);
CREATE INDEX IF NOT EXISTS tournaments_unfinished
    ON tournaments (created_at) WHERE status <> 'finished';
CREATE TABLE IF NOT EXISTS tournament_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tournament_id TEXT NOT NULL REFERENCES tournaments(tournament_id),
    event TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tournament_events_by_tournament
    ON tournament_events (tournament_id, seq);
CREATE TABLE IF NOT EXISTS tournament_entrants (
    tournament_id TEXT NOT NULL REFERENCES tournaments(tournament_id),
    entrant_id TEXT NOT NULL,
    name TEXT NOT NULL,
    bot INTEGER NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (tournament_id, entrant_id)
);
CREATE TABLE IF NOT EXISTS tournament_rounds (
    tournament_id TEXT NOT NULL REFERENCES tournaments(tournament_id),
    number INTEGER NOT NULL,
    absent TEXT NOT NULL,
    started_at REAL NOT NULL,
    PRIMARY KEY (tournament_id, number)
);
CREATE TABLE IF NOT EXISTS tournament_races (
    race_id TEXT PRIMARY KEY,
    tournament_id TEXT NOT NULL REFERENCES tournaments(tournament_id),
    round INTEGER NOT NULL,
    seed TEXT NOT NULL,
    entrants TEXT NOT NULL,
    ordered_at REAL NOT NULL,
    result TEXT
);
"""

_EVENT_KINDS: dict[str, type[Event]] = {
    "opened": Opened,
    "joined": EntrantJoined,
    "left": EntrantLeft,
    "removed": EntrantRemoved,
    "available": AvailabilityChanged,
    "round_started": RoundStarted,
    "arena_started": ArenaStarted,
    "race_ordered": RaceOrdered,
    "result": ResultRecorded,
    "paused": Paused,
    "resumed": Resumed,
    "ending": Ending,
    "finished": Finished,
}
_KIND_OF = {kind: name for name, kind in _EVENT_KINDS.items()}


def event_to_json(event: Event) -> str:
    """An event as one line of JSON, ``kind`` first."""
    fields: dict[str, Any] = {"kind": _KIND_OF[type(event)]}
    for item in dataclasses.fields(event):
        value = getattr(event, item.name)
        if isinstance(value, RaceResult):
            value = value.to_dict()
        fields[item.name] = list(value) if isinstance(value, tuple) else value
    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False)


def event_from_json(text: str) -> Event:
    """The inverse of :func:`event_to_json`."""
    fields = json.loads(text)
    kind = _EVENT_KINDS[fields.pop("kind")]
    for name, value in fields.items():
        if isinstance(value, list):
            fields[name] = tuple(value)
    if kind is ResultRecorded:
        fields["result"] = RaceResult.from_dict(fields["result"])
    return kind(**fields)


# ------------------------------------------------------------------ records


@dataclass(frozen=True, slots=True)
class TournamentOpened:
    """A tournament was created (the first record of every tournament)."""

    tournament_id: str
    code: str
    host_token_hash: bytes
    settings: TournamentSettings
    created_at: float
    created_by: str | None = None
    """The session that created it (``None``: stored before the creator was recorded)."""

    @classmethod
    def of(cls, tournament: Tournament) -> TournamentOpened:
        """The opening record of ``tournament``."""
        return cls(
            tournament.tournament_id,
            tournament.code,
            tournament.host_token_hash,
            tournament.settings,
            tournament.created_at,
            tournament.created_by,
        )

    @property
    def fenced_by(self) -> str:
        """Its tournament, whose lease the writer holds."""
        return self.tournament_id

    def statements(self) -> list[Statement]:
        """Insert the tournament's row (inside the store's transaction)."""
        return [(
            "INSERT INTO tournaments (tournament_id, code, host_token_hash, settings,"
            " created_at, status, created_by) VALUES (?, ?, ?, ?, ?, 'created', ?)",
            (
                self.tournament_id,
                self.code,
                self.host_token_hash,
                json.dumps(self.settings.to_dict()),
                self.created_at,
                self.created_by,
            ),
        )]


@dataclass(frozen=True, slots=True)
class TournamentEventRecord:
    """Tournament ``tournament_id`` produced ``event`` at time ``at``."""

    tournament_id: str
    event: Event
    at: float

    @property
    def fenced_by(self) -> str:
        """Its tournament, whose lease the writer holds."""
        return self.tournament_id

    def statements(self) -> list[Statement]:
        """Append the event and bring the plain tables up to date."""
        tid, at = self.tournament_id, self.at
        statements: list[Statement] = [(
            "INSERT INTO tournament_events (tournament_id, event, at) VALUES (?, ?, ?)",
            (tid, event_to_json(self.event), at),
        )]
        match self.event:
            case EntrantJoined(entrant_id, name, bot):
                statements.append((
                    "INSERT INTO tournament_entrants VALUES (?, ?, ?, ?, 'active')"
                    " ON CONFLICT (tournament_id, entrant_id) DO UPDATE SET"
                    " name = excluded.name, bot = excluded.bot, state = excluded.state",
                    (tid, entrant_id, name, int(bot)),
                ))
            case EntrantLeft(entrant_id) | EntrantRemoved(entrant_id):
                state = "left" if isinstance(self.event, EntrantLeft) else "removed"
                statements.append((
                    "UPDATE tournament_entrants SET state = ?"
                    " WHERE tournament_id = ? AND entrant_id = ?",
                    (state, tid, entrant_id),
                ))
            case RoundStarted(number, absent):
                statements.append((
                    "INSERT INTO tournament_rounds VALUES (?, ?, ?, ?)",
                    (tid, number, json.dumps(list(absent)), at),
                ))
            case RaceOrdered(race_id, number, seed, entrants):
                statements.append((
                    "INSERT INTO tournament_races VALUES (?, ?, ?, ?, ?, ?, NULL)",
                    (race_id, tid, number, seed, json.dumps(list(entrants)), at),
                ))
            case ResultRecorded(result):
                statements.append((
                    "UPDATE tournament_races SET result = ? WHERE race_id = ?",
                    (result.to_json(), result.race_id),
                ))
            case Opened() | ArenaStarted() | Finished():
                status = {Opened: "open", ArenaStarted: "running", Finished: "finished"}
                statements.append((
                    "UPDATE tournaments SET status = ? WHERE tournament_id = ?",
                    (status[type(self.event)], tid),
                ))
            case _:
                pass
        if isinstance(self.event, RoundStarted):
            statements.append((
                "UPDATE tournaments SET status = 'running' WHERE tournament_id = ?", (tid,)
            ))
        return statements


@dataclass(frozen=True, slots=True)
class TournamentCount:
    """What a cluster's store holds against the caps on tournaments
    (``max_open_tournaments``, ``tournaments_per_session``), beyond one node's memory."""

    unfinished: int
    """Tournaments not finished."""
    created: int
    """Tournaments the asking session created, not finished or finished lately."""


NONE_COUNTED = TournamentCount(0, 0)
"""One process counts every tournament in its memory."""


@dataclass(frozen=True, slots=True)
class StoredTournament:
    """A tournament as a store holds it: its opening and its events, in order, with their
    times (:func:`restore` makes it a :class:`~server.tournament.Tournament` again)."""

    opened: TournamentOpened
    events: tuple[tuple[Event, float], ...]


def restore(stored: StoredTournament, seed_source: SeedSource | None = None) -> Tournament:
    """The tournament ``stored`` holds, as it was after its last event."""
    opened = stored.opened
    return Tournament.restore(
        opened.tournament_id,
        opened.code,
        opened.host_token_hash,
        opened.settings,
        opened.created_at,
        list(stored.events),
        seed_source,
        opened.created_by,
    )


def stored_tournament(
    row: Sequence[Any], events: Iterable[Sequence[Any]]
) -> StoredTournament:
    """A tournament from its row (:func:`tournaments_query`'s: id, code, host token hash,
    settings, created, creator) and its events' rows (event, time) in order (the same in
    either store)."""
    tournament_id, code, token_hash, settings, created_at, created_by = row
    opened = TournamentOpened(
        tournament_id, code, bytes(token_hash),
        TournamentSettings.from_dict(json.loads(settings)), created_at, created_by,
    )
    return StoredTournament(opened, tuple((event_from_json(event), at) for event, at in events))


def tournaments_query(
    *, code: bool, include_finished: bool, has_creator: bool = True
) -> str:
    """The rows of the tournaments to read, without their order (the same SQL in either
    store, ``?`` for the join code when ``code``): finished ones too, or not. A store read
    by a command before the server brought it up to date has no ``created_by`` column
    (``has_creator``): its creators read as NULL."""
    conditions = (["code = ?"] if code else []) + ([] if include_finished else [
        "status <> 'finished'"
    ])
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    creator = "created_by" if has_creator else "NULL"
    return (
        f"SELECT tournament_id, code, host_token_hash, settings, created_at, {creator}"
        f" FROM tournaments{where}"
    )


#: A tournament's events in order (the same SQL in either store).
EVENTS_QUERY = "SELECT event, at FROM tournament_events WHERE tournament_id = ? ORDER BY seq"


# -------------------------------------------------------------------- store


class TournamentStore:
    """Tournaments kept in the journal's database at ``journal.path``.

    Creating the store adds its tables; writes go through ``journal`` (so tournament
    records share the journal's transactions); :func:`load_tournaments` and
    :func:`tournaments_in` read them back.
    """

    def __init__(self, journal: Journal):
        self.journal = journal
        if journal.stores:
            ensure_schema(journal.path)

    def write_now(self, *records: TournamentOpened | TournamentEventRecord) -> None:
        """Commit and wait, for code outside an event loop."""
        self.journal.write_now(*records)

    @staticmethod
    def events_of(
        tournament_id: str, events: list[Event], at: float
    ) -> list[TournamentEventRecord]:
        """The records of ``events`` produced at ``at``."""
        return [TournamentEventRecord(tournament_id, event, at) for event in events]


def ensure_schema(path: str | Path) -> None:
    """Create the tournament tables in the database at ``path`` if they are missing."""
    connection = _connect(Path(path))
    try:
        connection.executescript(SQLITE_SCHEMA)
    finally:
        connection.close()


def load_tournaments(
    path: str | Path, seed_source: SeedSource | None = None, code: str | None = None
) -> list[Tournament]:
    """The tournaments in the journal at ``path`` (only the one with ``code`` if given),
    once :func:`~server.journal_file.read_journal` has checked it (raises
    :class:`~server.journal_file.JournalRefused` if it may not be opened)."""
    with read_journal(Path(path)) as connection:
        return tournaments_in(connection, seed_source, code)


def tournaments_in(
    connection: sqlite3.Connection, seed_source: SeedSource | None = None,
    code: str | None = None,
) -> list[Tournament]:
    """The tournaments a connection to a journal reads (none if it has no tournament
    tables yet: read-only, they are not created here)."""
    return [restore(stored, seed_source) for stored in stored_tournaments_in(connection, code)]


def stored_tournaments_in(
    connection: sqlite3.Connection, code: str | None = None, include_finished: bool = True
) -> list[StoredTournament]:
    """The stored tournaments a connection to a journal reads, oldest first (only the one
    with ``code`` if given, and not the finished ones unless ``include_finished``; none if
    it has no tournament tables yet)."""
    columns = {row[1] for row in connection.execute("PRAGMA table_info(tournaments)")}
    if not columns:
        return []
    query = tournaments_query(
        code=bool(code), include_finished=include_finished, has_creator="created_by" in columns
    )
    rows = connection.execute(
        query + " ORDER BY created_at, rowid", (code,) if code else ()
    ).fetchall()
    return [
        stored_tournament(row, connection.execute(EVENTS_QUERY, (row[0],))) for row in rows
    ]


def finished_but_unrecorded(
    connection: sqlite3.Connection, tournament: Tournament
) -> list[RaceResult]:
    """Results the journal (read through ``connection``) holds for races ``tournament``
    still counts as in progress.

    A server may stop between journaling a race's result and recording it in the
    tournament; the shell hands these back with :class:`~server.tournament.RecordResult`.
    """
    in_progress = [race.race_id for race in tournament.races_in_progress()]
    if not in_progress:
        return []
    marks = ",".join("?" * len(in_progress))
    rows = connection.execute(
        f"SELECT result FROM results WHERE race_id IN ({marks})", in_progress
    ).fetchall()
    return [RaceResult.from_json(row[0]) for row in rows]
