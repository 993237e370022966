"""Every message of the protocol, as frozen dataclasses, with the wire spec of each field.

Each message class has a ``TYPE``: the string in the frame's ``type`` field. Fields are
keyword-only; optional fields default to ``None`` (or to the documented default) and may
be left out on the wire. Cards are :class:`engine.Card` here and card ids (0..39) on the
wire; positions are ``(row, col)`` tuples here and ``[row, col]`` arrays on the wire;
lists are tuples here and arrays on the wire.

>>> Place(race="K7QX", move=1, row=0, col=0).position
(0, 0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

from engine import Card, LossReason, Position, Ruleset
from protocol.errors import ErrorCode
from protocol.limits import PROTOCOL_VERSION
from protocol.names import MAX_NAME_LENGTH, PlayerName
from protocol.result import RaceResult, RacerOutcome, RacerResult
from protocol.schema import (
    Array,
    Bool,
    CardSpec,
    Choice,
    Int,
    Optional,
    PositionSpec,
    RulesetSpec,
    Str,
    Struct,
    Token,
    register,
)

# ------------------------------------------------------------------ enums


class Role(StrEnum):
    """What a connection is for, said once in ``hello``."""

    PLAYER = "player"
    SPECTATOR = "spectator"


class RaceState(StrEnum):
    """Where a race is in its life: lobby -> countdown -> running -> finished."""

    LOBBY = "lobby"
    COUNTDOWN = "countdown"
    RUNNING = "running"
    FINISHED = "finished"


class RacerStatus(StrEnum):
    """Where one racer stands in a race."""

    WAITING = "waiting"
    """In the lobby or countdown: the race has not started."""
    RACING = "racing"
    WON = "won"
    LOST = "lost"
    RESIGNED = "resigned"
    TIMED_OUT = "timed_out"
    """Still playing when the race's time limit passed."""


class SeedPolicy(StrEnum):
    """How the server draws a race's seed."""

    RANDOM = "random"
    """Any seed: some deals cannot be won."""
    WINNABLE = "winnable"
    """A seed the server has checked can be won; a server that cannot refuses it."""


# ------------------------------------------------------------ common specs

UINT32 = Int(0, 2**32 - 1)
#: A racer's id within a race (chosen by the server; not secret).
RACER_ID = Str(1, 64, r"[A-Za-z0-9_.:-]+")
#: Milliseconds: server clock times (Unix epoch) and durations. 2**53 - 1 keeps them exact
#: in JavaScript numbers.
MILLIS = Int(0, 2**53 - 1)
RACE_CODE = Str(1, 32, r"[A-Za-z0-9_-]+")
#: A name as the server sends it (``hello.name`` is checked by the fuller rule of
#: :mod:`protocol.names`; names stored before that rule are still sent and read).
NAME = Str(1, MAX_NAME_LENGTH, text=True)
#: Resume and host tokens, player keys: secret (an error about one never quotes it).
TOKEN = Token(16, 128)
#: A claimed player's public id.
PLAYER_ID = Str(1, 64, r"[A-Za-z0-9_.:-]+")
MOVE = Int(1, 40)
COORD = Int(-5, 5)
CARDS_40 = Int(0, 40)
PILES_36 = Int(0, 36)
SCORE = Optional(Int(0, 39))
MAX_RACERS = 1000
REQUEST_ID = Optional(UINT32)
COMMITMENT = Str(64, 64, r"[0-9a-f]+")


def millis(seconds: float) -> int:
    """Seconds (server clock) as whole milliseconds: how every time goes on the wire.

    >>> millis(1.2345)
    1234
    """
    return round(seconds * 1000)


# ------------------------------------------------------------- value types


@dataclass(frozen=True, slots=True, kw_only=True)
class RaceOptions:
    """What a race's host chooses (``create_race``); quick races use the defaults."""

    max_racers: int = 8
    min_racers: int = 2
    """The race does not start with fewer racers."""
    time_limit: int = 600
    """Seconds from the start until racers still playing time out."""
    ruleset: Ruleset = field(default_factory=Ruleset)
    spectators: bool = True
    """Whether spectators may watch."""
    fog: bool = True
    """Hide from spectators what not every racer still racing has drawn."""
    public: bool = True
    """Listed by ``list_races`` and open to ``quick_race``; a private race is joined by code."""
    auto_start: bool = True
    """Count down as soon as ``min_racers`` are in; otherwise wait until every racer is ready."""
    countdown: int = 5
    """Seconds of countdown before the start."""
    seed_policy: SeedPolicy = SeedPolicy.RANDOM
    """``winnable`` asks for a seed the server has checked can be won (``no_winnable_deal``
    if it finds none within its search budget)."""
    rated: bool = False
    """Rate the result: the claimed players in it gain or lose rating in the pool of its
    ruleset (see [Ratings](#ratings)). Quick races always are."""


def _check_options(options: RaceOptions) -> str | None:
    if options.min_racers > options.max_racers:
        return (
            f"min_racers ({options.min_racers}) must not be above "
            f"max_racers ({options.max_racers})"
        )
    return None


register(
    RaceOptions,
    check=_check_options,
    max_racers=Int(1, MAX_RACERS),
    min_racers=Int(1, MAX_RACERS),
    time_limit=Int(1, 86_400),
    ruleset=RulesetSpec(),
    spectators=Bool(),
    fog=Bool(),
    public=Bool(),
    auto_start=Bool(),
    countdown=Int(0, 60),
    seed_policy=Choice(SeedPolicy),
    rated=Bool(),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerInfo:
    """Which server answered: software name and version."""

    name: str
    """The server software's name."""
    version: str
    """Its version."""


register(ServerInfo, name=Str(1, 64), version=Str(1, 64))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressEntry:
    """One racer's public progress: counts only, never cards. Bots are marked."""

    racer: str
    name: str
    bot: bool
    status: RacerStatus
    cards_played: int
    face_up: int
    face_down: int
    score: int | None = None
    """Stock left when the racer won; nil otherwise."""
    finish_ms: int | None = None
    """Milliseconds from the race start to the racer's end (won, lost, resigned)."""
    reason: LossReason | None = None
    """Why the game was lost, when it was."""


register(
    ProgressEntry,
    racer=RACER_ID,
    name=NAME,
    bot=Bool(),
    status=Choice(RacerStatus),
    cards_played=CARDS_40,
    face_up=PILES_36,
    face_down=PILES_36,
    score=SCORE,
    finish_ms=Optional(MILLIS),
    reason=Optional(Choice(LossReason)),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RacerInfo:
    """One racer as the race snapshot lists it (its progress is in ``progress``)."""

    racer: str
    name: str
    bot: bool
    ready: bool
    """Said ``ready`` (races that wait for everyone start when all are)."""
    connected: bool = True
    """False while the racer's connection is down (it may resume)."""
    out_at: int | None = None
    """Server time (ms) when this racer, away since its connection dropped mid-race, is
    counted out (resigned) unless it resumes first; nil while it is there, and once its
    game is over."""


register(
    RacerInfo,
    racer=RACER_ID,
    name=NAME,
    bot=Bool(),
    ready=Bool(),
    connected=Bool(),
    out_at=Optional(MILLIS),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Flip:
    """A top card that turned over: wire form ``[row, col, face_up]``."""

    row: int
    col: int
    face_up: bool
    """The top card's face now: true when it turned face up."""

    @property
    def position(self) -> Position:
        return (self.row, self.col)


register(Flip, as_array=True, row=COORD, col=COORD, face_up=Bool())


@dataclass(frozen=True, slots=True, kw_only=True)
class PileView:
    """A pile as shown: wire form ``[row, col, face_up, [card, ...]]``, cards bottom first."""

    row: int
    col: int
    face_up: bool
    """Whether the top card (the last of ``cards``) is face up."""
    cards: tuple[Card, ...]

    @property
    def position(self) -> Position:
        return (self.row, self.col)


register(
    PileView,
    as_array=True,
    row=COORD,
    col=COORD,
    face_up=Bool(),
    cards=Array(CardSpec(), 10, low=1),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RacerBoard:
    """One racer's board as shown: the piles after its first ``shown`` moves."""

    racer: str
    shown: int
    """How many of the racer's moves the piles show (the fog line, or all of them)."""
    piles: tuple[PileView, ...]


register(RacerBoard, racer=RACER_ID, shown=CARDS_40, piles=Array(Struct(PileView), 36))


@dataclass(frozen=True, slots=True, kw_only=True)
class Standing:
    """One line of a race's result, best first."""

    place: int
    """1 for the first line, 2 for the next, ..."""
    racer: str
    name: str
    bot: bool
    status: RacerStatus
    """How the racer's race ended: won, lost, resigned or timed_out."""
    score: int | None
    cards_played: int
    face_up: int
    """Face-up top cards at the end."""
    face_down: int
    """Face-down top cards at the end."""
    finish_ms: int | None
    """Milliseconds from the start to the racer's last move or resignation; nil if timed out."""
    moves: tuple[Position, ...]
    """Every position the racer played, in order: with the seed, this replays its game."""
    move_ms: tuple[int, ...] | None = None
    """When each of `moves` was made, in milliseconds from the start (one per move, in
    order), so a replay keeps the race's pace; nil from a server (or a stored result)
    that does not say."""


register(
    Standing,
    place=Int(1, MAX_RACERS),
    racer=RACER_ID,
    name=NAME,
    bot=Bool(),
    status=Choice(RacerStatus),
    score=SCORE,
    cards_played=CARDS_40,
    face_up=PILES_36,
    face_down=PILES_36,
    finish_ms=Optional(MILLIS),
    moves=Array(PositionSpec(), 40),
    move_ms=Optional(Array(MILLIS, 40)),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RaceSummary:
    """An open public race, as a lobby lists it."""

    race: str
    state: RaceState
    racers: int
    """How many racers are in it now."""
    max_racers: int
    min_racers: int
    time_limit: int
    ruleset: Ruleset
    spectators: bool
    fog: bool


register(
    RaceSummary,
    race=RACE_CODE,
    state=Choice(RaceState),
    racers=Int(0, MAX_RACERS),
    max_racers=Int(1, MAX_RACERS),
    min_racers=Int(1, MAX_RACERS),
    time_limit=Int(1, 86_400),
    ruleset=RulesetSpec(),
    spectators=Bool(),
    fog=Bool(),
)


# ------------------------------------------------------ client -> server


@dataclass(frozen=True, slots=True, kw_only=True)
class Hello:
    """The first message on every connection. A program playing must set ``bot``."""

    TYPE: ClassVar[str] = "hello"
    protocol_version: int = PROTOCOL_VERSION
    """The version the client speaks; the server answers another with ``version_mismatch``."""
    name: str
    """The name to race under, normalised and checked as [Names](#names) says. A human
    player (not a bot, not a spectator) whose name looks the same as a connected human
    player's, ignoring case and look-alike letters, is refused with ``name_taken``; the
    connection stays open for another ``hello``."""
    bot: bool
    """True when a program chooses the moves. Everyone sees it."""
    role: Role = Role.PLAYER
    """``player`` to race; ``spectator`` to only watch."""
    resume: str | None = None
    """A resume token from an earlier ``welcome``: continue that session."""
    player_key: str | None = None
    """A player key from an earlier ``player_key`` (see [Players](#players)): play as
    that claimed player, under its name (``name`` is then not used). An unknown key is
    refused with ``unknown_player_key``; the connection stays open for another
    ``hello``."""
    client: str | None = None
    """The client software and version, for logs (``"foursquare-tui/0.1"``)."""
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class QuickRace:
    """Join an open public race with the default options, or open one."""

    TYPE: ClassVar[str] = "quick_race"
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateRace:
    """Open a race with these options; you join it as its first racer."""

    TYPE: ClassVar[str] = "create_race"
    options: RaceOptions = field(default_factory=RaceOptions)
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinRace:
    """Join a race before it starts: ``race`` is its id or its private code."""

    TYPE: ClassVar[str] = "join_race"
    race: str
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaveRace:
    """Leave a race in the lobby, or stop watching it. (To give up a running race: resign.)"""

    TYPE: ClassVar[str] = "leave_race"
    race: str
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ListRaces:
    """Ask for the open public races (answered by ``races``)."""

    TYPE: ClassVar[str] = "list_races"
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ready:
    """Say you are ready (or no longer ready) to start."""

    TYPE: ClassVar[str] = "ready"
    race: str
    ready: bool = True
    """False takes back an earlier ready."""
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """Place the card of move ``move`` at ``(row, col)``. Resending the same move is safe."""

    TYPE: ClassVar[str] = "place"
    race: str
    move: int
    """The ``move`` of the ``card`` message being answered."""
    row: int
    col: int
    id: int | None = None

    @property
    def position(self) -> Position:
        return (self.row, self.col)


@dataclass(frozen=True, slots=True, kw_only=True)
class Resign:
    """Give up your game in a running race."""

    TYPE: ClassVar[str] = "resign"
    race: str
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Spectate:
    """Watch a race: boards (behind the fog line) and progress; a race that is over and no
    longer kept, its stored result alone (to replay it)."""

    TYPE: ClassVar[str] = "spectate"
    race: str
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ping:
    """Ask for the server's clock (answered by ``pong``)."""

    TYPE: ClassVar[str] = "ping"
    id: int | None = None


register(
    Hello,
    wire_required=("protocol_version",),
    protocol_version=Int(1, 65_535),
    name=PlayerName(),
    bot=Bool(),
    role=Choice(Role),
    resume=Optional(TOKEN),
    player_key=Optional(TOKEN),
    client=Optional(Str(1, 64, text=True)),
    id=REQUEST_ID,
)
register(QuickRace, id=REQUEST_ID)
register(CreateRace, options=Struct(RaceOptions), id=REQUEST_ID)
register(JoinRace, race=RACE_CODE, id=REQUEST_ID)
register(LeaveRace, race=RACE_CODE, id=REQUEST_ID)
register(ListRaces, id=REQUEST_ID)
register(Ready, race=RACE_CODE, ready=Bool(), id=REQUEST_ID)
register(Place, race=RACE_CODE, move=MOVE, row=COORD, col=COORD, id=REQUEST_ID)
register(Resign, race=RACE_CODE, id=REQUEST_ID)
register(Spectate, race=RACE_CODE, id=REQUEST_ID)
register(Ping, id=REQUEST_ID)


# ------------------------------------------------------ server -> client


@dataclass(frozen=True, slots=True, kw_only=True)
class Welcome:
    """The answer to ``hello``: who you are now, and the token to resume with."""

    TYPE: ClassVar[str] = "welcome"
    session: str
    """The session's id (public: it appears in logs)."""
    resume: str
    """Secret: send it in a later ``hello`` to continue this session. Never shown to others."""
    name: str
    """Your name as the server uses it."""
    role: Role
    bot: bool
    protocol_version: int
    """The version the server speaks (the one the client asked for)."""
    server: ServerInfo
    server_time: int
    resumed: bool = False
    """True when ``hello`` resumed an earlier session (the race state follows)."""
    player: str | None = None
    """The claimed player this session plays as (see [Players](#players)); nil for a
    guest."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Error:
    """A request refused or a message not understood."""

    TYPE: ClassVar[str] = "error"
    code: ErrorCode
    """A stable code from the error code table."""
    message: str
    """A sentence for a person, naming the offending field or what to do."""
    in_reply_to: str | None = None
    """The ``type`` of the message this answers, when it could be read."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Ok:
    """A request done that has no other answer (``ready``, ``leave_race``, ``resign``)."""

    TYPE: ClassVar[str] = "ok"
    in_reply_to: str
    race: str | None = None
    """The race the request was about, if any."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RaceSnapshot:
    """The whole public state of a race; sent on joining, and whenever the lobby changes."""

    TYPE: ClassVar[str] = "race"
    race: str
    """The race's id: every later message about this race names it."""
    state: RaceState
    options: RaceOptions
    commitment: str
    """Hex SHA-256 commitment to the seed (``engine.commitment``), published before the start."""
    racers: tuple[RacerInfo, ...]
    """Every racer, in joining order."""
    spectators: int
    """How many spectators watch."""
    server_time: int
    code: str | None = None
    """The code others join a private race with (``join_race``)."""
    progress: tuple[ProgressEntry, ...] = ()
    """Every racer's progress, once the race has started."""
    you: str | None = None
    """Your racer id in this race; ``None`` when you watch it."""
    starts_at: int | None = None
    """Server time (ms) when the countdown ends; set in ``countdown``."""
    started_at: int | None = None
    """Server time (ms) when the race started."""
    ends_at: int | None = None
    """Server time (ms) when the time limit passes, if the race has one and has started."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CardToPlace:
    """The card you must place now, and where it may go. Sent only for the current move."""

    TYPE: ClassVar[str] = "card"
    race: str
    move: int
    """The move number to send back in ``place``."""
    card: Card
    """The card in hand: the only card of the stock you may know now."""
    targets: tuple[Position, ...]
    """Every legal position for it, sorted."""
    stock_left: int
    """Cards still in the stock after this one."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class MovePlaced:
    """Your move was accepted: where the card went, what flipped, and how you stand."""

    TYPE: ClassVar[str] = "placed"
    race: str
    move: int
    card: Card
    """The card that was placed."""
    position: Position
    flips: tuple[Flip, ...]
    """Top cards that turned over, in row-then-column order."""
    face_up: int
    face_down: int
    stock_left: int
    status: RacerStatus
    score: int | None = None
    reason: LossReason | None = None
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """Progress of the racers that changed since the last update (coalesced in big races)."""

    TYPE: ClassVar[str] = "progress"
    race: str
    racers: tuple[ProgressEntry, ...]
    """Only the racers whose progress changed since the last update."""
    server_time: int
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Boards:
    """Boards as a spectator may see them (or your own board, after a resume)."""

    TYPE: ClassVar[str] = "board"
    race: str
    boards: tuple[RacerBoard, ...]
    """The boards that changed (all of them on ``spectate`` and at the end)."""
    fog_line: int | None = None
    """How many cards of each board may be shown now; ``None`` when nothing is hidden."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RaceFinished:
    """The result: standings, the revealed seed, and every racer's moves to check it."""

    TYPE: ClassVar[str] = "finished"
    race: str
    seed: str
    """The revealed seed: ``engine.commitment(seed)`` must equal ``commitment``."""
    commitment: str
    ruleset: Ruleset
    standings: tuple[Standing, ...]
    """Best first: winners by score then finish time, then the rest by face-up cards."""
    started_at: int
    """Server time (ms) when the race started."""
    ended_at: int
    """Server time (ms) when the race ended."""
    reply_to: int | None = None

    @classmethod
    def from_result(
        cls, result: RaceResult, *, started_at: int, ended_at: int, reply_to: int | None = None
    ) -> RaceFinished:
        """The message announcing ``result`` (its racers already in standings order).

        Finish times travel as whole milliseconds.
        """
        standings = tuple(
            Standing(
                place=index,
                racer=entry.racer_id,
                name=entry.name,
                bot=entry.bot,
                status=RacerStatus(entry.outcome.value),
                score=entry.score,
                cards_played=entry.cards_played,
                face_up=entry.face_up,
                face_down=entry.face_down,
                finish_ms=None if entry.finish_time is None else round(entry.finish_time * 1000),
                moves=entry.moves,
                move_ms=entry.move_ms,
            )
            for index, entry in enumerate(result.racers, start=1)
        )
        return cls(
            race=result.race_id,
            seed=result.seed,
            commitment=result.commitment,
            ruleset=result.ruleset,
            standings=standings,
            started_at=started_at,
            ended_at=ended_at,
            reply_to=reply_to,
        )

    def to_result(self) -> RaceResult:
        """The verifiable record (``protocol.result.verify_result`` checks it).

        Raises ``ValueError`` if a standing's status is not an outcome (won, lost,
        resigned, timed_out).
        """
        return RaceResult(
            race_id=self.race,
            seed=self.seed,
            commitment=self.commitment,
            ruleset=self.ruleset,
            racers=tuple(
                RacerResult(
                    racer_id=s.racer,
                    name=s.name,
                    bot=s.bot,
                    outcome=RacerOutcome(s.status.value),
                    score=s.score,
                    finish_time=None if s.finish_ms is None else s.finish_ms / 1000,
                    cards_played=s.cards_played,
                    face_up=s.face_up,
                    face_down=s.face_down,
                    moves=s.moves,
                    move_ms=s.move_ms,
                )
                for s in self.standings
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RacePar:
    """The deal's par, computed after ``finished`` and sent once it is known."""

    TYPE: ClassVar[str] = "race_par"
    race: str
    score: int | None
    """The best score of a winning line found; ``None`` when none was found."""
    proven: bool
    """True when ``score`` is proven the best possible; otherwise it is a lower bound."""
    cards_used: int | None = None
    """How many cards the par line places; ``None`` when no winning line was found."""
    at_most: int | None = None
    """When not ``proven``: the best score any line could reach, proven (the par lies
    between ``score`` and this); ``None`` when unknown. Equal to ``score`` when proven."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RaceList:
    """The open public races (the answer to ``list_races``)."""

    TYPE: ClassVar[str] = "races"
    races: tuple[RaceSummary, ...]
    """Open public races (in the lobby or counting down)."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Pong:
    """The answer to ``ping``: the server's clock, to turn server times into local ones."""

    TYPE: ClassVar[str] = "pong"
    server_time: int
    reply_to: int | None = None


MESSAGE_TYPE = Str(1, 32, r"[a-z_]+")
SERVER_TIME = MILLIS

register(
    Welcome,
    session=Str(1, 64, r"[A-Za-z0-9_-]+"),
    resume=TOKEN,
    name=NAME,
    role=Choice(Role),
    bot=Bool(),
    protocol_version=Int(1, 65_535),
    server=Struct(ServerInfo),
    server_time=SERVER_TIME,
    resumed=Bool(),
    player=Optional(PLAYER_ID),
    reply_to=REQUEST_ID,
)
register(
    Error,
    code=Choice(ErrorCode),
    message=Str(0, 1000),
    in_reply_to=Optional(MESSAGE_TYPE),
    reply_to=REQUEST_ID,
)
register(Ok, in_reply_to=MESSAGE_TYPE, race=Optional(RACE_CODE), reply_to=REQUEST_ID)
register(
    RaceSnapshot,
    race=RACE_CODE,
    state=Choice(RaceState),
    options=Struct(RaceOptions),
    commitment=COMMITMENT,
    racers=Array(Struct(RacerInfo), MAX_RACERS),
    spectators=Int(0, 1_000_000),
    server_time=SERVER_TIME,
    code=Optional(RACE_CODE),
    progress=Array(Struct(ProgressEntry), MAX_RACERS),
    you=Optional(RACER_ID),
    starts_at=Optional(MILLIS),
    started_at=Optional(MILLIS),
    ends_at=Optional(MILLIS),
    reply_to=REQUEST_ID,
)
register(
    CardToPlace,
    race=RACE_CODE,
    move=MOVE,
    card=CardSpec(),
    targets=Array(PositionSpec(), 121),
    stock_left=Int(0, 39),
    reply_to=REQUEST_ID,
)
register(
    MovePlaced,
    race=RACE_CODE,
    move=MOVE,
    card=CardSpec(),
    position=PositionSpec(),
    flips=Array(Struct(Flip), 20),
    face_up=PILES_36,
    face_down=PILES_36,
    stock_left=Int(0, 39),
    status=Choice(RacerStatus),
    score=SCORE,
    reason=Optional(Choice(LossReason)),
    reply_to=REQUEST_ID,
)
register(
    Progress,
    race=RACE_CODE,
    racers=Array(Struct(ProgressEntry), MAX_RACERS),
    server_time=SERVER_TIME,
    reply_to=REQUEST_ID,
)
register(
    Boards,
    race=RACE_CODE,
    boards=Array(Struct(RacerBoard), MAX_RACERS),
    fog_line=Optional(CARDS_40),
    reply_to=REQUEST_ID,
)
register(
    RaceFinished,
    race=RACE_CODE,
    seed=Str(1, 256),
    commitment=COMMITMENT,
    ruleset=RulesetSpec(),
    standings=Array(Struct(Standing), MAX_RACERS),
    started_at=MILLIS,
    ended_at=MILLIS,
    reply_to=REQUEST_ID,
)
register(
    RacePar,
    race=RACE_CODE,
    score=SCORE,
    proven=Bool(),
    cards_used=Optional(CARDS_40),
    at_most=SCORE,
    reply_to=REQUEST_ID,
)
register(RaceList, races=Array(Struct(RaceSummary), MAX_RACERS), reply_to=REQUEST_ID)
register(Pong, server_time=SERVER_TIME, reply_to=REQUEST_ID)


# ------------------------------------------------------------- the unions

ClientMessage = (
    Hello
    | QuickRace
    | CreateRace
    | JoinRace
    | LeaveRace
    | ListRaces
    | Ready
    | Place
    | Resign
    | Spectate
    | Ping
)
"""Any message a client sends."""

ServerMessage = (
    Welcome
    | Error
    | Ok
    | RaceSnapshot
    | CardToPlace
    | MovePlaced
    | Progress
    | Boards
    | RaceFinished
    | RacePar
    | RaceList
    | Pong
)
"""Any message the server sends."""

Message = ClientMessage | ServerMessage

#: Message classes by wire type, one table per direction.
CLIENT_MESSAGES: dict[str, type[ClientMessage]] = {
    cls.TYPE: cls
    for cls in (
        Hello, QuickRace, CreateRace, JoinRace, LeaveRace, ListRaces, Ready, Place, Resign,
        Spectate, Ping,
    )
}
SERVER_MESSAGES: dict[str, type[ServerMessage]] = {
    cls.TYPE: cls
    for cls in (
        Welcome, Error, Ok, RaceSnapshot, CardToPlace, MovePlaced, Progress, Boards,
        RaceFinished, RacePar, RaceList, Pong,
    )
}
