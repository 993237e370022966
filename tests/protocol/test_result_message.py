"""``finished`` carries a result that ``verify_result`` accepts, through the wire and back."""

from __future__ import annotations

from engine import Game, Ruleset
from protocol import RaceFinished, RacerStatus, decode_server, encode
from protocol.result import RaceResult, RacerOutcome, RacerResult, verify_result


def _played_result() -> RaceResult:
    seed = "protocol test seed"
    game = Game.new(seed)
    while not game.is_over():
        game.play(game.legal_moves()[0])
    outcome = RacerOutcome.WON if game.score is not None else RacerOutcome.LOST
    player = RacerResult(
        "p1", "Ann", False, outcome, game.score, 12.3456, game.cards_played,
        game.face_up, game.face_down, tuple(game.moves),
    )
    quitter = RacerResult("p2", "bot-1", True, RacerOutcome.RESIGNED, None, 1.0, 0, 0, 0, ())
    return RaceResult.build("r-1", seed, Ruleset(), [player, quitter])


def test_finished_round_trips_to_a_verified_result() -> None:
    result = _played_result()
    message = RaceFinished.from_result(result, started_at=1_000, ended_at=20_000, reply_to=4)
    assert [s.place for s in message.standings] == [1, 2]
    assert message.standings[0].finish_ms == 12_346
    received = decode_server(encode(message))
    assert received == message
    back = received.to_result()
    assert verify_result(back).ok
    assert [r.racer_id for r in back.racers] == [r.racer_id for r in result.racers]
    assert back.racers[1].outcome is RacerOutcome.RESIGNED
    assert received.standings[1].status is RacerStatus.RESIGNED
