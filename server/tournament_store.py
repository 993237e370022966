"""Tournaments in the journal's SQLite database, written through the journal's writer thread.

A tournament is stored as its opening (:class:`TournamentOpened`: id, join code, host
token hash, settings) and the events its core produced, in order, with their times
(:class:`TournamentEventRecord`). Both are journal records: the shell hands them to
:meth:`~server.journal.Journal.write` in the same batch as the races they order and the
results they count, so one transaction holds them all. :meth:`TournamentStore.load` replays
the events through :meth:`~server.tournament.Tournament.restore`, which needs no clock and
no seed source: a server restarted mid-tournament goes on from exactly where it was.

Beside the event log (the truth), each record also keeps plain tables up to date for
anyone reading the database with SQL; nothing is read back from them:

- ``tournaments``: one row per tournament, with its status.
- ``tournament_entrants``: entrants and their state.
- ``tournament_rounds``: rounds, their seed and who was absent.
- ``tournament_races``: every race ordered, its entrants and its result once over. The
  race's moves are the journal's ``race_commands`` (``races.tournament_id`` links them).
- ``tournament_events``: the event log.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol.result import RaceResult
from server.journal import Journal, _connect
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

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tournaments (
    tournament_id TEXT PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    host_token_hash BLOB NOT NULL,
    settings TEXT NOT NULL,
    created_at REAL NOT NULL,
    status TEXT NOT NULL
);
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

    @classmethod
    def of(cls, tournament: Tournament) -> TournamentOpened:
        """The opening record of ``tournament``."""
        return cls(
            tournament.tournament_id,
            tournament.code,
            tournament.host_token_hash,
            tournament.settings,
            tournament.created_at,
        )

    def store(self, connection: sqlite3.Connection) -> None:
        """Insert the tournament's row (inside the journal's transaction)."""
        connection.execute(
            "INSERT INTO tournaments VALUES (?, ?, ?, ?, ?, 'created')",
            (
                self.tournament_id,
                self.code,
                self.host_token_hash,
                json.dumps(self.settings.to_dict()),
                self.created_at,
            ),
        )


@dataclass(frozen=True, slots=True)
class TournamentEventRecord:
    """Tournament ``tournament_id`` produced ``event`` at time ``at``."""

    tournament_id: str
    event: Event
    at: float

    def store(self, connection: sqlite3.Connection) -> None:
        """Append the event and bring the plain tables up to date."""
        tid, at = self.tournament_id, self.at
        connection.execute(
            "INSERT INTO tournament_events (tournament_id, event, at) VALUES (?, ?, ?)",
            (tid, event_to_json(self.event), at),
        )
        match self.event:
            case EntrantJoined(entrant_id, name, bot):
                connection.execute(
                    "INSERT OR REPLACE INTO tournament_entrants VALUES (?, ?, ?, ?, 'active')",
                    (tid, entrant_id, name, int(bot)),
                )
            case EntrantLeft(entrant_id) | EntrantRemoved(entrant_id):
                state = "left" if isinstance(self.event, EntrantLeft) else "removed"
                connection.execute(
                    "UPDATE tournament_entrants SET state = ?"
                    " WHERE tournament_id = ? AND entrant_id = ?",
                    (state, tid, entrant_id),
                )
            case RoundStarted(number, absent):
                connection.execute(
                    "INSERT INTO tournament_rounds VALUES (?, ?, ?, ?)",
                    (tid, number, json.dumps(list(absent)), at),
                )
            case RaceOrdered(race_id, number, seed, entrants):
                connection.execute(
                    "INSERT INTO tournament_races VALUES (?, ?, ?, ?, ?, ?, NULL)",
                    (race_id, tid, number, seed, json.dumps(list(entrants)), at),
                )
            case ResultRecorded(result):
                connection.execute(
                    "UPDATE tournament_races SET result = ? WHERE race_id = ?",
                    (result.to_json(), result.race_id),
                )
            case Opened() | ArenaStarted() | Finished():
                status = {Opened: "open", ArenaStarted: "running", Finished: "finished"}
                connection.execute(
                    "UPDATE tournaments SET status = ? WHERE tournament_id = ?",
                    (status[type(self.event)], tid),
                )
            case _:
                pass
        if isinstance(self.event, RoundStarted):
            connection.execute(
                "UPDATE tournaments SET status = 'running' WHERE tournament_id = ?", (tid,)
            )


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
        connection.executescript(_SCHEMA)
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
    has_tables = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tournaments'"
    ).fetchone()
    if has_tables is None:
        return []
    query = "SELECT tournament_id, code, host_token_hash, settings, created_at FROM tournaments"
    rows = connection.execute(
        query + (" WHERE code = ?" if code else "") + " ORDER BY created_at, rowid",
        (code,) if code else (),
    ).fetchall()
    tournaments = []
    for tournament_id, row_code, token_hash, settings, created_at in rows:
        events = [
            (event_from_json(event), at)
            for event, at in connection.execute(
                "SELECT event, at FROM tournament_events WHERE tournament_id = ? ORDER BY seq",
                (tournament_id,),
            )
        ]
        tournaments.append(
            Tournament.restore(
                tournament_id,
                row_code,
                bytes(token_hash),
                TournamentSettings.from_dict(json.loads(settings)),
                created_at,
                events,
                seed_source,
            )
        )
    return tournaments


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
