"""The tournament store on a real SQLite file: write through the journal, read back, restart."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

from protocol.tournament import TournamentFormat, TournamentStatus
from server.journal import Journal, RaceOpened, ResultRecord
from server.journal_file import read_journal
from server.tournament import (
    Command,
    EntrantJoined,
    Join,
    Open,
    RaceOrdered,
    RecordResult,
    Remove,
    ResultRecorded,
    RoundStarted,
    StartNext,
    Tick,
    Tournament,
    TournamentSettings,
    hash_token,
)
from server.tournament_store import (
    TournamentOpened,
    TournamentStore,
    event_from_json,
    event_to_json,
    finished_but_unrecorded,
    load_tournaments,
)
from tests.tournament.racing import HOST, lost, play_order, result_of, won


class Hosted:
    """A tournament whose every change is written to the store, as the shell does it."""

    def __init__(self, store: TournamentStore, settings: TournamentSettings):
        seeds = (f"seed-{n}" for n in itertools.count(1))
        self.store = store
        self.tournament = Tournament(
            "T1", "CLUB42", hash_token(HOST), settings, 0.0, lambda: next(seeds)
        )
        store.write_now(TournamentOpened.of(self.tournament))

    def run(self, command: Command, now: float) -> list[RaceOrdered]:
        events = self.tournament.apply(command, now)
        records: list[object] = []
        for event in events:
            if isinstance(event, RaceOrdered):
                options = self.tournament.settings.race_options(len(event.entrants))
                records.append(RaceOpened(event.race_id, event.seed, options, None, now, "T1"))
        records += TournamentStore.events_of("T1", events, now)
        self.store.write_now(*records)  # type: ignore[arg-type]
        return [event for event in events if isinstance(event, RaceOrdered)]


def open_store(path: Path) -> TournamentStore:
    return TournamentStore(Journal(path))


def test_events_round_trip_through_json() -> None:
    result = result_of(RaceOrdered("r", 1, "s", ("a", "b")), won("a", 2, 3.5), lost("b", 7))
    for event in (
        EntrantJoined("a", "ann ✓", True),
        RoundStarted(2, ("x", "y")),
        RaceOrdered("T1-r1-1", 1, "seed", ("a", "b")),
        ResultRecorded(result),
    ):
        assert event_from_json(event_to_json(event)) == event


def test_a_tournament_restarted_mid_round_comes_back_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "foursquare.db"
    store = open_store(path)
    hosted = Hosted(store, TournamentSettings("club night", race_size=2, rounds=3))
    hosted.run(Open(HOST), 0.0)
    for name in "abcde":
        hosted.run(Join(name, name, bot=False), 1.0)
    settings = hosted.tournament.settings
    for order in hosted.run(StartNext(HOST), 10.0):
        hosted.run(RecordResult(play_order(order, settings, 10.0)), 20.0)
    pending = hosted.run(StartNext(HOST), 30.0)
    hosted.run(RecordResult(play_order(pending[0], settings, 30.0)), 40.0)
    hosted.run(Remove(HOST, "e"), 41.0)
    store.journal.close()

    (rebuilt,) = load_tournaments(path)
    before = hosted.tournament
    assert rebuilt.standings() == before.standings()
    assert (rebuilt.round, rebuilt.status, rebuilt.races) == (
        before.round,
        before.status,
        before.races,
    )
    assert rebuilt.is_host(HOST) and not rebuilt.is_host("other-token-000000")
    assert [r.race_id for r in rebuilt.races_in_progress()] == [o.race_id for o in pending[1:]]


def test_the_plain_tables_follow_the_events(tmp_path: Path) -> None:
    path = tmp_path / "foursquare.db"
    store = open_store(path)
    hosted = Hosted(store, TournamentSettings("club night", rounds=1))
    hosted.run(Open(HOST), 0.0)
    for name in "ab":
        hosted.run(Join(name, name, bot=False), 1.0)
    (order,) = hosted.run(StartNext(HOST), 10.0)
    hosted.run(RecordResult(result_of(order, won("a", 2, 3.0), lost("b", 4))), 20.0)
    store.journal.close()
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT status FROM tournaments").fetchall() == [("finished",)]
        assert db.execute("SELECT count(*) FROM tournament_entrants").fetchone() == (2,)
        assert db.execute("SELECT count(*) FROM tournament_rounds").fetchone() == (1,)
        race = db.execute("SELECT race_id, result IS NOT NULL FROM tournament_races").fetchall()
        assert race == [(order.race_id, 1)]
        linked = db.execute("SELECT race_id FROM races WHERE tournament_id = 'T1'").fetchall()
        assert linked == [(order.race_id,)]


def test_a_result_journaled_but_not_yet_counted_is_found_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "foursquare.db"
    store = open_store(path)
    hosted = Hosted(store, TournamentSettings("club night"))
    hosted.run(Open(HOST), 0.0)
    for name in "ab":
        hosted.run(Join(name, name, bot=False), 1.0)
    (order,) = hosted.run(StartNext(HOST), 10.0)
    result = result_of(order, won("a", 2, 3.0), lost("b", 4))
    # The race's result reached the journal; the server stopped before the tournament heard.
    store.write_now(ResultRecord(order.race_id, result, 20.0))  # type: ignore[arg-type]
    store.journal.close()

    (rebuilt,) = load_tournaments(path)
    with read_journal(path) as connection:
        assert finished_but_unrecorded(connection, rebuilt) == [result]
    rebuilt.apply(RecordResult(result), 30.0)
    assert {s.entrant_id: s.points for s in rebuilt.standings()} == {"a": 1, "b": 0}


def test_an_arena_restarted_keeps_its_window_and_pairs_again(tmp_path: Path) -> None:
    path = tmp_path / "foursquare.db"
    store = open_store(path)
    settings = TournamentSettings(
        "arena", format=TournamentFormat.ARENA, arena_duration=120.0, race_size=3
    )
    hosted = Hosted(store, settings)
    hosted.run(Open(HOST), 0.0)
    for name in "abcd":
        hosted.run(Join(name, name, bot=False), 1.0)
    first = hosted.run(StartNext(HOST), 10.0)
    hosted.run(RecordResult(play_order(first[0], settings, 10.0)), 30.0)
    store.journal.close()

    seeds = iter(["after-restart-1", "after-restart-2"])
    (rebuilt,) = load_tournaments(path, lambda: next(seeds))
    assert rebuilt.ends_at == 130.0 and rebuilt.status is TournamentStatus.RUNNING
    assert rebuilt.standings() == hosted.tournament.standings()
    (again,) = [e for e in rebuilt.apply(Tick(), 40.0) if isinstance(e, RaceOrdered)]
    assert set(again.entrants) == set(first[0].entrants)
    assert again.race_id not in hosted.tournament.races
    assert again.seed == "after-restart-1"
