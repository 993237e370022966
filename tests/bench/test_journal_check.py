"""The journal-check benchmark builds the journal it says it does, and the check passes it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bench.journal_check import build
from server.journal import SCHEMA_VERSION, Journal
from server.journal_file import check_journal


def test_the_benchmark_journal_holds_the_commands_asked_for_and_passes_the_check(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bench.db"
    build(path, 1_234)
    assert check_journal(path) == SCHEMA_VERSION
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT count(*) FROM race_commands").fetchone() == (1_234,)
    connection.close()
    assert len(Journal.load(path).races) == 3  # 489 commands a race (8 joins, a start, 480 moves)
