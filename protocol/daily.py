"""The daily deal: one seed a day (UTC), raced once by each player, revealed after the day.

Registered like :mod:`protocol.players`: each class is a frozen dataclass with a wire spec
per field, and its ``TYPE`` joins the codec's tables when this module is imported
(importing :mod:`protocol` does that). A client that never sends these messages never
receives their answers.

- ``daily_race`` seats you in today's daily room (answered with ``race``, as
  ``quick_race`` is). A room counts down from its first racer, and whoever asks for the
  daily meanwhile races in it too; afterwards the next one opens. Each player races the
  day's deal once: a claimed player once a day, a guest once per session.
- The room's end is ``daily_result``, not ``finished``: the standings without the seed
  and without anyone's moves, which stay sealed until ``reveal_at``.
- ``get_daily`` reads a day's board (answered with ``daily``): its commitment from the
  start of the day, its results ranked by the standings rule, and, once the day is
  revealed, its seed, every line's moves (so that every result can be replayed) and the
  deal's par.

>>> from protocol.codec import decode_client, encode
>>> decode_client(encode(GetDaily(day="2026-12-01", id=4)))
GetDaily(day='2026-12-01', bots=True, offset=0, limit=20, id=4)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, cast

from engine import Position, Ruleset
from protocol.codec import encode
from protocol.messages import (
    CARDS_40,
    CLIENT_MESSAGES,
    COMMITMENT,
    MILLIS,
    NAME,
    PILES_36,
    PLAYER_ID,
    RACE_CODE,
    REQUEST_ID,
    SCORE,
    SERVER_MESSAGES,
    Message,
    RacerStatus,
    Standing,
)
from protocol.result import RaceResult, RacerOutcome, RacerResult
from protocol.schema import (
    Array,
    Bool,
    Choice,
    Int,
    Optional,
    PositionSpec,
    RulesetSpec,
    Str,
    Struct,
    register,
)

#: A day, as its UTC date: ``YYYY-MM-DD``.
DAY = Str(10, 10, r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
#: The most lines of a day's board one answer holds.
DAILY_PAGE_LIMIT = 100
DAILY_COUNT = Int(0, 2**31 - 1)


# ------------------------------------------------------------- value types


@dataclass(frozen=True, slots=True, kw_only=True)
class DailyEntry:
    """One result of the day's deal, as its board shows it."""

    place: int | None = None
    """The line's place on the board (1 is the best); ``None`` for a guest's own result,
    which is not ranked."""
    player: str | None = None
    """The claimed player who raced (``None``: a guest)."""
    name: str
    bot: bool
    status: RacerStatus
    score: int | None = None
    cards_played: int
    face_up: int
    face_down: int
    finish_ms: int | None = None
    """Milliseconds from the start of its race to its last move (``None``: timed out)."""
    race: str
    """The daily room it was raced in."""
    moves: tuple[Position, ...] = ()
    """Every position played, in order: sent once the day is revealed (empty before), so
    that with the seed every line replays to its result."""


register(
    DailyEntry,
    place=Optional(Int(1, 2**31 - 1)),
    player=Optional(PLAYER_ID),
    name=NAME,
    bot=Bool(),
    status=Choice(RacerStatus),
    score=SCORE,
    cards_played=CARDS_40,
    face_up=PILES_36,
    face_down=PILES_36,
    finish_ms=Optional(MILLIS),
    race=RACE_CODE,
    moves=Array(PositionSpec(), 40),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class DailyPar:
    """The day's par (as ``race_par`` has it), searched for once the day is revealed."""

    score: int | None = None
    """The best score of a winning line found; ``None`` when none was found."""
    proven: bool
    """Whether ``score`` is proven the best possible."""
    cards_used: int | None = None
    """How many cards the par line places (``None`` when no winning line was found)."""
    at_most: int | None = None
    """When not ``proven``: the best score any line could reach, proven."""


register(DailyPar, score=SCORE, proven=Bool(), cards_used=Optional(CARDS_40), at_most=SCORE)


# ------------------------------------------------------ client -> server


@dataclass(frozen=True, slots=True, kw_only=True)
class DailyRace:
    """Race today's deal: answered with ``race`` (you are seated in today's daily room)."""

    TYPE: ClassVar[str] = "daily_race"
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GetDaily:
    """Ask for a day's board (answered with ``daily``)."""

    TYPE: ClassVar[str] = "get_daily"
    day: str | None = None
    """The UTC date, ``YYYY-MM-DD``; ``None`` is today."""
    bots: bool = True
    """False leaves bots out."""
    offset: int = 0
    """Lines to skip (the page starts at place ``offset + 1``)."""
    limit: int = 20
    """The most lines to send (at most 100)."""
    id: int | None = None


register(DailyRace, id=REQUEST_ID)
register(
    GetDaily,
    day=Optional(DAY),
    bots=Bool(),
    offset=Int(0, 1_000_000),
    limit=Int(1, DAILY_PAGE_LIMIT),
    id=REQUEST_ID,
)


# ------------------------------------------------------ server -> client


@dataclass(frozen=True, slots=True, kw_only=True)
class DailyResult:
    """The end of a daily room, sent instead of ``finished``: the standings with nobody's
    moves and without the seed, both sealed until ``reveal_at`` (``get_daily`` then)."""

    TYPE: ClassVar[str] = "daily_result"
    race: str
    day: str
    """The day whose deal the room raced."""
    commitment: str
    """The day's commitment, as the race's snapshot had it."""
    reveal_at: int
    """Server time (ms) from which ``get_daily`` reveals the day's seed and moves."""
    standings: tuple[Standing, ...]
    """The room's standings, best first, each with ``moves`` empty."""
    started_at: int
    """Server time (ms) when the room started."""
    ended_at: int
    """Server time (ms) when the room ended."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Daily:
    """A day's board: the deal's commitment, its results in standings order and, once
    the day is revealed, its seed, every line's moves and its par."""

    TYPE: ClassVar[str] = "daily"
    day: str
    """The UTC date of the board (today's when ``get_daily`` named none)."""
    commitment: str
    """``engine.commitment(seed)``: published from the day's first request on."""
    ruleset: Ruleset
    reveal_at: int
    """Server time (ms) of the reveal: the day's end, plus its last room's countdown and
    time limit, so that no room of the day is still racing."""
    revealed: bool
    """Whether ``reveal_at`` has passed: the seed, the moves and the par are sent."""
    seed: str | None = None
    """The day's seed, once revealed (``None`` before)."""
    par: DailyPar | None = None
    """The deal's par, once revealed and searched for (``None`` before)."""
    bots: bool
    """Whether bots' lines are on this board (as asked)."""
    offset: int
    """The page's first line is at place ``offset + 1``."""
    total: int
    """Lines on the whole board (claimed players' results; for paging)."""
    entries: tuple[DailyEntry, ...]
    """The page's lines, best first by the standings rule (ties by player id)."""
    you: DailyEntry | None = None
    """Your own result this day (a claimed player's, or this session's as a guest), if
    you raced and your room has finished."""
    reply_to: int | None = None

    def to_result(self) -> RaceResult:
        """The lines of this page as one verifiable record (``protocol.result
        .verify_result`` re-deals the revealed seed, checks it against the commitment,
        replays every line's moves to its outcome and counts, and checks their order).
        Each line's racer id is its player's id, which is how the board orders ties.

        Raises ``ValueError`` before the reveal (no seed), or for a line that is not a
        finished game's.
        """
        if self.seed is None:
            raise ValueError(f"the daily deal of {self.day} is not revealed yet")
        return RaceResult(
            race_id=f"daily-{self.day}",
            seed=self.seed,
            commitment=self.commitment,
            ruleset=self.ruleset,
            racers=tuple(
                RacerResult(
                    racer_id=entry.player or entry.name,
                    name=entry.name,
                    bot=entry.bot,
                    outcome=RacerOutcome(entry.status.value),
                    score=entry.score,
                    finish_time=None if entry.finish_ms is None else entry.finish_ms / 1000,
                    cards_played=entry.cards_played,
                    face_up=entry.face_up,
                    face_down=entry.face_down,
                    moves=entry.moves,
                )
                for entry in self.entries
            ),
        )


register(
    DailyResult,
    race=RACE_CODE,
    day=DAY,
    commitment=COMMITMENT,
    reveal_at=MILLIS,
    standings=Array(Struct(Standing), 1000),
    started_at=MILLIS,
    ended_at=MILLIS,
)
register(
    Daily,
    day=DAY,
    commitment=COMMITMENT,
    ruleset=RulesetSpec(),
    reveal_at=MILLIS,
    revealed=Bool(),
    seed=Optional(Str(1, 256)),
    par=Optional(Struct(DailyPar)),
    bots=Bool(),
    offset=Int(0, 1_000_000),
    total=DAILY_COUNT,
    entries=Array(Struct(DailyEntry), DAILY_PAGE_LIMIT),
    you=Optional(Struct(DailyEntry)),
    reply_to=REQUEST_ID,
)

DailyClientMessage = DailyRace | GetDaily
"""Any daily message a client sends."""

DailyServerMessage = DailyResult | Daily
"""Any daily message the server sends."""

DAILY_CLIENT_MESSAGES: dict[str, type[DailyClientMessage]] = {
    cls.TYPE: cls for cls in (DailyRace, GetDaily)
}
DAILY_SERVER_MESSAGES: dict[str, type[DailyServerMessage]] = {
    cls.TYPE: cls for cls in (DailyResult, Daily)
}

CLIENT_MESSAGES.update(DAILY_CLIENT_MESSAGES)  # type: ignore[arg-type]
SERVER_MESSAGES.update(DAILY_SERVER_MESSAGES)  # type: ignore[arg-type]

#: Value types the messages above nest, in the order ``docs/protocol.md`` lists them.
DAILY_VALUE_TYPES: tuple[type, ...] = (DailyEntry, DailyPar)

#: The examples' day 2026-12-01: its seed (revealed) and its commitment.
_SEED = "3f9a1c7e5b2d8f604a1e9c3b7d5f2a8e6c4b0d9f1e3a5c7b"
_COMMITMENT = "1624af67d06be464a55f28e015907fde47b5ff0f994c2a2b4f0412d6a06a5dbd"

#: One example of every daily message, by wire type (``protocol.examples`` adds them).
DAILY_EXAMPLES: dict[str, DailyClientMessage | DailyServerMessage] = {
    m.TYPE: m
    for m in (
        DailyRace(id=21),
        GetDaily(day="2026-12-01", bots=False, offset=0, limit=20, id=22),
        DailyResult(
            race="D4W7KQ2M",
            day="2026-12-01",
            commitment=_COMMITMENT,
            reveal_at=1_796_170_215_000,
            standings=(
                Standing(place=1, racer="p-1a2b3c", name="Ann", bot=False,
                         status=RacerStatus.WON, score=7, cards_played=33, face_up=16,
                         face_down=0, finish_ms=212_480, moves=()),
            ),
            started_at=1_796_220_180_000 - 86_400_000,
            ended_at=1_796_220_180_000 - 86_400_000 + 212_480,
        ),
        Daily(
            day="2026-12-01",
            commitment=_COMMITMENT,
            ruleset=Ruleset(),
            reveal_at=1_796_170_215_000,
            revealed=True,
            seed=_SEED,
            par=DailyPar(score=9, proven=True, cards_used=31, at_most=9),
            bots=False,
            offset=0,
            total=1,
            entries=(
                DailyEntry(place=1, player="u-3c9e1f0a7b2d", name="Ann", bot=False,
                           status=RacerStatus.WON, score=7, cards_played=33, face_up=16,
                           face_down=0, finish_ms=212_480, race="D4W7KQ2M",
                           moves=((0, 0), (0, 1), (-1, 1))),
            ),
            you=None,
            reply_to=22,
        ),
    )
}


def encode_daily(message: DailyClientMessage | DailyServerMessage) -> bytes:
    """The frame for a daily message (:func:`~protocol.codec.encode`, typed for these)."""
    return encode(cast(Message, message))
