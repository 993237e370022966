"""The result record: the standings rule, its round trip, and verification."""

from __future__ import annotations

import dataclasses

import pytest

from engine import Ruleset, replay
from protocol.result import (
    RaceResult,
    RacerOutcome,
    RacerResult,
    rank_racers,
    verify_result,
)
from tests.server.known_games import LOST_SEED, WON_SEED, conformance_game


def entry(
    racer_id: str,
    outcome: RacerOutcome,
    score: int | None = None,
    finish: float | None = None,
    face_up: int = 0,
    played: int = 0,
) -> RacerResult:
    return RacerResult(racer_id, racer_id, False, outcome, score, finish, played, face_up, 0, ())


def test_standings_put_winners_first_by_score_then_time_then_the_rest_by_face_up_then_played(
) -> None:
    entries = [
        entry("lost-many-up", RacerOutcome.LOST, face_up=9, played=30),
        entry("won-slow", RacerOutcome.WON, score=3, finish=90.0),
        entry("resigned-few-up", RacerOutcome.RESIGNED, face_up=2, played=35),
        entry("won-fast", RacerOutcome.WON, score=3, finish=60.0),
        entry("won-best", RacerOutcome.WON, score=5, finish=99.0),
        entry("timed-out-same-up-more-played", RacerOutcome.TIMED_OUT, face_up=9, played=33),
    ]
    assert [e.racer_id for e in rank_racers(entries)] == [
        "won-best",
        "won-fast",
        "won-slow",
        "timed-out-same-up-more-played",
        "lost-many-up",
        "resigned-few-up",
    ]


def played_entry(racer_id: str, seed: str, outcome: RacerOutcome, count: int | None) -> RacerResult:
    _, moves = conformance_game(seed)
    moves = moves[:count] if count is not None else moves
    game = replay(seed, moves)
    return RacerResult(
        racer_id, racer_id, racer_id == "bot", outcome, game.score, 12.5,
        game.cards_played, game.face_up, game.face_down, moves,
    )


@pytest.fixture
def won_result() -> RaceResult:
    return RaceResult.build(
        "r1",
        WON_SEED,
        Ruleset(),
        [
            played_entry("resigner", WON_SEED, RacerOutcome.RESIGNED, 7),
            played_entry("winner", WON_SEED, RacerOutcome.WON, None),
        ],
    )


def test_a_true_result_verifies_and_survives_json(won_result: RaceResult) -> None:
    assert [e.racer_id for e in won_result.racers] == ["winner", "resigner"]
    assert verify_result(won_result).ok
    assert RaceResult.from_json(won_result.to_json()) == won_result


def test_a_wrong_seed_is_refuted(won_result: RaceResult) -> None:
    forged = dataclasses.replace(won_result, seed=LOST_SEED)
    problems = verify_result(forged).problems
    assert any("commitment" in p for p in problems)


def test_an_inflated_score_is_refuted(won_result: RaceResult) -> None:
    winner = dataclasses.replace(won_result.racers[0], score=20)
    forged = dataclasses.replace(won_result, racers=(winner, won_result.racers[1]))
    assert any("replay gives" in p for p in verify_result(forged).problems)


def test_an_illegal_move_and_a_false_outcome_are_refuted(won_result: RaceResult) -> None:
    resigner = won_result.racers[1]
    bad_move = dataclasses.replace(resigner, moves=(*resigner.moves, (9, 9)))
    false_win = dataclasses.replace(resigner, outcome=RacerOutcome.WON)
    for forged_entry, words in ((bad_move, "illegal"), (false_win, "claimed won")):
        forged = dataclasses.replace(won_result, racers=(won_result.racers[0], forged_entry))
        assert any(words in p for p in verify_result(forged).problems)


def test_standings_out_of_order_are_refuted(won_result: RaceResult) -> None:
    swapped = dataclasses.replace(won_result, racers=won_result.racers[::-1])
    assert any("standings" in p for p in verify_result(swapped).problems)


@pytest.mark.parametrize(
    "text",
    ["[]", "{}", '{"format": 1}', '{"format": 2, "standings": []}', "not json"],
)
def test_malformed_records_are_refused_with_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        RaceResult.from_json(text)


def test_equal_boards_rank_a_game_played_out_then_one_timed_out_then_one_given_up() -> None:
    # Nobody won and the boards are alike: whoever resigned (or left) is not first,
    # whatever order they joined in.
    entries = [
        entry("resigned", RacerOutcome.RESIGNED, finish=5.0, face_up=1, played=1),
        entry("timed-out", RacerOutcome.TIMED_OUT, face_up=1, played=1),
        entry("lost", RacerOutcome.LOST, finish=80.0, face_up=1, played=1),
    ]
    assert [e.racer_id for e in rank_racers(entries)] == ["lost", "timed-out", "resigned"]


def test_equal_boards_and_ends_rank_the_earlier_finisher_then_the_racer_id() -> None:
    later = entry("a-later", RacerOutcome.RESIGNED, finish=9.0, face_up=2, played=3)
    earlier = entry("b-earlier", RacerOutcome.RESIGNED, finish=4.0, face_up=2, played=3)
    assert rank_racers([later, earlier]) == [earlier, later]
    # Alike to the millisecond (what a result publishes): the racer id decides, so anyone
    # ranking the record gets the same order, and verify checks it.
    twin = dataclasses.replace(earlier, racer_id="a-twin", finish_time=4.0004)
    assert rank_racers([earlier, twin]) == [twin, earlier]
    result = RaceResult("r1", "seed", "", Ruleset(), (earlier, twin))
    assert "the standings are not in the order" in " ".join(verify_result(result).problems)
