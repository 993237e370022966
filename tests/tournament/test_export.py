"""The published record: built from a tournament, refuted when anything in it is changed."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from server.tournament import (
    Join,
    Open,
    RaceOrdered,
    RecordResult,
    StartNext,
    Tournament,
    TournamentSettings,
    hash_token,
)
from server.tournament_export import document_from, round_of, to_csv, verify_document
from server.tournament_host import tournament_export
from tests.tournament.racing import play_order

HOST = "host-token-0123456789"


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    """Two rounds of five entrants in races of at most three, as published."""
    seeds = (f"seed-{n}" for n in itertools.count(1))
    settings = TournamentSettings("cup", rounds=2, race_size=3)
    tournament = Tournament(
        "CUP123", "CUP123", hash_token(HOST), settings, 0.0, lambda: next(seeds)
    )
    tournament.apply(Open(HOST), 0.0)
    for name in "abcde":
        tournament.apply(Join(name, name, bot=True), 1.0)
    for now in (10.0, 1000.0):
        for event in tournament.apply(StartNext(HOST), now):
            if isinstance(event, RaceOrdered):
                tournament.apply(RecordResult(play_order(event, settings, now)), now + 300)
    return document_from(tournament_export(tournament, 2000.0))


def test_the_record_holds_up(record: dict[str, Any]) -> None:
    assert verify_document(record) == []
    assert [game["round"] for game in record["games"]] == [1, 1, 2, 2]
    assert round_of("CUP123-R2-1") == 2 and round_of("CUP123-A7") == 0


def test_a_changed_game_is_refuted(record: dict[str, Any]) -> None:
    changed = copy.deepcopy(record)
    changed["games"][0]["result"]["standings"][0]["face_up"] += 1
    assert any("race CUP123-R1-1" in problem for problem in verify_document(changed))


def test_a_round_dealt_two_seeds_is_refuted(record: dict[str, Any]) -> None:
    changed = copy.deepcopy(record)
    changed["games"][1]["round"] = 1
    changed["games"][2]["round"] = 1  # a round-two race claimed for round one
    changed["games"][2]["result"]["race_id"] = "CUP123-R1-3"
    assert any("differ in seed" in problem for problem in verify_document(changed))


def test_a_record_of_something_else_is_not_read(record: dict[str, Any]) -> None:
    assert verify_document({**record, "kind": "race"})[0].startswith("the record cannot be read")


def test_the_csv_has_a_row_per_standing_and_per_racer_per_game(record: dict[str, Any]) -> None:
    rows = to_csv(record).splitlines()
    assert rows[0].startswith("record,place,tied,entrant")
    assert sum(row.startswith("standing,") for row in rows) == 5
    assert sum(row.startswith("game,") for row in rows) == 10
