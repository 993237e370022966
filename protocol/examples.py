"""One realistic example of every message: the documentation shows them, the tests round-trip them.

>>> sorted(EXAMPLES) == sorted([*CLIENT_MESSAGES, *SERVER_MESSAGES])
True
"""

from __future__ import annotations

from engine import Card, LossReason, Ruleset
from protocol.errors import ErrorCode
from protocol.limits import PROTOCOL_VERSION
from protocol.messages import (
    CLIENT_MESSAGES,
    SERVER_MESSAGES,
    Boards,
    CardToPlace,
    CreateRace,
    Error,
    Flip,
    Hello,
    JoinRace,
    LeaveRace,
    ListRaces,
    Message,
    MovePlaced,
    Ok,
    PileView,
    Ping,
    Place,
    Pong,
    Progress,
    ProgressEntry,
    QuickRace,
    RaceFinished,
    RaceList,
    RaceOptions,
    RacePar,
    RacerBoard,
    RacerInfo,
    RacerStatus,
    RaceSnapshot,
    RaceState,
    RaceSummary,
    Ready,
    Resign,
    Role,
    SeedPolicy,
    ServerInfo,
    Spectate,
    Standing,
    Welcome,
)
from protocol.tournament import TOURNAMENT_EXAMPLES

_T0 = 1_764_000_000_000
_COMMIT = "3f0c5e1d9a7b2c4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e"
_OPTIONS = RaceOptions(
    max_racers=4,
    min_racers=2,
    time_limit=300,
    ruleset=Ruleset(),
    spectators=True,
    fog=True,
    public=False,
    auto_start=False,
    countdown=5,
    seed_policy=SeedPolicy.WINNABLE,
)


def _card(text: str) -> Card:
    return Card.parse(text)


#: Every message type, by wire type, with an example instance.
EXAMPLES: dict[str, Message] = {
    m.TYPE: m
    for m in (
        Hello(
            protocol_version=PROTOCOL_VERSION,
            name="Ann",
            bot=False,
            role=Role.PLAYER,
            client="foursquare-tui/0.1",
            id=1,
        ),
        QuickRace(id=2),
        CreateRace(options=_OPTIONS, id=2),
        JoinRace(race="K7QX", id=3),
        LeaveRace(race="r-8f3a", id=4),
        ListRaces(id=5),
        Ready(race="r-8f3a", ready=True, id=6),
        Place(race="r-8f3a", move=2, row=0, col=1, id=7),
        Resign(race="r-8f3a", id=8),
        Spectate(race="r-8f3a", id=9),
        Ping(id=10),
        Welcome(
            session="s-5f2a",
            resume="q8V7hK2mZyX0pL4tR9wE1A",
            name="Ann",
            role=Role.PLAYER,
            bot=False,
            protocol_version=PROTOCOL_VERSION,
            server=ServerInfo(name="foursquare", version="0.1.0"),
            server_time=_T0,
            resumed=False,
            reply_to=1,
        ),
        Error(
            code=ErrorCode.ILLEGAL_MOVE,
            message="(2, 2) is not next to any pile",
            in_reply_to="place",
            reply_to=7,
        ),
        Ok(in_reply_to="ready", race="r-8f3a", reply_to=6),
        RaceSnapshot(
            race="r-8f3a",
            code="K7QX",
            state=RaceState.COUNTDOWN,
            options=_OPTIONS,
            commitment=_COMMIT,
            racers=(
                RacerInfo(racer="p1", name="Ann", bot=False, ready=True, connected=True),
                RacerInfo(racer="p2", name="greedy-bot", bot=True, ready=True, connected=True),
            ),
            spectators=1,
            server_time=_T0 + 1_000,
            you="p1",
            starts_at=_T0 + 4_000,
            reply_to=6,
        ),
        CardToPlace(
            race="r-8f3a",
            move=2,
            card=_card("3S"),
            targets=((-1, 0), (0, -1), (0, 0), (0, 1), (1, 0)),
            stock_left=38,
        ),
        MovePlaced(
            race="r-8f3a",
            move=2,
            card=_card("3S"),
            position=(0, 1),
            flips=(Flip(row=0, col=0, face_up=False),),
            face_up=1,
            face_down=1,
            stock_left=38,
            status=RacerStatus.RACING,
            reply_to=7,
        ),
        Progress(
            race="r-8f3a",
            racers=(
                ProgressEntry(
                    racer="p2",
                    name="greedy-bot",
                    bot=True,
                    status=RacerStatus.LOST,
                    cards_played=40,
                    face_up=12,
                    face_down=3,
                    finish_ms=61_250,
                    reason=LossReason.STOCK_EMPTY,
                ),
                ProgressEntry(
                    racer="p1",
                    name="Ann",
                    bot=False,
                    status=RacerStatus.RACING,
                    cards_played=17,
                    face_up=9,
                    face_down=1,
                ),
            ),
            server_time=_T0 + 65_000,
        ),
        Boards(
            race="r-8f3a",
            boards=(
                RacerBoard(
                    racer="p1",
                    shown=2,
                    piles=(
                        PileView(row=0, col=0, face_up=False, cards=(_card("4S"),)),
                        PileView(row=0, col=1, face_up=True, cards=(_card("3S"),)),
                    ),
                ),
            ),
            fog_line=2,
        ),
        RaceFinished(
            race="r-8f3a",
            seed="9b1f0e4c7d2a58e3b6f1c0d9a8e7f6b5",
            commitment=_COMMIT,
            ruleset=Ruleset(),
            standings=(
                Standing(
                    place=1,
                    racer="p1",
                    name="Ann",
                    bot=False,
                    status=RacerStatus.WON,
                    score=3,
                    cards_played=37,
                    face_up=16,
                    face_down=0,
                    finish_ms=83_400,
                    moves=((0, 0), (0, 1), (1, 1)),
                ),
            ),
            started_at=_T0 + 4_000,
            ended_at=_T0 + 90_000,
        ),
        RacePar(race="r-8f3a", score=24, proven=True, cards_used=16),
        RaceList(
            races=(
                RaceSummary(
                    race="Q1",
                    state=RaceState.LOBBY,
                    racers=3,
                    max_racers=8,
                    min_racers=2,
                    time_limit=600,
                    ruleset=Ruleset(),
                    spectators=True,
                    fog=True,
                ),
            ),
            reply_to=5,
        ),
        Pong(server_time=_T0 + 2_000, reply_to=10),
    )
}

EXAMPLES.update(TOURNAMENT_EXAMPLES)  # type: ignore[arg-type]
assert sorted(EXAMPLES) == sorted([*CLIENT_MESSAGES, *SERVER_MESSAGES])
