"""Players who come back, in the store: claimed names and their keys, ratings, the races
each claimed player raced, and the daily deal.

These tables are not written in the group commit of the moves: a claim may find its
name taken, a daily attempt may find the day raced already, and a rating reads before it
writes. Each of those is a **job**, its own transaction, written once here as a
generator of statements (SQL both databases take, with ``?`` placeholders) that receives
each statement's rows and returns its answer; each store runs jobs its own way
(:meth:`server.store.Store.run`). A job that writes runs alone: SQLite's write lock, and
in PostgreSQL an advisory lock every writing job takes first, so a rating's read and
write see no other node's rating in between, and a claim's check and insert no other
claim.

>>> job = find_player(b"digest")
>>> next(job)[0].split(" FROM ")[1]
'claimed_players WHERE key_hash = ?'
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, NamedTuple

from protocol.names import lookalike_keys
from protocol.result import RaceResult, RacerOutcome, RacerResult
from server.ratings import Skill, new_skill, ranks, rate

Row = tuple[Any, ...]
Statement = tuple[str, tuple[Any, ...]]
Job = Generator[Statement, list[Row], Any]
"""A transaction: yields statements, is sent each one's rows, returns its answer."""
JobFactory = Callable[[], Job]
"""What a store is given to run: it makes the job (again, to try once more)."""

#: The column types of a table's text, by store: each schema below is written once, with
#: ``{text}``, ``{bytes}``, ``{real}``, ``{int}`` and ``{bigint}`` in place of its types,
#: and filled in for SQLite (the journal's file) and for PostgreSQL.
SQLITE_TYPES = {
    "text": "TEXT",
    "bytes": "BLOB",
    "real": "REAL",
    "int": "INTEGER",
    "bigint": "INTEGER",
}
POSTGRES_TYPES = {
    "text": "text",
    "bytes": "bytea",
    "real": "double precision",
    "int": "integer",
    "bigint": "bigint",
}

#: The players' tables, their types as placeholders (:data:`SQLITE_TYPES`).
TABLES = """
CREATE TABLE IF NOT EXISTS claimed_players (
    player_id {text} PRIMARY KEY,
    key_hash {bytes} NOT NULL UNIQUE,
    name {text} NOT NULL,
    bot {int} NOT NULL,
    created_at {real} NOT NULL
);
CREATE TABLE IF NOT EXISTS claimed_names (
    look {text} PRIMARY KEY,
    player_id {text} NOT NULL
);
CREATE TABLE IF NOT EXISTS ratings (
    player_id {text} NOT NULL,
    pool {text} NOT NULL,
    name {text} NOT NULL,
    bot {int} NOT NULL,
    mu {real} NOT NULL,
    sigma {real} NOT NULL,
    ordinal {real} NOT NULL,
    games {int} NOT NULL,
    wins {int} NOT NULL,
    won_games {int} NOT NULL,
    stock_left {int} NOT NULL,
    best_score {int},
    updated_at {real} NOT NULL,
    PRIMARY KEY (player_id, pool)
);
CREATE INDEX IF NOT EXISTS ratings_by_rating ON ratings (pool, ordinal DESC, player_id);
CREATE INDEX IF NOT EXISTS ratings_by_rating_humans
    ON ratings (pool, bot, ordinal DESC, player_id);
CREATE INDEX IF NOT EXISTS ratings_by_wins ON ratings (pool, wins DESC, player_id);
CREATE INDEX IF NOT EXISTS ratings_by_wins_humans ON ratings (pool, bot, wins DESC, player_id);
CREATE INDEX IF NOT EXISTS ratings_by_score ON ratings (pool, best_score DESC, player_id);
CREATE INDEX IF NOT EXISTS ratings_by_score_humans
    ON ratings (pool, bot, best_score DESC, player_id);
CREATE TABLE IF NOT EXISTS player_races (
    player_id {text} NOT NULL,
    race_id {text} NOT NULL,
    at {real} NOT NULL,
    pool {text} NOT NULL,
    place {int} NOT NULL,
    racers {int} NOT NULL,
    outcome {text} NOT NULL,
    score {int},
    rated {int} NOT NULL,
    ordinal {real},
    PRIMARY KEY (player_id, race_id)
);
CREATE INDEX IF NOT EXISTS player_races_recent ON player_races (player_id, at DESC);
CREATE TABLE IF NOT EXISTS races_recorded (
    race_id {text} PRIMARY KEY,
    at {real} NOT NULL
);
"""
SQLITE_SCHEMA = TABLES.format_map(SQLITE_TYPES)
POSTGRES_SCHEMA = TABLES.format_map(POSTGRES_TYPES)


# ------------------------------------------------------------------ identity


def key_digest(key: str) -> bytes:
    """The SHA-256 of a player key: all the store keeps of it."""
    return hashlib.sha256(key.encode("utf-8")).digest()


def new_player_key() -> str:
    """A new player key: 256 random bits, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


def new_player_id() -> str:
    """A claimed player's public id."""
    return "u-" + secrets.token_hex(6)


@dataclass(frozen=True, slots=True)
class ClaimedPlayer:
    """A player who claimed a name: public id, name, whether a bot claimed it."""

    player_id: str
    name: str
    bot: bool


def claim_name(
    session_id: str, name: str, bot: bool, digest: bytes, now: float
) -> Generator[Statement, list[Row], ClaimedPlayer | None]:
    """Claim ``name`` for the session ``session_id`` with the key whose digest is
    ``digest``: the new player, or ``None`` when a claimed name looks the same (ignoring
    case and look-alike letters: each of the name's :func:`~protocol.names.lookalike_keys`
    may belong to one player only)."""
    looks = sorted(lookalike_keys(name))
    marks = ", ".join("?" * len(looks))
    taken = yield (f"SELECT 1 FROM claimed_names WHERE look IN ({marks})", tuple(looks))
    if taken:
        return None
    player = ClaimedPlayer(new_player_id(), name, bot)
    yield (
        "INSERT INTO claimed_players (player_id, key_hash, name, bot, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (player.player_id, digest, name, int(bot), now),
    )
    for look in looks:
        yield (
            "INSERT INTO claimed_names (look, player_id) VALUES (?, ?)",
            (look, player.player_id),
        )
    yield ("UPDATE players SET claimed_by = ? WHERE player_id = ?", (player.player_id, session_id))
    return player


def find_player(digest: bytes) -> Generator[Statement, list[Row], ClaimedPlayer | None]:
    """The player whose key has the digest ``digest``, if any."""
    rows = yield (
        "SELECT player_id, name, bot FROM claimed_players WHERE key_hash = ?", (digest,)
    )
    if not rows:
        return None
    player_id, name, bot = rows[0]
    return ClaimedPlayer(player_id, name, bool(bot))


def player_named(name: str) -> Generator[Statement, list[Row], str | None]:
    """The id of the claimed player whose name looks the same as ``name`` (ignoring case
    and look-alike letters, as claims are checked), if any."""
    looks = sorted(lookalike_keys(name))
    marks = ", ".join("?" * len(looks))
    rows = yield (
        f"SELECT player_id FROM claimed_names WHERE look IN ({marks}) LIMIT 1", tuple(looks)
    )
    return str(rows[0][0]) if rows else None


def name_claimed(name: str) -> Generator[Statement, list[Row], bool]:
    """Whether a claimed name looks the same as ``name``."""
    return (yield from player_named(name)) is not None


# ------------------------------------------------------------------- ratings


@dataclass(frozen=True, slots=True)
class RatingChange:
    """What a rated race did to one claimed player's rating."""

    racer_id: str
    """The session that raced (its racer id in the race)."""
    player_id: str
    pool: str
    before: Skill
    after: Skill
    games: int
    """Rated races in the pool, this one included."""


def record_race(
    result: RaceResult, pool: str, rated: bool, at: float
) -> Generator[Statement, list[Row], list[RatingChange]]:
    """Keep a finished race in its claimed players' records, once (a race already
    recorded, by this node or another, is left alone): a line in each one's recent
    races and, for a ``rated`` race with at least two claimed players, their new ratings
    in ``pool`` (:mod:`server.ratings`) and their counts there (games, wins: first
    places, games won, stock left over them, best score). Guests are not rated, and do
    not count: the claimed players are ranked among themselves. A player raced by two
    sessions counts once, at its better place. Returns the rating changes."""
    if (yield ("SELECT 1 FROM races_recorded WHERE race_id = ?", (result.race_id,))):
        return []
    yield ("INSERT INTO races_recorded (race_id, at) VALUES (?, ?)", (result.race_id, at))
    racer_ids = tuple(entry.racer_id for entry in result.racers)
    if not racer_ids:
        return []
    rows = yield (
        "SELECT s.player_id, c.player_id, c.name, c.bot FROM players s"
        " JOIN claimed_players c ON c.player_id = s.claimed_by"
        f" WHERE s.player_id IN ({', '.join('?' * len(racer_ids))})",
        racer_ids,
    )
    claimed = {session: ClaimedPlayer(player, name, bool(bot)) for session, player, name, bot
               in rows}
    racers: list[_Racer] = []
    seen: set[str] = set()
    for place, (entry, rank) in enumerate(zip(result.racers, ranks(result.racers),
                                              strict=True), start=1):
        player = claimed.get(entry.racer_id)
        if player is not None and player.player_id not in seen:
            seen.add(player.player_id)
            racers.append(_Racer(entry, place, rank == 1, player))
    rating = rated and len(racers) >= 2
    changes: list[RatingChange] = []
    if rating:
        changes = yield from _rate(result, pool, at, racers)
    after = {change.player_id: change.after.ordinal for change in changes}
    for entry, place, _, player in racers:
        yield (
            "INSERT INTO player_races (player_id, race_id, at, pool, place, racers, outcome,"
            " score, rated, ordinal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (player_id, race_id) DO NOTHING",
            (player.player_id, result.race_id, at, pool, place, len(result.racers),
             entry.outcome.value, entry.score, int(rating), after.get(player.player_id)),
        )
    return changes


class _Racer(NamedTuple):
    """A claimed player's line in a race: its place in the standings, whether it came
    first (ranked as ratings rank), who it is."""

    entry: RacerResult
    place: int
    first: bool
    player: ClaimedPlayer


_RATING_COLUMNS = "mu, sigma, games, wins, won_games, stock_left, best_score"


def _rate(
    result: RaceResult, pool: str, at: float, racers: list[_Racer]
) -> Generator[Statement, list[Row], list[RatingChange]]:
    players = tuple(racer.player.player_id for racer in racers)
    rows = yield (
        f"SELECT player_id, {_RATING_COLUMNS} FROM ratings WHERE pool = ? AND player_id IN"
        f" ({', '.join('?' * len(players))})",
        (pool, *players),
    )
    current = {row[0]: row[1:] for row in rows}
    before = [
        Skill(current[p][0], current[p][1]) if p in current else new_skill() for p in players
    ]
    after = rate(before, ranks([racer.entry for racer in racers]))
    changes = []
    for (entry, _, first, player), old, new in zip(racers, before, after, strict=True):
        games, wins, won_games, stock_left, best = current.get(
            player.player_id, (0, 0, 0, 0, 0, 0, None)
        )[2:]
        won = entry.outcome is RacerOutcome.WON
        score = entry.score if won else None
        if score is not None and (best is None or score > best):
            best = score
        yield (
            "INSERT INTO ratings (player_id, pool, name, bot, mu, sigma, ordinal, games, wins,"
            " won_games, stock_left, best_score, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (player_id, pool) DO UPDATE SET name = excluded.name,"
            " bot = excluded.bot, mu = excluded.mu, sigma = excluded.sigma,"
            " ordinal = excluded.ordinal, games = excluded.games, wins = excluded.wins,"
            " won_games = excluded.won_games, stock_left = excluded.stock_left,"
            " best_score = excluded.best_score, updated_at = excluded.updated_at",
            (player.player_id, pool, player.name, int(player.bot), new.mu, new.sigma,
             new.ordinal, games + 1, wins + first, won_games + won,
             stock_left + (score or 0), best, at),
        )
        changes.append(RatingChange(entry.racer_id, player.player_id, pool, old, new, games + 1))
    return changes


# -------------------------------------------------------------- leaderboards


@dataclass(frozen=True, slots=True)
class BoardLine:
    """A player's line on a leaderboard, as stored."""

    player_id: str
    name: str
    bot: bool
    ordinal: float
    games: int
    wins: int
    best_score: int | None


#: The column each leaderboard orders by, greatest first (then by player id: a stable
#: order for paging). Each has an index of its own, with and without bots (see the tables).
BOARD_COLUMNS = {
    "rating": "ordinal",
    "wins": "wins",
    "best_score": "best_score",
}


@dataclass(frozen=True, slots=True)
class BoardKey:
    """Where a line stands on a leaderboard: its board's column (the ordinal, wins or
    best score) and its player id. A page that starts after a key is read from the
    index at that key (keyset paging), so a page deep in the board costs what the top
    page does, where an offset walks the index up to the page."""

    value: float
    player_id: str

    @classmethod
    def of(cls, board: str, line: BoardLine) -> BoardKey:
        """The key of ``line`` on the leaderboard ``board``."""
        value = {"rating": line.ordinal, "wins": line.wins, "best_score": line.best_score}
        found = value[board]
        assert found is not None, "a line without a best score is on no best_score board"
        return cls(found, line.player_id)


def leaderboard(
    pool: str, board: str, bots: bool, after: BoardKey | None, offset: int, limit: int
) -> Generator[Statement, list[Row], tuple[int, list[BoardLine]]]:
    """A page of ``pool``'s leaderboard ``board`` (``rating``, ``wins``, ``best_score``),
    with bots or without, of the lines after the key ``after`` (from the top if
    ``None``), ``offset`` of them skipped: how many lines the whole board has, and the
    page's lines."""
    column = BOARD_COLUMNS[board]
    where = "pool = ?" + ("" if bots else " AND bot = 0")
    if board == "best_score":
        where += " AND best_score IS NOT NULL"
    (total,), = (yield (f"SELECT count(*) FROM ratings WHERE {where}", (pool,)))
    page: tuple[Any, ...] = (pool,)
    if after is not None:
        # Written so that both databases read it as a range of the board's index (the
        # column at most the key's) with the ties of the key's value filtered.
        where += f" AND {column} <= ? AND ({column} < ? OR player_id > ?)"
        page += (after.value, after.value, after.player_id)
    rows = yield (
        "SELECT player_id, name, bot, ordinal, games, wins, best_score FROM ratings"
        f" WHERE {where} ORDER BY {column} DESC, player_id LIMIT ? OFFSET ?",
        (*page, limit, offset),
    )
    return int(total), [
        BoardLine(player, name, bool(bot), ordinal, games, wins, best)
        for player, name, bot, ordinal, games, wins, best in rows
    ]


# ------------------------------------------------------------------ profiles


@dataclass(frozen=True, slots=True)
class PoolLine:
    """A player's rating and counts in one pool, and its rating's latest history."""

    pool: str
    skill: Skill
    games: int
    wins: int
    won_games: int
    stock_left: int
    best_score: int | None
    history: list[float]
    """Ordinals after the latest rated races, oldest first."""


@dataclass(frozen=True, slots=True)
class RaceLine:
    """One of a player's races, as its record keeps it."""

    race_id: str
    at: float
    pool: str
    place: int
    racers: int
    outcome: str
    score: int | None
    rated: bool
    ordinal: float | None


@dataclass(frozen=True, slots=True)
class PlayerRecordView:
    """What a profile shows of a claimed player."""

    player: ClaimedPlayer
    pools: list[PoolLine]
    recent: list[RaceLine]


def profile(
    player_id: str, history: int, recent: int
) -> Generator[Statement, list[Row], PlayerRecordView | None]:
    """The profile of the claimed player ``player_id`` (``None`` if there is none): each
    pool it was rated in with the latest ``history`` ratings, and its latest ``recent``
    races."""
    rows = yield ("SELECT player_id, name, bot FROM claimed_players WHERE player_id = ?",
                  (player_id,))
    if not rows:
        return None
    player = ClaimedPlayer(rows[0][0], rows[0][1], bool(rows[0][2]))
    pools = []
    for row in (yield (
        f"SELECT pool, {_RATING_COLUMNS} FROM ratings WHERE player_id = ?"
        " ORDER BY games DESC, pool", (player_id,),
    )):
        pool, mu, sigma, games, wins, won_games, stock_left, best = row
        points = yield (
            "SELECT ordinal FROM player_races WHERE player_id = ? AND pool = ? AND rated = 1"
            " ORDER BY at DESC, race_id DESC LIMIT ?", (player_id, pool, history),
        )
        pools.append(PoolLine(pool, Skill(mu, sigma), games, wins, won_games, stock_left, best,
                              [point for (point,) in reversed(points)]))
    races = yield (
        "SELECT race_id, at, pool, place, racers, outcome, score, rated, ordinal"
        " FROM player_races WHERE player_id = ? ORDER BY at DESC, race_id DESC LIMIT ?",
        (player_id, recent),
    )
    return PlayerRecordView(player, pools, [
        RaceLine(race_id, at, pool, place, racers, outcome, score, bool(rated), ordinal)
        for race_id, at, pool, place, racers, outcome, score, rated, ordinal in races
    ])


def profile_named(
    name: str, history: int, recent: int
) -> Generator[Statement, list[Row], PlayerRecordView | None]:
    """The profile (as :func:`profile`) of the claimed player whose name looks the same
    as ``name`` (:func:`player_named`), if any."""
    player_id = yield from player_named(name)
    if player_id is None:
        return None
    return (yield from profile(player_id, history, recent))
