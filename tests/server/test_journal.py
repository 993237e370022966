"""The journal on real SQLite files: durability, group commit, and recovery by replay."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import Role
from server.journal import (
    SCHEMA_VERSION,
    CommandRecord,
    Journal,
    PlayerRecord,
    PlayersForgotten,
    RaceOpened,
    ResultRecord,
    StoppedWatching,
    StoredRace,
    Sync,
    Watching,
    _command_to_json,
    command_from_json,
    command_to_json,
    rebuild,
)
from server.journal_file import JournalRefused, check_journal, read_only
from server.race import (
    Command,
    Disconnect,
    Join,
    Leave,
    Phase,
    Place,
    Race,
    RaceOptions,
    Resign,
    SetReady,
    Start,
    Tick,
)
from tests.server.known_games import WON_SEED, conformance_game

OPTIONS = RaceOptions(min_racers=2, max_racers=3, countdown=2.0, progress_interval=0.0)


@pytest.fixture
def journal(tmp_path: Path) -> Iterator[Journal]:
    journal = Journal(tmp_path / "journal.db")
    yield journal
    journal.close()


def journaled(journal: Journal, race: Race, command: Command, now: float) -> None:
    """Apply ``command`` the way the server does: journal it when it changed the race."""
    revision = race.revision
    race.apply(command, now)
    if race.revision != revision and not isinstance(command, Tick):
        journal.write_now(CommandRecord(race.race_id, command, now))


def test_the_journal_is_in_wal_mode(journal: Journal) -> None:
    with sqlite3.connect(journal.path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize(
    "command",
    [
        Join("p1", "ann ü", True),
        Leave("p1"),
        SetReady("p1", True),
        Start(),
        Tick(),
        Place("p1", 3, (-1, 2)),
        Resign("p1"),
        Disconnect("p1"),
    ],
)
def test_every_command_round_trips_through_its_stored_form(command: Command) -> None:
    assert command_from_json(command_to_json(command)) == command


def test_an_unfinished_race_is_rebuilt_exactly_by_replaying_its_commands(
    journal: Journal,
) -> None:
    race = Race("r1", WON_SEED, OPTIONS, code="ABCD")
    journal.write_now(
        PlayerRecord("p1", b"h1", "ann", False, 0.0),
        RaceOpened("r1", WON_SEED, OPTIONS, "ABCD", 0.0),
    )
    journaled(journal, race, Join("p1", "ann", False), 1.0)
    journaled(journal, race, Join("p2", "bob", True), 2.0)
    journaled(journal, race, Start(), 4.0)
    _, moves = conformance_game(WON_SEED)
    for number, move in enumerate(moves[:10], start=1):
        journaled(journal, race, Place("p1", number, move), 4.0 + number)
    journaled(journal, race, Place("p1", 3, moves[2]), 20.0)  # a retry: nothing to journal
    journaled(journal, race, Resign("p2"), 21.0)
    journal.close()

    recovered = Journal.load(journal.path)
    assert [p.player_id for p in recovered.players] == ["p1"]
    (stored,) = recovered.races
    assert len(stored.commands) == 2 + 1 + 10 + 1
    rebuilt = rebuild(stored)
    assert rebuilt.phase is Phase.RUNNING and rebuilt.code == "ABCD"
    assert rebuilt.progress_lines() == race.progress_lines()
    assert rebuilt.racer_view("p1", now=30.0) == race.racer_view("p1", now=30.0)


def test_a_finished_race_is_not_recovered_and_its_result_can_be_read_back(
    journal: Journal,
) -> None:
    race = Race("r2", WON_SEED, RaceOptions(min_racers=1, max_racers=1))
    journal.write_now(RaceOpened("r2", WON_SEED, race.options, None, 0.0))
    journaled(journal, race, Join("p1", "ann", False), 1.0)
    journaled(journal, race, Resign("p1"), 2.0)
    assert race.result is not None
    journal.write_now(ResultRecord("r2", race.result, 2.0))
    assert Journal.load(journal.path).races == ()
    assert Journal.load_result(journal.path, "r2") == race.result
    assert Journal.load_result(journal.path, "nope") is None


async def test_writes_from_the_event_loop_are_grouped_into_few_transactions(
    journal: Journal,
) -> None:
    journal.write_now(RaceOpened("r3", "s", OPTIONS, None, 0.0))
    writes = [
        journal.write(CommandRecord("r3", Place("p", n, (0, 0)), float(n))) for n in range(300)
    ]
    await asyncio.gather(*writes)
    assert journal.records_committed == 301
    # 300 writes queued at once cannot each have had a transaction of their own.
    assert journal.batches_committed < 300
    recovered = Journal.load(journal.path)
    assert len(recovered.races[0].commands) == 300


async def test_the_event_loop_commits_what_it_submitted_itself(journal: Journal) -> None:
    await journal.write(RaceOpened("r5", "s", OPTIONS, None, 0.0))
    await asyncio.gather(
        *(journal.write(CommandRecord("r5", Place("p", n, (0, 0)), float(n))) for n in (1, 2))
    )
    assert (journal.loop_commits, journal.batches_committed) == (2, 2)
    (stored,) = Journal.load(journal.path).races
    assert [r.command for r in stored.commands] == [Place("p", n, (0, 0)) for n in (1, 2)]


async def test_with_full_sync_the_writer_thread_commits_everything(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.db", sync=Sync.FULL)
    try:
        await journal.write(RaceOpened("r6", "s", OPTIONS, None, 0.0))
        assert (journal.loop_commits, journal.batches_committed) == (0, 1)
    finally:
        journal.close()


async def test_a_locked_journal_sends_the_loops_records_to_the_writer_in_order(
    journal: Journal,
) -> None:
    await journal.write(RaceOpened("r7", "s", OPTIONS, None, 0.0))
    # Another connection holds the write lock, as a RESTART checkpoint does.
    holder = sqlite3.connect(journal.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    first = journal.submit(CommandRecord("r7", Place("p", 1, (0, 0)), 1.0))
    started = time.monotonic()
    for _ in range(3):
        await asyncio.sleep(0)  # the hand-over: the loop's commit fails, the writer waits
    # The loop ran on: it did not wait out the lock (the writer waits up to 5 s).
    assert time.monotonic() - started < 2.5
    # The writer's busy handler now sleeps tens of milliseconds between its tries, so
    # for a while after the lock is released its transaction is still pending, and the
    # loop's next records go behind it, though nothing locks them out any more.
    await asyncio.sleep(0.2)
    holder.execute("COMMIT")
    second = journal.submit(CommandRecord("r7", Place("p", 2, (0, 0)), 2.0))
    await asyncio.gather(journal.wait(first), journal.wait(second))
    holder.close()
    assert journal.loop_commits == 1  # only the race's opening
    await journal.write(CommandRecord("r7", Place("p", 3, (0, 0)), 3.0))
    assert journal.loop_commits == 2  # the writer is idle again: the loop commits
    (stored,) = Journal.load(journal.path).races
    assert [r.command for r in stored.commands] == [Place("p", n, (0, 0)) for n in (1, 2, 3)]


def test_a_failed_write_is_reported_and_the_journal_keeps_working(journal: Journal) -> None:
    journal.write_now(RaceOpened("r4", "s", OPTIONS, None, 0.0))
    with pytest.raises(sqlite3.IntegrityError):
        journal.write_now(RaceOpened("r4", "s", OPTIONS, None, 0.0))
    journal.write_now(CommandRecord("r4", Join("p", "p", False), 1.0))
    (stored,) = Journal.load(journal.path).races
    joined = CommandRecord("r4", Join("p", "p", False), 1.0)
    assert stored == StoredRace(RaceOpened("r4", "s", OPTIONS, None, 0.0), (joined,))


async def test_a_write_that_fails_in_the_loop_is_reported_and_nothing_of_it_stays(
    journal: Journal,
) -> None:
    await journal.write(RaceOpened("r9", "s", OPTIONS, None, 0.0))
    # The loop's transaction fails after its first insert and is rolled back; the writer
    # tries again, fails the same way, and says so.
    with pytest.raises(sqlite3.IntegrityError):
        await journal.write(
            CommandRecord("r9", Join("p", "p", False), 1.0),
            RaceOpened("r9", "s", OPTIONS, None, 0.0),
        )
    await journal.write(CommandRecord("r9", Join("q", "q", False), 2.0))
    assert journal.loop_commits == 2  # the loop commits again once the writer is idle
    (stored,) = Journal.load(journal.path).races
    assert [r.command for r in stored.commands] == [Join("q", "q", False)]


def test_a_closed_journal_refuses_writes(journal: Journal) -> None:
    journal.close()
    with pytest.raises(RuntimeError):
        journal.submit(PlayerRecord("p", b"h", "n", False, 0.0))


async def test_a_batch_keeps_every_record_in_order_across_tables(journal: Journal) -> None:
    # Submitted in one loop iteration, these share one transaction: runs of commands go
    # in as multi-row inserts, interleaved with other records, and keep their order.
    writes = [journal.write(RaceOpened("a", "s", OPTIONS, None, 0.0))]
    for n in range(1, 701):
        writes.append(journal.write(CommandRecord("a", Place("p", n, (0, 0)), float(n))))
        if n == 350:
            writes.append(journal.write(RaceOpened("b", "s", OPTIONS, None, 0.0)))
            writes.append(journal.write(PlayerRecord("p", b"h", "ann", False, 0.0)))
        if n > 350:
            writes.append(journal.write(CommandRecord("b", Resign(f"r{n}"), float(n))))
    await asyncio.gather(*writes)
    assert journal.batches_committed == 1
    races = {stored.opened.race_id: stored for stored in Journal.load(journal.path).races}
    assert [r.command for r in races["a"].commands] == [
        Place("p", n, (0, 0)) for n in range(1, 701)
    ]
    assert [r.command for r in races["b"].commands] == [Resign(f"r{n}") for n in range(351, 701)]


def test_a_spectator_is_stored_as_one(journal: Journal) -> None:
    journal.write_now(
        PlayerRecord("p1", b"h1", "ann", False, 0.0),
        PlayerRecord("w1", b"h2", "eve", False, 0.0, Role.SPECTATOR),
    )
    roles = {p.player_id: p.role for p in Journal.load(journal.path).players}
    assert roles == {"p1": Role.PLAYER, "w1": Role.SPECTATOR}


def test_a_version_1_journal_is_migrated_and_its_players_stay_players(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:
        # Version 1's tables as it wrote them: players without a role, commands with
        # AUTOINCREMENT and an index by race.
        connection.executescript(
            VERSION_3.replace("seq INTEGER PRIMARY KEY", "seq INTEGER PRIMARY KEY AUTOINCREMENT")
            .replace(",\n    role TEXT NOT NULL DEFAULT 'player'", "")
            + "INSERT INTO schema_version VALUES (1);"
            "INSERT INTO players VALUES ('p1', x'00', 'ann', 0, 0.0);"
        )
    connection.close()
    journal = Journal(path)
    journal.write_now(PlayerRecord("w1", b"h2", "eve", False, 1.0, Role.SPECTATOR))
    journal.close()
    roles = {p.player_id: p.role for p in Journal.load(path).players}
    assert roles == {"p1": Role.PLAYER, "w1": Role.SPECTATOR}
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT version FROM schema_version").fetchall() == [
            (SCHEMA_VERSION,)
        ]
    connection.close()


#: The tables of a version 3 journal (version 2: the same with AUTOINCREMENT), as written.
VERSION_3 = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE players (player_id TEXT PRIMARY KEY, token_hash BLOB NOT NULL UNIQUE,
    name TEXT NOT NULL, bot INTEGER NOT NULL, created_at REAL NOT NULL,
    role TEXT NOT NULL DEFAULT 'player');
CREATE TABLE races (race_id TEXT PRIMARY KEY, code TEXT, seed TEXT NOT NULL,
    options TEXT NOT NULL, tournament_id TEXT, created_at REAL NOT NULL, finished_at REAL);
CREATE TABLE race_commands (seq INTEGER PRIMARY KEY,
    race_id TEXT NOT NULL REFERENCES races(race_id), command TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX race_commands_by_race ON race_commands (race_id, seq);
CREATE TABLE results (race_id TEXT PRIMARY KEY REFERENCES races(race_id), result TEXT NOT NULL);
"""


def _indexes_of_race_commands(connection: sqlite3.Connection) -> list[tuple[str]]:
    return connection.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'race_commands'"
    ).fetchall()


def test_a_version_2_journal_loses_autoincrement_and_keeps_its_commands_in_order(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v2.db"
    version_2 = VERSION_3.replace(
        "seq INTEGER PRIMARY KEY,", "seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    )
    assert version_2 != VERSION_3
    with sqlite3.connect(path) as connection:
        connection.executescript(version_2 + "INSERT INTO schema_version VALUES (2);")
        connection.execute(
            "INSERT INTO races VALUES ('r8', NULL, 's', ?, NULL, 0.0, NULL)",
            (json.dumps(OPTIONS.to_dict()),),
        )
        for n in (1, 2):  # seq 10 and 20: the rows keep their own
            connection.execute(
                "INSERT INTO race_commands VALUES (?, 'r8', ?, ?)",
                (10 * n, command_to_json(Place("p", n, (0, 0))), float(n)),
            )
    connection.close()
    journal = Journal(path)
    journal.write_now(CommandRecord("r8", Place("p", 3, (0, 0)), 3.0))
    journal.close()
    (stored,) = Journal.load(path).races
    assert [r.command for r in stored.commands] == [Place("p", n, (0, 0)) for n in (1, 2, 3)]
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT version FROM schema_version").fetchall() == [
            (SCHEMA_VERSION,)
        ]
        (sql,) = connection.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'race_commands'"
        ).fetchone()
        assert "AUTOINCREMENT" not in sql
        assert connection.execute("SELECT seq FROM race_commands").fetchall() == [
            (10,), (20,), (21,)
        ]
        assert _indexes_of_race_commands(connection) == []
    connection.close()


def test_a_version_3_journal_loses_its_index_by_race_and_recovers_the_same_races(
    tmp_path: Path,
) -> None:
    path = tmp_path / "v3.db"
    options = json.dumps(OPTIONS.to_dict())
    with sqlite3.connect(path) as connection:
        connection.executescript(VERSION_3 + "INSERT INTO schema_version VALUES (3);")
        for race_id in ("done", "on", "empty"):
            connection.execute(
                "INSERT INTO races VALUES (?, NULL, 's', ?, NULL, 0.0, NULL)", (race_id, options)
            )
        # Interleaved, as races run side by side: "done" has finished, "empty" has no
        # command yet.
        for seq, race_id, n in [(5, "done", 1), (6, "on", 1), (7, "done", 2), (8, "on", 2)]:
            connection.execute(
                "INSERT INTO race_commands VALUES (?, ?, ?, ?)",
                (seq, race_id, command_to_json(Place("p", n, (0, 0))), float(seq)),
            )
        connection.execute("INSERT INTO results VALUES ('done', '{}')")
    connection.close()
    journal = Journal(path)
    journal.write_now(CommandRecord("empty", Place("p", 1, (0, 0)), 9.0))
    journal.close()
    with sqlite3.connect(path) as connection:
        assert _indexes_of_race_commands(connection) == []
        after = dict(connection.execute("SELECT race_id, commands_after FROM races"))
        assert after == {"done": 4, "on": 5, "empty": 8}
    connection.close()
    races = {stored.opened.race_id: stored for stored in Journal.load(path).races}
    assert sorted(races) == ["empty", "on"]
    assert [r.command for r in races["on"].commands] == [Place("p", n, (0, 0)) for n in (1, 2)]
    assert [r.command for r in races["empty"].commands] == [Place("p", 1, (0, 0))]


def test_recovery_reads_the_commands_from_the_oldest_unfinished_race_on(
    journal: Journal,
) -> None:
    # Each race notes the last command before it opened, so recovery reads a range of
    # the commands in their order, not every command ever journaled, and needs no index.
    opened = [RaceOpened(race_id, "s", OPTIONS, None, 0.0) for race_id in ("a", "b", "c")]
    journal.write_now(opened[0], CommandRecord("a", Place("p", 1, (0, 0)), 1.0))
    journal.write_now(opened[1], CommandRecord("b", Place("p", 1, (0, 0)), 2.0))
    journal.write_now(CommandRecord("a", Place("p", 2, (0, 0)), 3.0), opened[2])
    journal.write_now(CommandRecord("c", Place("p", 1, (0, 0)), 4.0))
    journal.write_now(CommandRecord("b", Place("p", 2, (0, 0)), 5.0))
    path = journal.path
    journal.close()
    with sqlite3.connect(path) as connection:
        after = dict(connection.execute("SELECT race_id, commands_after FROM races"))
        assert after == {"a": 0, "b": 1, "c": 3}
        plan = " ".join(
            row[-1]
            for row in connection.execute(
                "EXPLAIN QUERY PLAN SELECT race_id, command, at FROM race_commands"
                " WHERE seq > ? ORDER BY seq",
                (1,),
            )
        )
        assert "INTEGER PRIMARY KEY" in plan  # a range of the rowid, not a scan
    connection.close()
    races = {stored.opened.race_id: stored for stored in Journal.load(path).races}
    assert {race_id: [r.at for r in stored.commands] for race_id, stored in races.items()} == {
        "a": [1.0, 3.0], "b": [2.0, 5.0], "c": [4.0]
    }


@pytest.mark.parametrize("sync", list(Sync))
def test_either_sync_mode_commits_and_recovers(tmp_path: Path, sync: Sync) -> None:
    journal = Journal(tmp_path / "j.db", sync=sync)
    journal.write_now(PlayerRecord("p1", b"h1", "ann", False, 0.0))
    journal.close()
    with sqlite3.connect(tmp_path / "j.db") as connection:
        (mode,) = connection.execute("PRAGMA journal_mode").fetchone()
    connection.close()
    assert mode == "wal"
    assert [p.name for p in Journal.load(tmp_path / "j.db").players] == ["ann"]


def test_the_checkpointer_keeps_the_wal_bounded_under_constant_writes(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    journal = Journal(path, checkpoint_interval=0.01, wal_restart_pages=20)
    journal.write_now(RaceOpened("r9", "s", OPTIONS, None, 0.0))
    wal = Path(f"{path}-wal")
    largest = 0
    # One small transaction after another, as moves arrive: the writer itself never
    # checkpoints, so without the checkpointer the WAL would hold every one of them.
    for number in range(1, 1501):
        journal.write_now(CommandRecord("r9", Place("p", number, (0, 0)), float(number)))
        largest = max(largest, wal.stat().st_size)
    journal.close()
    with sqlite3.connect(path) as connection:
        page_size = connection.execute("PRAGMA page_size").fetchone()[0]
    # Those commits write about three pages each (4,600 frames without checkpoints); here
    # the WAL was restarted again and again, the writer hammering it all the while.
    assert largest < 1500 * (page_size + 24)
    assert len(Journal.load(path).races[0].commands) == 1500


@given(
    racer_id=st.text(max_size=40),
    move_number=st.integers(min_value=-(2**40), max_value=2**40),
    position=st.tuples(st.integers(-5, 5), st.integers(-5, 5)),
)
def test_a_move_is_journaled_as_the_general_encoding_would_write_it(
    racer_id: str, move_number: int, position: tuple[int, int]
) -> None:
    move = Place(racer_id, move_number, position)
    assert command_to_json(move) == _command_to_json(move)
    assert command_from_json(command_to_json(move)) == move


def _mark_in_file(path: Path) -> int:
    """The open mark as the file alone holds it (what a copy without the log would say)."""
    with contextlib.closing(read_only(path, immutable=True)) as connection:
        ((is_open,),) = connection.execute("SELECT open FROM journal_state").fetchall()
    return int(is_open)


def test_the_file_itself_says_open_while_a_journal_is_open_and_closed_after(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.db"
    journal = Journal(path)
    assert _mark_in_file(path) == 1
    journal.write_now(PlayerRecord("p1", b"h", "ann", False, 0.0))
    journal.close()
    assert _mark_in_file(path) == 0
    assert not (tmp_path / "j.db-wal").exists()  # everything is in the file


def test_a_new_journal_is_built_under_another_name_and_renamed_whole(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    (tmp_path / "j.db.new").write_bytes(b"left by a start killed while building")
    Journal(path).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.db"]
    assert check_journal(path) == SCHEMA_VERSION


def test_a_missing_file_with_its_log_beside_it_is_not_a_new_journal(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    (tmp_path / "j.db-wal").write_bytes(b"frames of a journal whose file is gone")
    with pytest.raises(JournalRefused, match="is missing, but its write-ahead log") as refused:
        Journal(path)
    assert refused.value.damaged and not path.exists()


def test_a_journal_without_its_open_mark_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "j.db"
    Journal(path).close()
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM journal_state")
    connection.close()
    with pytest.raises(JournalRefused, match="has a garbled open mark"):
        Journal(path)


def test_reading_a_journal_that_does_not_exist_is_refused_without_creating_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "nothing.db"
    with pytest.raises(JournalRefused, match="does not exist") as refused:
        Journal.load_result(path, "R1")
    assert not refused.value.damaged and list(tmp_path.iterdir()) == []


def test_reading_a_killed_servers_journal_leaves_its_log_for_the_next_start(
    tmp_path: Path,
) -> None:
    path = tmp_path / "j.db"
    killed = (
        "import os, sys\n"
        "from server.journal import Journal, PlayerRecord\n"
        "journal = Journal(sys.argv[1])\n"
        "journal.write_now(PlayerRecord('p1', b'h', 'ann', False, 0.0))\n"
        "os._exit(0)  # no close: as a killed server leaves it\n"
    )
    subprocess.run([sys.executable, "-c", killed, str(path)], check=True)
    log = tmp_path / "j.db-wal"
    assert log.stat().st_size > 0
    assert [p.name for p in Journal.load(path).players] == ["ann"]
    # A connection that could write would have copied the log into the file and deleted
    # it on closing, and the next start would take the file for a copy without its log.
    assert log.stat().st_size > 0
    Journal(path).close()


def test_a_version_6_journal_gains_what_its_players_watch(tmp_path: Path) -> None:
    """Version 7 journals the races each player spectates: an older journal gets the table
    empty, and a player's rows go when it stops watching or is forgotten."""
    path = tmp_path / "v6.db"
    Journal(path).close()
    with sqlite3.connect(path) as connection:
        connection.executescript("DROP TABLE watching; UPDATE schema_version SET version = 6;")
    connection.close()
    journal = Journal(path)
    journal.write_now(
        PlayerRecord("eve", b"h1", "eve", False, 0.0, Role.SPECTATOR),
        PlayerRecord("ann", b"h2", "ann", False, 0.0),
        *(Watching("eve", race) for race in ("R1", "R2", "R3", "R2")),
        Watching("ann", "R1"),
        StoppedWatching("eve", ("R1",)),
    )
    assert Journal.load(path).watching == (
        Watching("eve", "R2"), Watching("eve", "R3"), Watching("ann", "R1"),
    )
    journal.write_now(PlayersForgotten(("eve",)))
    journal.close()
    assert Journal.load(path).watching == (Watching("ann", "R1"),)
    assert check_journal(path) == SCHEMA_VERSION == 11


def test_a_version_8_journal_gains_claimed_players(tmp_path: Path) -> None:
    """Version 9 keeps which claimed player a session plays as, and the claimed names:
    an older journal gets the column (no session of its played as one) and the tables."""
    path = tmp_path / "v8.db"
    Journal(path).close()
    with sqlite3.connect(path) as connection:
        connection.executescript(
            "ALTER TABLE players DROP COLUMN claimed_by; DROP TABLE claimed_players;"
            " DROP TABLE claimed_names; UPDATE schema_version SET version = 8;"
        )
    connection.close()
    journal = Journal(path)
    journal.write_now(
        PlayerRecord("ann", b"h1", "ann", False, 0.0, claimed_by="u-1"),
        PlayerRecord("bob", b"h2", "bob", False, 0.0),
    )
    journal.close()
    assert {p.player_id: p.claimed_by for p in Journal.load(path).players} == {
        "ann": "u-1", "bob": None,
    }
    assert check_journal(path) == SCHEMA_VERSION
