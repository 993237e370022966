"""One realistic example of every message: the documentation shows them, the tests round-trip them.

>>> sorted(EXAMPLES) == sorted([*CLIENT_MESSAGES, *SERVER_MESSAGES])
True
"""

from __future__ import annotations

from engine import Flipped, Game, LossReason, Ruleset
from protocol.daily import DAILY_EXAMPLES
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
from protocol.players import PLAYER_EXAMPLES
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


# The move examples are a real game's second move, so every number in them is one the
# server would send: the ``foursquare`` deal (4S, 3S, ...), played at (0, 0) then (0, 1).
_GAME = Game.new("foursquare")
_GAME.play((0, 0))
_SECOND_CARD = _GAME.card
assert _SECOND_CARD is not None
_CARD_EXAMPLE = CardToPlace(
    race="r-8f3a",
    move=2,
    card=_SECOND_CARD,
    targets=tuple(_GAME.legal_moves()),
    stock_left=_GAME.stock_left,
)
_FLIPS = tuple(
    Flip(row=event.position[0], col=event.position[1], face_up=event.face_up)
    for event in _GAME.play((0, 1))
    if isinstance(event, Flipped)
)
_PLACED_EXAMPLE = MovePlaced(
    race="r-8f3a",
    move=2,
    card=_SECOND_CARD,
    position=(0, 1),
    flips=_FLIPS,
    face_up=_GAME.face_up,
    face_down=_GAME.face_down,
    stock_left=_GAME.stock_left,
    status=RacerStatus.RACING,
    reply_to=7,
)
_BOARD_EXAMPLE = RacerBoard(
    racer="p1",
    shown=_GAME.cards_played,
    piles=tuple(
        PileView(row=row, col=col, face_up=pile.face_up, cards=pile.cards)
        for (row, col), pile in sorted(_GAME.piles.items())
    ),
)


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
        _CARD_EXAMPLE,
        _PLACED_EXAMPLE,
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
            boards=(_BOARD_EXAMPLE,),
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
                    move_ms=(1_250, 2_900, 4_020),
                ),
            ),
            started_at=_T0 + 4_000,
            ended_at=_T0 + 90_000,
        ),
        RacePar(race="r-8f3a", score=24, proven=True, cards_used=16, at_most=24),
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
EXAMPLES.update(PLAYER_EXAMPLES)  # type: ignore[arg-type]
EXAMPLES.update(DAILY_EXAMPLES)  # type: ignore[arg-type]
assert sorted(EXAMPLES) == sorted([*CLIENT_MESSAGES, *SERVER_MESSAGES])
