"""Players who come back: claimed names and player keys.

Registered like :mod:`protocol.tournament`: each class is a frozen dataclass with a wire
spec per field, and its ``TYPE`` joins :data:`~protocol.messages.CLIENT_MESSAGES` or
:data:`~protocol.messages.SERVER_MESSAGES` when this module is imported (importing
:mod:`protocol` does that). A client that never sends these messages never receives
their answers or their error codes.

A guest plays under a name unique among the connected players. A player who **claims**
its name (``claim_name``) is given a **player key** once (``player_key``): a secret that
later sessions present in ``hello.player_key`` to play as that player again, under that
name, from any machine. The server keeps only the key's SHA-256. Whoever holds the key
is the player: a stolen key takes the name, and a lost key loses it.

>>> from protocol.codec import decode_client, encode
>>> decode_client(encode(ClaimName(id=3)))
ClaimName(id=3)
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
    PLAYER_ID,
    RACE_CODE,
    REQUEST_ID,
    SCORE,
    SERVER_MESSAGES,
    TOKEN,
    Message,
    RacerStatus,
)
from protocol.schema import (
    Array,
    Bool,
    Choice,
    Int,
    Optional,
    RulesetSpec,
    Str,
    Struct,
    register,
)


class Board(StrEnum):
    """Which leaderboard: what it ranks players of a pool by."""

    RATING = "rating"
    """The conservative rating, best first."""
    WINS = "wins"
    """Rated races finished first, most first."""
    BEST_SCORE = "best_score"
    """The best score (stock left on a game won) in a rated race, best first."""


#: A rating as sent: the library's ordinal (mu - 3 sigma) in hundredths, rounded.
RATING = Int(-1_000_000, 1_000_000)
COUNT = Int(0, 2**31 - 1)
#: The most lines of a leaderboard one answer holds.
PAGE_LIMIT = 100
#: A leaderboard's cursor: where the next page starts, as the server wrote it.
CURSOR = Str(1, 128, r"[A-Za-z0-9_.:+-]+")
#: The most points of a rating's history, and of recent races, a profile holds.
PROFILE_HISTORY = 100

#: Rated races a player has played in a pool before its rating stops being provisional
#: (``provisional`` in ``rating``, leaderboards and profiles).
PROVISIONAL_GAMES = 10
PROFILE_RACES = 20


# ------------------------------------------------------------- value types


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderboardEntry:
    """One player's line on a leaderboard."""

    rank: int
    """1 for the first line of the board (offset included)."""
    player: str
    name: str
    bot: bool
    """A bot's line is always marked (and filtered out with ``bots: false``)."""
    rating: int
    """The conservative rating (the ordinal, mu - 3 sigma, in hundredths)."""
    provisional: bool
    """Fewer than 10 rated races in the pool: the rating is still settling."""
    games: int
    """Rated races played in the pool."""
    wins: int
    """Rated races finished first."""
    best_score: int | None = None
    """The best stock left on a game won in a rated race; nil before the first win."""


register(
    LeaderboardEntry,
    rank=Int(1, 2**31 - 1),
    player=PLAYER_ID,
    name=NAME,
    bot=Bool(),
    rating=RATING,
    provisional=Bool(),
    games=COUNT,
    wins=COUNT,
    best_score=SCORE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolRecord:
    """A player's rating and counts in one pool (a ruleset)."""

    ruleset: Ruleset
    rating: int
    provisional: bool
    games: int
    wins: int
    won_games: int
    """Rated games won (the grid cleared)."""
    best_score: int | None = None
    stock_left: int
    """Total stock left over the rated games won (divided by ``won_games``: the average)."""
    history: tuple[int, ...]
    """The rating after each of the latest rated races in the pool (at most 100), oldest
    first."""


register(
    PoolRecord,
    ruleset=RulesetSpec(),
    rating=RATING,
    provisional=Bool(),
    games=COUNT,
    wins=COUNT,
    won_games=COUNT,
    best_score=SCORE,
    stock_left=COUNT,
    history=Array(RATING, PROFILE_HISTORY),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecentRace:
    """One of a player's latest races: ``spectate`` or ``get_result`` replays it."""

    race: str
    ended_at: int
    ruleset: Ruleset
    place: int
    racers: int
    status: RacerStatus
    score: int | None = None
    rated: bool
    rating: int | None = None
    """The rating after it, when it was rated."""


register(
    RecentRace,
    race=RACE_CODE,
    ended_at=MILLIS,
    ruleset=RulesetSpec(),
    place=Int(1, 1000),
    racers=Int(1, 1000),
    status=Choice(RacerStatus),
    score=SCORE,
    rated=Bool(),
    rating=Optional(RATING),
)

# ------------------------------------------------------ client -> server


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimName:
    """Claim your name for good: answered by ``player_key``, the key to play as you again."""

    TYPE: ClassVar[str] = "claim_name"
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GetLeaderboard:
    """Ask for a page of a pool's leaderboard (answered by ``leaderboard``)."""

    TYPE: ClassVar[str] = "get_leaderboard"
    board: Board = Board.RATING
    ruleset: Ruleset = field(default_factory=Ruleset)
    """The pool: rated races of these rules (the published game's by default)."""
    bots: bool = True
    """False leaves bots out."""
    after: str | None = None
    """A page's ``next``: this page starts after that page's last line (its board, pool
    and ``bots`` must be the same as that page's). Nil starts at the top."""
    offset: int = 0
    """Lines to skip (after ``after``'s line, or from the top). Prefer ``after`` to page:
    a deep offset costs the server more."""
    limit: int = 20
    id: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GetProfile:
    """Ask for a claimed player's profile (answered by ``profile``)."""

    TYPE: ClassVar[str] = "get_profile"
    player: str | None = None
    """The player's id (from a leaderboard, a ``welcome`` or a ``player_key``)."""
    name: str | None = None
    """Or its name, matched ignoring case and look-alike letters as claims are. Exactly
    one of ``player`` and ``name``, or ``bad_message``."""
    id: int | None = None


register(ClaimName, id=REQUEST_ID)
register(
    GetLeaderboard,
    board=Choice(Board),
    ruleset=RulesetSpec(),
    bots=Bool(),
    after=Optional(CURSOR),
    offset=Int(0, 1_000_000),
    limit=Int(1, PAGE_LIMIT),
    id=REQUEST_ID,
)
register(GetProfile, player=Optional(PLAYER_ID), name=Optional(NAME), id=REQUEST_ID)


# ------------------------------------------------------ server -> client


@dataclass(frozen=True, slots=True, kw_only=True)
class PlayerKey:
    """Your name is yours: the key to play as you from now on. Keep it secret and safe:
    whoever holds it plays as you (a stolen key takes the name), and the server cannot
    give it again (a lost key loses the name)."""

    TYPE: ClassVar[str] = "player_key"
    player: str
    """Your claimed player's public id (``welcome.player`` from now on)."""
    name: str
    """The name claimed."""
    key: str
    """Secret: send it as ``hello.player_key`` to play as this player again. Sent once."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RatingChanged:
    """A rated race you raced has changed your rating (sent after its ``finished``)."""

    TYPE: ClassVar[str] = "rating"
    race: str
    ruleset: Ruleset
    """The pool."""
    before: int
    rating: int
    """The rating now."""
    provisional: bool
    games: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Leaderboard:
    """A page of a pool's leaderboard: ``entries`` from rank ``offset + 1``."""

    TYPE: ClassVar[str] = "leaderboard"
    board: Board
    ruleset: Ruleset
    bots: bool
    offset: int
    """Lines of the board before this page (the first entry's rank is ``offset + 1``)."""
    total: int
    """Lines on the whole board (for paging)."""
    entries: tuple[LeaderboardEntry, ...]
    next: str | None = None
    """The cursor of the page after this one (send it as ``get_leaderboard.after``); nil
    when this page ends the board."""
    reply_to: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """A claimed player: its rating in each pool it was rated in, and its latest races."""

    TYPE: ClassVar[str] = "profile"
    player: str
    name: str
    bot: bool
    pools: tuple[PoolRecord, ...]
    """Every pool the player was rated in, most rated races first."""
    recent: tuple[RecentRace, ...]
    """The player's latest races (at most 20), newest first."""
    reply_to: int | None = None


register(PlayerKey, player=PLAYER_ID, name=NAME, key=TOKEN, reply_to=REQUEST_ID)
register(
    RatingChanged,
    race=RACE_CODE,
    ruleset=RulesetSpec(),
    before=RATING,
    rating=RATING,
    provisional=Bool(),
    games=COUNT,
)
register(
    Leaderboard,
    board=Choice(Board),
    ruleset=RulesetSpec(),
    bots=Bool(),
    offset=Int(0, 1_000_000),
    total=COUNT,
    entries=Array(Struct(LeaderboardEntry), PAGE_LIMIT),
    next=Optional(CURSOR),
    reply_to=REQUEST_ID,
)
register(
    Profile,
    player=PLAYER_ID,
    name=NAME,
    bot=Bool(),
    pools=Array(Struct(PoolRecord), 100),
    recent=Array(Struct(RecentRace), PROFILE_RACES),
    reply_to=REQUEST_ID,
)

PlayerClientMessage = ClaimName | GetLeaderboard | GetProfile
"""Any players' message a client sends."""

PlayerServerMessage = PlayerKey | RatingChanged | Leaderboard | Profile
"""Any players' message the server sends."""

#: The players' message classes by wire type, one table per direction.
PLAYER_CLIENT_MESSAGES: dict[str, type[PlayerClientMessage]] = {
    cls.TYPE: cls for cls in (ClaimName, GetLeaderboard, GetProfile)
}
PLAYER_SERVER_MESSAGES: dict[str, type[PlayerServerMessage]] = {
    cls.TYPE: cls for cls in (PlayerKey, RatingChanged, Leaderboard, Profile)
}

# The codec reads these tables at decode time, so registering here is enough.
CLIENT_MESSAGES.update(PLAYER_CLIENT_MESSAGES)  # type: ignore[arg-type]
SERVER_MESSAGES.update(PLAYER_SERVER_MESSAGES)  # type: ignore[arg-type]

#: Value types the messages above nest, in the order ``docs/protocol.md`` lists them.
PLAYER_VALUE_TYPES: tuple[type, ...] = (LeaderboardEntry, PoolRecord, RecentRace)

#: One example of every players' message, by wire type (``protocol.examples`` adds them).
PLAYER_EXAMPLES: dict[str, PlayerClientMessage | PlayerServerMessage] = {
    m.TYPE: m
    for m in (
        ClaimName(id=18),
        PlayerKey(
            player="u-3c9e1f0a7b2d",
            name="Ann",
            key="pK3y-a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8",
            reply_to=18,
        ),
        GetLeaderboard(board=Board.RATING, bots=False, offset=0, limit=20, id=19),
        GetProfile(player="u-3c9e1f0a7b2d", id=20),
        RatingChanged(
            race="Q7K2M9XA", ruleset=Ruleset(), before=512, rating=640, provisional=True,
            games=4,
        ),
        Leaderboard(
            board=Board.RATING,
            ruleset=Ruleset(),
            bots=False,
            offset=0,
            total=2,
            entries=(
                LeaderboardEntry(rank=1, player="u-3c9e1f0a7b2d", name="Ann", bot=False,
                                 rating=1412, provisional=False, games=31, wins=12,
                                 best_score=9),
                LeaderboardEntry(rank=2, player="u-70aa19c4e2f1", name="Bea", bot=False,
                                 rating=640, provisional=True, games=4, wins=1),
            ),
            reply_to=19,
        ),
        Profile(
            player="u-3c9e1f0a7b2d",
            name="Ann",
            bot=False,
            pools=(
                PoolRecord(ruleset=Ruleset(), rating=1412, provisional=False, games=31,
                           wins=12, won_games=9, best_score=9, stock_left=41,
                           history=(0, 310, 540, 1412)),
            ),
            recent=(
                RecentRace(race="Q7K2M9XA", ended_at=1_767_226_500_000, ruleset=Ruleset(),
                           place=1, racers=4, status=RacerStatus.WON, score=6, rated=True,
                           rating=1412),
            ),
            reply_to=20,
        ),
    )
}


def encode_players(message: PlayerClientMessage | PlayerServerMessage) -> bytes:
    """The frame for a players' message (:func:`~protocol.codec.encode`, typed for these)."""
    return encode(cast(Message, message))
