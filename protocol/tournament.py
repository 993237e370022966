"""Tournament messages: create, host control, join, watch, standings and export.

Registered like :mod:`protocol.messages`: each class is a frozen dataclass with a wire
spec per field, and its ``TYPE`` is added to :data:`~protocol.messages.CLIENT_MESSAGES`
or :data:`~protocol.messages.SERVER_MESSAGES` when this module is imported (importing
:mod:`protocol` does that), so :func:`~protocol.codec.decode_client` and
:func:`~protocol.codec.decode_server` read them like any other message.

A tournament is named on the wire by its join code. Host actions carry the secret host
token that ``tournament_created`` returned once; the server keeps only its hash. Races of
a tournament are ordinary races: an entrant dealt into one gets its ``race`` snapshot and
``card`` messages as usual, and a watcher may ``spectate`` any race the ``tournament``
state lists while it runs.

>>> from protocol.codec import decode_client, encode
>>> decode_client(encode(JoinTournament(tournament="CLUB42", id=3)))
JoinTournament(tournament='CLUB42', id=3)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, cast

from engine import Ruleset
from protocol.codec import encode
from protocol.messages import (
    CLIENT_MESSAGES,
    MILLIS,
    NAME,
    RACE_CODE,
    RACER_ID,
    REQUEST_ID,
    SERVER_MESSAGES,
    TOKEN,
    Message,
    RaceFinished,
    SeedPolicy,
)
from protocol.schema import Array, Bool, Choice, Int, Optional, RulesetSpec, Str, Struct, register

# ------------------------------------------------------------------ enums


class TournamentFormat(StrEnum):
    """How a tournament is raced."""

    ROUNDS = "rounds"
    """Swiss-like rounds: every entrant is dealt the round's seed."""
    ARENA = "arena"
    """A time window in which free entrants are paired into quick races continuously."""


class TournamentStatus(StrEnum):
    """Where a tournament is: created -> open -> running -> finished."""

    CREATED = "created"
    """Created; the host has not opened registration yet."""
    OPEN = "open"
    """Registration is open; nothing has been raced yet."""
    RUNNING = "running"
    FINISHED = "finished"


class EntrantState(StrEnum):
    """An entrant's standing in the tournament."""

    ACTIVE = "active"
    LEFT = "left"
    """Withdrew: keeps its points, dealt no more races (joining again makes it active)."""
    REMOVED = "removed"
    """Removed by the host: dealt no more races, left out of the standings."""


class HostAction(StrEnum):
    """What the host may do (``tournament_control``)."""

    OPEN = "open"
    START = "start"
    """Start the next round (rounds) or the window (arena)."""
    REMOVE = "remove"
    """Remove the entrant named in ``entrant``."""
    PAUSE = "pause"
    RESUME = "resume"
    END = "end"


MAX_ENTRANTS = 1000
MAX_ROUNDS = 100
EXPORT_PAGE_GAMES = 500
"""At most this many games in one page of ``tournament_export`` (the wire allows
:data:`MAX_ENTRANTS`)."""
EXPORT_PAGE_BYTES = 1024 * 1024
"""A page of ``tournament_export`` is at most this many bytes, a quarter of what a client
accepts in one server frame (:attr:`~protocol.limits.Limits.max_server_frame`), unless one
game alone does not fit: a page holds at least one game."""
GAME_COUNT = Int(0, 2**31 - 1)
"""A position in a tournament's finished games (``after``, ``next``)."""
TOURNAMENT_CODE = Str(4, 16, r"[A-Z0-9]+")
SECONDS = Int(1, 7 * 86_400)


# ------------------------------------------------------------- value types


@dataclass(frozen=True, slots=True, kw_only=True)
class TournamentOptions:
    """What the host chooses when creating a tournament."""

    name: str
    format: TournamentFormat = TournamentFormat.ROUNDS
    rounds: int = 3
    """Rounds format: how many rounds."""
    race_size: int = 8
    """At most this many racers in one race."""
    time_limit: int = 300
    """Seconds each race lasts at most."""
    arena_duration: int = 1800
    """Arena format: seconds during which races are formed."""
    seed_policy: SeedPolicy = SeedPolicy.RANDOM
    ruleset: Ruleset = field(default_factory=Ruleset)
    rated: bool = False
    """Whether the tournament's races are rated (claimed players, in their ruleset's pool),
    as a private race with ``rated: true`` is. Unrated unless the host asks."""


register(
    TournamentOptions,
    name=Str(1, 64, text=True),
    format=Choice(TournamentFormat),
    rounds=Int(1, MAX_ROUNDS),
    race_size=Int(2, 1000),
    time_limit=Int(1, 86_400),
    arena_duration=SECONDS,
    seed_policy=Choice(SeedPolicy),
    ruleset=RulesetSpec(),
    rated=Bool(),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TournamentStanding:
    """One line of the standings. Entrants with equal totals share ``place`` (``tied``)."""

    place: int
    tied: bool
    entrant: str
    name: str
    bot: bool
    state: EntrantState
    points: int
    stock_left: int
    """Total stock left over the games won."""
    time_ms: int
    """Total time over the games played (the time limit for a game not finished)."""
    games: int


register(
    TournamentStanding,
    place=Int(1, MAX_ENTRANTS),
    tied=Bool(),
    entrant=RACER_ID,
    name=NAME,
    bot=Bool(),
    state=Choice(EntrantState),
    points=Int(0, 2**31 - 1),
    stock_left=Int(0, 2**31 - 1),
    time_ms=MILLIS,
    games=Int(0, 2**31 - 1),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class TournamentRaceInfo:
    """A race of the tournament: its id (to ``spectate``), round (0 in an arena), racers."""

    race: str
    round: int
    racers: tuple[str, ...]
    finished: bool


register(
    TournamentRaceInfo,
    race=RACE_CODE,
    round=Int(0, MAX_ROUNDS),
    racers=Array(RACER_ID, MAX_ENTRANTS),
    finished=Bool(),
)


# ------------------------------------------------------ client -> server


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateTournament:
    """Create a tournament; the answer (``tournament_created``) holds the host token."""

    TYPE: ClassVar[str] = "create_tournament"
    options: TournamentOptions
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TournamentControl:
    """A host action; refused with ``not_host`` unless ``host_token`` is the host's."""

    TYPE: ClassVar[str] = "tournament_control"
    tournament: str
    host_token: str
    action: HostAction
    entrant: str | None = None
    """For ``remove``: the entrant to remove."""
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinTournament:
    """Enter a tournament (or come back after leaving it); you also watch it."""

    TYPE: ClassVar[str] = "join_tournament"
    tournament: str
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveTournament:
    """Withdraw: you keep your points and are dealt no more races."""

    TYPE: ClassVar[str] = "leave_tournament"
    tournament: str
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SetArenaAvailable:
    """Arena: say whether you may be paired now (``false`` to take a break)."""

    TYPE: ClassVar[str] = "arena_available"
    tournament: str
    available: bool = True
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchTournament:
    """Receive the tournament's state now and after every change (a finished tournament
    no longer in the server's memory: its final state, once)."""

    TYPE: ClassVar[str] = "watch_tournament"
    tournament: str
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ExportTournament:
    """Ask for standings and the finished games, a page at a time (answered by
    ``tournament_export``)."""

    TYPE: ClassVar[str] = "export_tournament"
    tournament: str
    after: int | None = None
    """The games to skip, in the order they finished: the ``next`` of the page before
    (none, or 0: from the first game). Past the number of finished games: ``bad_cursor``."""
    id: int | None = None


register(CreateTournament, options=Struct(TournamentOptions), id=REQUEST_ID)
register(
    TournamentControl,
    tournament=TOURNAMENT_CODE,
    host_token=TOKEN,
    action=Choice(HostAction),
    entrant=Optional(RACER_ID),
    id=REQUEST_ID,
)
for _cls in (JoinTournament, LeaveTournament, WatchTournament):
    register(_cls, tournament=TOURNAMENT_CODE, id=REQUEST_ID)
register(ExportTournament, tournament=TOURNAMENT_CODE, after=Optional(GAME_COUNT), id=REQUEST_ID)
register(SetArenaAvailable, tournament=TOURNAMENT_CODE, available=Bool(), id=REQUEST_ID)


# ------------------------------------------------------ server -> client


@dataclass(frozen=True, slots=True, kw_only=True)
class TournamentCreated:
    """The tournament exists: its join ``tournament`` code, and the secret host token."""

    TYPE: ClassVar[str] = "tournament_created"
    tournament: str
    host_token: str
    """Secret: only this token can open, start, remove, pause, resume and end."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TournamentState:
    """The whole public state of a tournament; sent to watchers and entrants on every change."""

    TYPE: ClassVar[str] = "tournament"
    tournament: str
    name: str
    format: TournamentFormat
    status: TournamentStatus
    paused: bool
    ending: bool
    round: int
    """Rounds started so far (the current one while it runs); 0 in an arena."""
    rounds: int
    time_limit: int
    """Seconds each race lasts at most (a game not finished counts this much time)."""
    standings: tuple[TournamentStanding, ...]
    races: tuple[TournamentRaceInfo, ...]
    """The races in progress, to ``spectate`` for live progress."""
    server_time: int
    ends_at: int | None = None
    """Arena: server time (ms) when no more races are formed."""
    you: str | None = None
    """Your entrant id, when you are an entrant."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TournamentExport:
    """Standings and the results of finished races, each checkable on its own: one page.

    ``games`` are the finished races from position ``after`` of the request on, in the
    order they finished (an order that only grows at its end), as many as fit within
    :data:`EXPORT_PAGE_GAMES` and :data:`EXPORT_PAGE_BYTES`. Every page carries the state
    at the time it was sent; the last page's state is the one its games add up to."""

    TYPE: ClassVar[str] = "tournament_export"
    state: TournamentState
    games: tuple[RaceFinished, ...]
    next: int | None = None
    """Absent on the last page; otherwise more games follow: ask again with this ``after``."""
    reply_to: int | None = None


register(TournamentCreated, tournament=TOURNAMENT_CODE, host_token=TOKEN, reply_to=REQUEST_ID)
register(
    TournamentState,
    tournament=TOURNAMENT_CODE,
    name=Str(1, 64, text=True),
    format=Choice(TournamentFormat),
    status=Choice(TournamentStatus),
    paused=Bool(),
    ending=Bool(),
    round=Int(0, MAX_ROUNDS),
    rounds=Int(0, MAX_ROUNDS),
    time_limit=Int(1, 86_400),
    standings=Array(Struct(TournamentStanding), MAX_ENTRANTS),
    races=Array(Struct(TournamentRaceInfo), MAX_ENTRANTS),
    server_time=MILLIS,
    ends_at=Optional(MILLIS),
    you=Optional(RACER_ID),
    reply_to=REQUEST_ID,
)
register(
    TournamentExport,
    state=Struct(TournamentState),
    games=Array(Struct(RaceFinished), MAX_ENTRANTS),
    next=Optional(GAME_COUNT),
    reply_to=REQUEST_ID,
)

TournamentClientMessage = (
    CreateTournament
    | TournamentControl
    | JoinTournament
    | LeaveTournament
    | SetArenaAvailable
    | WatchTournament
    | ExportTournament
)
"""Any tournament message a client sends."""

TournamentServerMessage = TournamentCreated | TournamentState | TournamentExport
"""Any tournament message the server sends."""

#: Tournament message classes by wire type, one table per direction.
TOURNAMENT_CLIENT_MESSAGES: dict[str, type[TournamentClientMessage]] = {
    cls.TYPE: cls
    for cls in (
        CreateTournament,
        TournamentControl,
        JoinTournament,
        LeaveTournament,
        SetArenaAvailable,
        WatchTournament,
        ExportTournament,
    )
}
TOURNAMENT_SERVER_MESSAGES: dict[str, type[TournamentServerMessage]] = {
    cls.TYPE: cls for cls in (TournamentCreated, TournamentState, TournamentExport)
}

# The codec reads these tables at decode time, so registering here is enough.
CLIENT_MESSAGES.update(TOURNAMENT_CLIENT_MESSAGES)  # type: ignore[arg-type]
SERVER_MESSAGES.update(TOURNAMENT_SERVER_MESSAGES)  # type: ignore[arg-type]


#: Value types the messages above nest, in the order ``docs/protocol.md`` lists them.
TOURNAMENT_VALUE_TYPES = (TournamentOptions, TournamentStanding, TournamentRaceInfo)

_T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z in ms
_STATE = TournamentState(
    tournament="CLUB42",
    name="Thursday club night",
    format=TournamentFormat.ROUNDS,
    status=TournamentStatus.RUNNING,
    paused=False,
    ending=False,
    round=2,
    rounds=3,
    time_limit=300,
    standings=(
        TournamentStanding(
            place=1,
            tied=False,
            entrant="p-3f9a01c2de",
            name="Ann",
            bot=False,
            state=EntrantState.ACTIVE,
            points=9,
            stock_left=7,
            time_ms=412_000,
            games=2,
        ),
        TournamentStanding(
            place=2,
            tied=True,
            entrant="p-77b0e1aa03",
            name="greedy-bot",
            bot=True,
            state=EntrantState.ACTIVE,
            points=6,
            stock_left=0,
            time_ms=600_000,
            games=2,
        ),
        TournamentStanding(
            place=2,
            tied=True,
            entrant="p-0c1d2e3f40",
            name="Bea",
            bot=False,
            state=EntrantState.LEFT,
            points=6,
            stock_left=0,
            time_ms=600_000,
            games=2,
        ),
    ),
    races=(
        TournamentRaceInfo(
            race="CLUB42-R2-1", round=2, racers=("p-3f9a01c2de", "p-77b0e1aa03"), finished=False
        ),
    ),
    server_time=_T0 + 900_000,
    you="p-3f9a01c2de",
    reply_to=12,
)

#: One example of every tournament message, by wire type (``protocol.examples`` adds them).
TOURNAMENT_EXAMPLES: dict[str, TournamentClientMessage | TournamentServerMessage] = {
    m.TYPE: m
    for m in (
        CreateTournament(
            options=TournamentOptions(
                name="Thursday club night",
                format=TournamentFormat.ROUNDS,
                rounds=3,
                race_size=8,
                time_limit=300,
                seed_policy=SeedPolicy.WINNABLE,
            ),
            id=11,
        ),
        TournamentControl(
            tournament="CLUB42",
            host_token="hT0k3n-5ecret-value-xyz",
            action=HostAction.START,
            id=12,
        ),
        JoinTournament(tournament="CLUB42", id=13),
        LeaveTournament(tournament="CLUB42", id=14),
        SetArenaAvailable(tournament="ARENA7", available=False, id=15),
        WatchTournament(tournament="CLUB42", id=16),
        ExportTournament(tournament="CLUB42", id=17),
        TournamentCreated(tournament="CLUB42", host_token="hT0k3n-5ecret-value-xyz", reply_to=11),
        _STATE,
        TournamentExport(state=_STATE, games=(), reply_to=17),
    )
}


def encode_tournament(message: TournamentClientMessage | TournamentServerMessage) -> bytes:
    """The frame for a tournament message (:func:`~protocol.codec.encode`, typed for these)."""
    return encode(cast(Message, message))
