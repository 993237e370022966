"""A damaged journal never starts silently: ``foursquare serve`` (a real process) refuses it
with one sentence and exit code 2, and so does every command that reads a journal."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from protocol import RaceSnapshot
from server.journal import CommandRecord, Journal, PlayerRecord, RaceOpened, ResultRecord
from server.race import Command, Join, Place, Race, RaceOptions, Resign
from tests.conftest import ServerProcess, run_server_process
from tests.server.known_games import WON_SEED, conformance_game
from tests.server.test_durability import (
    move_after_dropping_its_table,
    open_duel,
    play_first_targets,
)
from tests.server.wire_client import WireClient

SOLO = RaceOptions(min_racers=1, max_racers=1, countdown=0.0)
RACES = 40


@dataclass(frozen=True)
class Refusal:
    """What ``foursquare`` said when it would not open a journal."""

    code: int
    stdout: str
    stderr: str

    @property
    def sentence(self) -> str:
        """The one line on stderr (the test fails if there is anything else)."""
        lines = self.stderr.strip().splitlines()
        assert "Traceback" not in self.stderr, self.stderr
        assert len(lines) == 1, self.stderr
        return lines[0]


def foursquare(*arguments: str) -> Refusal:
    """Run ``foursquare ARGUMENTS`` as a real process; one that starts serving is a failure."""
    command = [sys.executable, "-m", "cli.main", *arguments]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        stdout, stderr = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        stdout, stderr = process.communicate()
        pytest.fail(f"foursquare {' '.join(arguments)} did not refuse: {stdout!r}")
    return Refusal(process.returncode, stdout, stderr)


def serve(db: Path, *extra: str) -> Refusal:
    """``foursquare serve`` on ``db``, expected to refuse it."""
    return foursquare("serve", "--port", "0", "--db", str(db), *extra)


def assert_refused(refusal: Refusal, db: Path, problem: str) -> None:
    """Exit code 2, nothing on stdout, and one sentence: the file, what is wrong, what to do."""
    assert refusal.code == 2, refusal
    assert refusal.stdout == ""
    sentence = refusal.sentence
    assert sentence.startswith(f"error: the journal {db} "), sentence
    assert problem in sentence, sentence
    assert "restore" in sentence and "foursquare serve --new-journal" in sentence, sentence


@pytest.fixture(scope="module")
def full_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A journal of real races (half finished, half running), closed cleanly."""
    path = tmp_path_factory.mktemp("full") / "full.db"
    journal = Journal(path)
    _, moves = conformance_game(WON_SEED)
    for number in range(RACES):
        race_id, racer = f"R{number:03d}", f"p{number}"
        race = Race(race_id, WON_SEED, SOLO)
        journal.write_now(
            PlayerRecord(racer, f"token{number}".encode(), f"racer {number}", False, 0.0),
            RaceOpened(race_id, WON_SEED, SOLO, None, 0.0),
        )
        commands: list[Command] = [Join(racer, f"racer {number}", False)]
        commands += [Place(racer, move, position) for move, position in enumerate(moves, 1)]
        if number % 2:
            commands = commands[: len(commands) // 2]
        for at, command in enumerate(commands, start=1):
            race.apply(command, float(at))
            journal.write_now(CommandRecord(race_id, command, float(at)))
        if race.result is None and number % 2 == 0:
            race.apply(Resign(racer), 1000.0)
            journal.write_now(CommandRecord(race_id, Resign(racer), 1000.0))
        if race.result is not None:
            journal.write_now(ResultRecord(race_id, race.result, 1000.0))
    journal.close()
    return path


@pytest.fixture
def journal_copy(full_journal: Path, tmp_path: Path) -> Path:
    """A copy of :func:`full_journal` of this test's own."""
    copy = tmp_path / "foursquare.db"
    shutil.copy(full_journal, copy)
    return copy


def test_a_sound_journal_of_races_starts(journal_copy: Path) -> None:
    with run_server_process(journal_copy) as server:
        assert server.process.poll() is None
        assert server.terminate() == 0


def test_a_journal_truncated_to_zero_bytes_is_refused(journal_copy: Path) -> None:
    os.truncate(journal_copy, 0)
    assert_refused(serve(journal_copy), journal_copy, "is empty (0 bytes)")
    assert journal_copy.stat().st_size == 0  # left as it was found


def test_a_journal_with_a_page_scribbled_over_is_refused(journal_copy: Path) -> None:
    pages = journal_copy.stat().st_size // 4096
    assert pages > 20  # a journal of some size: the page below is one of its commands'
    with journal_copy.open("r+b") as file:
        file.seek(4096 * (pages // 2))
        file.write(random.Random(7).randbytes(4096))
    assert_refused(serve(journal_copy), journal_copy, "fails SQLite's integrity check")


def test_a_journal_whose_first_page_is_scribbled_over_is_refused(journal_copy: Path) -> None:
    with journal_copy.open("r+b") as file:
        file.seek(100)  # past the header, into the table of tables
        file.write(random.Random(8).randbytes(300))
    assert_refused(serve(journal_copy), journal_copy, "cannot be read (")


def test_a_journal_of_an_unknown_schema_version_is_refused(journal_copy: Path) -> None:
    with sqlite3.connect(journal_copy) as connection:
        connection.execute("UPDATE schema_version SET version = 99")
    connection.close()
    refusal = serve(journal_copy)
    assert_refused(refusal, journal_copy, "has schema version 99, newer than this foursquare")
    with sqlite3.connect(journal_copy) as connection:  # refused, not "migrated"
        assert connection.execute("SELECT version FROM schema_version").fetchall() == [(99,)]
    connection.close()


def test_a_journal_with_no_schema_version_is_refused(journal_copy: Path) -> None:
    with sqlite3.connect(journal_copy) as connection:
        connection.execute("DELETE FROM schema_version")
    connection.close()
    assert_refused(serve(journal_copy), journal_copy, "has no schema version")


def test_a_journal_holding_a_command_that_cannot_be_decoded_is_refused(
    journal_copy: Path,
) -> None:
    with sqlite3.connect(journal_copy) as connection:  # a race still running: R001
        connection.execute(
            "UPDATE race_commands SET command = '{\"kind\": \"pla' WHERE seq = ("
            "SELECT max(seq) FROM race_commands WHERE race_id = 'R001')"
        )
    connection.close()
    refusal = serve(journal_copy)
    assert_refused(refusal, journal_copy, "holds a record that cannot be read (JSONDecodeError")


def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "notes.db"
    db.write_text("these are my notes, not a journal\n" * 100)
    assert_refused(serve(db), db, "is not an SQLite database")
    assert db.read_text().startswith("these are my notes")


def test_an_sqlite_database_without_journal_tables_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    with sqlite3.connect(db) as connection:
        connection.execute("CREATE TABLE inventory (item TEXT)")
    connection.close()
    assert_refused(serve(db), db, "holds no journal tables")


async def killed_mid_duel(db: Path, moves: int) -> tuple[WireClient, WireClient, str]:
    """Run a server on ``db``, open a duel, play ``moves`` of ann's moves, then SIGKILL it."""
    with run_server_process(db) as server:
        ann, bob, race = await open_duel(server.url)
        await play_first_targets(ann, race, moves)
        server.kill()
    return ann, bob, race


async def resumed(server: ServerProcess, racer: WireClient) -> tuple[WireClient, int]:
    """``racer`` resumed on ``server``, and the cards it has played there."""
    back = await WireClient.connect(server.url, "again", resume=racer.welcome.resume)
    snapshot = await back.expect(RaceSnapshot)
    return back, {entry.racer: entry.cards_played for entry in snapshot.progress}[racer.racer_id]


async def test_a_copy_without_its_wal_after_a_kill_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "live" / "foursquare.db"
    db.parent.mkdir()
    ann, bob, _ = await killed_mid_duel(db, 4)
    assert Path(f"{db}-wal").stat().st_size > 0
    copy = tmp_path / "copy" / "foursquare.db"
    copy.parent.mkdir()
    shutil.copy(db, copy)  # the file alone, as a careless backup takes it
    refusal = serve(copy)
    assert_refused(refusal, copy, "was not closed cleanly and its write-ahead log")
    assert "foursquare.db-wal" in refusal.sentence
    # Refusing it created nothing beside it.
    assert sorted(path.name for path in copy.parent.iterdir()) == ["foursquare.db"]
    # The original, with its log, starts with every acknowledged move.
    with run_server_process(db) as again:
        back, played = await resumed(again, ann)
        assert played == 4
        await back.close()
    for client in (ann, bob):
        await client.close()


async def test_restarts_after_a_kill_and_after_sigterm_keep_every_acknowledged_move(
    tmp_path: Path,
) -> None:
    db = tmp_path / "foursquare.db"
    ann, bob, race = await killed_mid_duel(db, 2)
    with run_server_process(db) as second:  # killed: its log is beside it
        back, played = await resumed(second, ann)
        assert played == 2
        await play_first_targets(back, race, 2)
        assert second.terminate() == 0
    # Stopped cleanly: the file holds everything and needs no log, so a copy of the file
    # alone is a whole journal.
    assert not Path(f"{db}-wal").exists()
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)
    for journal in (db, copy):
        with run_server_process(journal) as third:
            again, played = await resumed(third, ann)
            assert played == 4
            await again.close()
            assert third.terminate() == 0
    for client in (ann, bob, back):
        await client.close()


async def test_a_journal_that_fails_while_serving_stops_the_server_with_one_sentence(
    tmp_path: Path,
) -> None:
    db = tmp_path / "foursquare.db"
    with run_server_process(db) as server:
        ann, bob, race = await open_duel(server.url)
        await play_first_targets(ann, race, 1)
        await move_after_dropping_its_table(db, ann, race)
        assert await asyncio.to_thread(server.process.wait, 20) == 1
    last = db.with_suffix(".log").read_text().strip().splitlines()[-1]
    assert last.startswith(f"error: the journal {db} failed while the server ran ("), last
    assert "start it again" in last
    # Started again, it says what is wrong with the journal now.
    assert_refused(serve(db), db, "is missing the journal tables race_commands")
    for client in (ann, bob):
        await client.close()


def test_new_journal_moves_the_damaged_files_aside_and_starts(tmp_path: Path) -> None:
    db = tmp_path / "foursquare.db"
    db.write_bytes(b"")
    Path(f"{db}-wal").write_bytes(b"not a log")
    with run_server_process(db, "--new-journal") as server:
        assert server.terminate() == 0
    log = db.with_suffix(".log").read_text()
    aside = sorted(path.name for path in tmp_path.glob("foursquare.db.damaged-*"))
    assert len(aside) == 2 and aside[1] == aside[0] + "-wal", aside
    assert (tmp_path / aside[0]).read_bytes() == b""  # moved, not deleted or changed
    assert (tmp_path / aside[1]).read_bytes() == b"not a log"
    warning = next(line for line in log.splitlines() if line.startswith("warning:"))
    assert f"the journal {db} is empty (0 bytes)" in warning
    assert str(tmp_path / aside[0]) in warning and str(tmp_path / aside[1]) in warning
    # What is at the journal's path now is a new journal, and a sound one.
    with run_server_process(db) as again:
        assert again.terminate() == 0


def test_new_journal_leaves_a_sound_journal_as_it_is(journal_copy: Path) -> None:
    with run_server_process(journal_copy, "--new-journal") as server:
        assert server.terminate() == 0
    assert not list(journal_copy.parent.glob("*.damaged-*"))
    with sqlite3.connect(journal_copy) as connection:
        assert connection.execute("SELECT count(*) FROM races").fetchone() == (RACES,)
    connection.close()


def test_every_command_that_reads_a_journal_refuses_it_the_same_way(
    journal_copy: Path,
) -> None:
    os.truncate(journal_copy, 0)
    served = serve(journal_copy).sentence
    for arguments in (
        ("result", "R000", "--db", str(journal_copy)),
        ("tournament", "export", "CODE", "--db", str(journal_copy)),
    ):
        refusal = foursquare(*arguments)
        assert refusal.code == 2 and refusal.sentence == served, refusal
