"""Tournament messages on the wire: registered with the codec, strictly checked."""

from __future__ import annotations

import msgpack
import pytest

from protocol import ErrorCode, ProtocolError, RaceFinished, decode_client, decode_server
from protocol.result import RaceResult
from protocol.tournament import (
    CreateTournament,
    EntrantState,
    ExportTournament,
    HostAction,
    TournamentControl,
    TournamentExport,
    TournamentFormat,
    TournamentOptions,
    TournamentStanding,
    TournamentState,
    TournamentStatus,
    encode_tournament,
)
from tests.tournament.racing import lost, won


def state() -> TournamentState:
    line = TournamentStanding(
        place=1,
        tied=False,
        entrant="p1",
        name="ann",
        bot=True,
        state=EntrantState.ACTIVE,
        points=3,
        stock_left=4,
        time_ms=9000,
        games=1,
    )
    return TournamentState(
        tournament="CLUB42",
        name="club night",
        format=TournamentFormat.ARENA,
        status=TournamentStatus.RUNNING,
        paused=False,
        ending=False,
        round=0,
        rounds=0,
        time_limit=60,
        standings=(line,),
        races=(),
        server_time=5,
        ends_at=1000,
    )


def test_client_messages_round_trip() -> None:
    for message in (
        CreateTournament(options=TournamentOptions(name="cup", format=TournamentFormat.ARENA)),
        TournamentControl(
            tournament="CLUB42", host_token="t" * 32, action=HostAction.REMOVE, entrant="p9", id=4
        ),
        ExportTournament(tournament="CLUB42"),
    ):
        decoded: object = decode_client(encode_tournament(message))
        assert decoded == message


def test_server_messages_round_trip_with_a_whole_game() -> None:
    result = RaceResult.build(
        "T1-r1-1", "seed", TournamentOptions(name="x").ruleset, [won("p1", 3, 9.0), lost("p2", 4)]
    )
    game = RaceFinished.from_result(result, started_at=1, ended_at=2)
    export = TournamentExport(state=state(), games=(game,), reply_to=7)
    decoded = decode_server(encode_tournament(export))
    assert isinstance(decoded, TournamentExport)
    assert decoded == export
    assert decoded.games[0].to_result().racers == result.racers


@pytest.mark.parametrize(
    "wire, field",
    [
        (
            {
                "type": "tournament_control",
                "tournament": "CLUB42",
                "host_token": "t" * 32,
                "action": "explode",
            },
            "tournament_control.action",
        ),
        ({"type": "join_tournament", "tournament": "no spaces"}, "join_tournament.tournament"),
        (
            {"type": "create_tournament", "options": {"name": "x", "rounds": 0}},
            "create_tournament.options.rounds",
        ),
    ],
)
def test_bad_fields_are_named(wire: dict[str, object], field: str) -> None:
    with pytest.raises(ProtocolError) as error:
        decode_client(msgpack.packb(wire))
    assert error.value.code is ErrorCode.BAD_MESSAGE
    assert field in error.value.message
