"""The daily deal in the store: each day's seed and commitment, and each attempt at it.

Two tables, created with the journal's (SQLite) or the PostgreSQL store's own:

- ``daily_deals``: one row per day, its seed (drawn at random at the day's first request
  and kept secret until the reveal), its commitment, its rules, and its par once searched.
  A day's row is inserted once (``ON CONFLICT DO NOTHING``): when two nodes draw a seed
  for the same day at once, the first insert wins and both read it back.
- ``daily_attempts``: one row per attempt, keyed by ``(day, entrant)``, where the
  entrant is the claimed player (or ``guest:`` and the session, for a guest). That key
  is what makes an attempt once a day, whichever node a player comes through: a second
  attempt is an insert that conflicts and inserts nothing. The row is taken when the
  racer is seated, before any card is dealt, and filled with its result when its room
  finishes; its ranking columns (``rank_*``) hold the standings rule
  (:func:`protocol.result.standing_key`) so that the board is one indexed read.

Every function here is a job (:mod:`server.player_store`): a generator of statements that
each store runs as one transaction of its own, off the moves' group commit.

>>> job = read_deal("2026-12-01")
>>> next(job)[0].split(" WHERE ")[1]
'day = ?'
"""

from __future__ import annotations

import json
from collections.abc import Generator
from dataclasses import dataclass

from engine import Position, Ruleset, commitment
from protocol.result import RaceResult, RacerOutcome, RacerResult, standing_key
from server.player_store import POSTGRES_TYPES, SQLITE_TYPES, Row, Statement

#: The daily deal's tables, their types as placeholders (:data:`server.player_store.SQLITE_TYPES`).
TABLES = """
CREATE TABLE IF NOT EXISTS daily_deals (
    day {text} PRIMARY KEY,
    seed {text} NOT NULL,
    commitment {text} NOT NULL,
    ruleset {text} NOT NULL,
    created_at {real} NOT NULL,
    par_searched {int} NOT NULL DEFAULT 0,
    par_score {int},
    par_proven {int},
    par_cards_used {int},
    par_at_most {int}
);
CREATE TABLE IF NOT EXISTS daily_attempts (
    day {text} NOT NULL,
    entrant {text} NOT NULL,
    session_id {text} NOT NULL,
    player_id {text},
    name {text} NOT NULL,
    bot {int} NOT NULL,
    taken_at {real} NOT NULL,
    race_id {text},
    outcome {text},
    score {int},
    cards_played {int},
    face_up {int},
    face_down {int},
    finish_ms {bigint},
    moves {text},
    rank_group {int},
    rank_a {int},
    rank_b {int},
    rank_c {int},
    rank_finish {bigint},
    PRIMARY KEY (day, entrant)
);
CREATE INDEX IF NOT EXISTS daily_board
    ON daily_attempts (day, rank_group, rank_a, rank_b, rank_c, rank_finish, entrant);
CREATE INDEX IF NOT EXISTS daily_attempts_by_session ON daily_attempts (day, session_id);
"""
SQLITE_SCHEMA = TABLES.format_map(SQLITE_TYPES)
POSTGRES_SCHEMA = TABLES.format_map(POSTGRES_TYPES)

#: ``rank_finish`` of a racer with no finish time (timed out): after every time.
_NO_FINISH = 2**53


# --------------------------------------------------------------------- deals


@dataclass(frozen=True, slots=True)
class DailyDeal:
    """A day's deal as stored (the seed is secret until the day is revealed)."""

    day: str
    seed: str
    commitment: str
    ruleset: Ruleset
    par: ParFound | None
    """The par, once searched for after the reveal."""


@dataclass(frozen=True, slots=True)
class ParFound:
    """A par search's answer, as kept with the day's deal."""

    score: int | None
    proven: bool
    cards_used: int | None
    at_most: int | None


_DEAL_COLUMNS = (
    "day, seed, commitment, ruleset, par_searched, par_score, par_proven, par_cards_used,"
    " par_at_most"
)


def _deal(row: Row) -> DailyDeal:
    day, seed, commits, ruleset, searched, score, proven, cards_used, at_most = row
    par = ParFound(score, bool(proven), cards_used, at_most) if searched else None
    return DailyDeal(day, seed, commits, Ruleset.from_dict(json.loads(ruleset)), par)


def deal_of_day(
    day: str, fresh_seed: str, ruleset: Ruleset, now: float
) -> Generator[Statement, list[Row], DailyDeal]:
    """``day``'s deal: the one stored, or, on the day's first request, ``fresh_seed`` (a
    random seed the caller drew) stored with its commitment. Of two nodes that draw one
    at once, the first insert wins and both return it."""
    yield (
        "INSERT INTO daily_deals (day, seed, commitment, ruleset, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (day) DO NOTHING",
        (day, fresh_seed, commitment(fresh_seed), json.dumps(ruleset.to_dict()), now),
    )
    rows = yield (f"SELECT {_DEAL_COLUMNS} FROM daily_deals WHERE day = ?", (day,))
    return _deal(rows[0])


def read_deal(day: str) -> Generator[Statement, list[Row], DailyDeal | None]:
    """``day``'s deal, if one was dealt."""
    rows = yield (f"SELECT {_DEAL_COLUMNS} FROM daily_deals WHERE day = ?", (day,))
    return _deal(rows[0]) if rows else None


def deal_wanting_par(latest: str) -> Generator[Statement, list[Row], DailyDeal | None]:
    """The latest day up to ``latest`` (the last revealed one) whose par was never
    searched for, if any."""
    rows = yield (
        f"SELECT {_DEAL_COLUMNS} FROM daily_deals WHERE par_searched = 0 AND day <= ?"
        " ORDER BY day DESC LIMIT 1",
        (latest,),
    )
    return _deal(rows[0]) if rows else None


def keep_par(day: str, par: ParFound) -> Generator[Statement, list[Row], None]:
    """Keep ``day``'s par (found after its reveal)."""
    yield (
        "UPDATE daily_deals SET par_searched = 1, par_score = ?, par_proven = ?,"
        " par_cards_used = ?, par_at_most = ? WHERE day = ?",
        (par.score, int(par.proven), par.cards_used, par.at_most, day),
    )


# ------------------------------------------------------------------ attempts


def take_attempt(
    day: str, entrant: str, session_id: str, player: str | None, name: str, bot: bool,
    now: float,
) -> Generator[Statement, list[Row], bool]:
    """Take ``entrant``'s attempt at ``day``'s deal: ``False`` if it has one already
    (the key ``(day, entrant)`` refuses a second row, on whichever node it is tried), or
    if the session ``session_id`` took one as another entrant (a guest who has raced and
    then claims a name has seen the deal)."""
    if (yield ("SELECT 1 FROM daily_attempts WHERE day = ? AND session_id = ? LIMIT 1",
               (day, session_id))):
        return False
    rows = yield (
        "INSERT INTO daily_attempts (day, entrant, session_id, player_id, name, bot, taken_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (day, entrant) DO NOTHING RETURNING entrant",
        (day, entrant, session_id, player, name, int(bot), now),
    )
    return bool(rows)


def release_attempt(day: str, session_id: str) -> Generator[Statement, list[Row], None]:
    """Give back ``session_id``'s attempt at ``day``'s deal when it left its room before
    the start (it drew no card); an attempt with a result is kept."""
    yield (
        "DELETE FROM daily_attempts WHERE day = ? AND session_id = ? AND outcome IS NULL"
        " AND race_id IS NULL",
        (day, session_id),
    )


def record_room(day: str, result: RaceResult) -> Generator[Statement, list[Row], int]:
    """Fill in the attempts raced in a finished room of ``day`` (each racer is a session
    that took one) with their results; returns how many were filled (an attempt already
    filled, by this node or another, is left as it is)."""
    filled = 0
    for entry in result.racers:
        group, a, b, c, finish = standing_key(entry)
        rows = yield (
            "UPDATE daily_attempts SET race_id = ?, outcome = ?, score = ?, cards_played = ?,"
            " face_up = ?, face_down = ?, finish_ms = ?, moves = ?, rank_group = ?,"
            " rank_a = ?, rank_b = ?, rank_c = ?, rank_finish = ?"
            " WHERE day = ? AND session_id = ? AND outcome IS NULL RETURNING entrant",
            (result.race_id, entry.outcome.value, entry.score, entry.cards_played,
             entry.face_up, entry.face_down, _finish_ms(entry),
             json.dumps([list(move) for move in entry.moves]),
             group, a, b, c, _NO_FINISH if finish == float("inf") else int(finish),
             day, entry.racer_id),
        )
        filled += len(rows)
    return filled


def _finish_ms(entry: RacerResult) -> int | None:
    return None if entry.finish_time is None else round(entry.finish_time * 1000)


# --------------------------------------------------------------------- board


@dataclass(frozen=True, slots=True)
class AttemptLine:
    """A finished attempt, as stored."""

    entrant: str
    player_id: str | None
    name: str
    bot: bool
    race_id: str
    outcome: RacerOutcome
    score: int | None
    cards_played: int
    face_up: int
    face_down: int
    finish_ms: int | None
    moves: tuple[Position, ...]
    place: int | None
    """Its place on the board (``None``: a guest's, not ranked)."""

    def to_result(self) -> RacerResult:
        """The line as a racer's result, its id the entrant's (what the board ranks ties
        by), for :func:`protocol.result.verify_result`."""
        return RacerResult(
            racer_id=self.entrant,
            name=self.name,
            bot=self.bot,
            outcome=self.outcome,
            score=self.score,
            cards_played=self.cards_played,
            face_up=self.face_up,
            face_down=self.face_down,
            finish_time=None if self.finish_ms is None else self.finish_ms / 1000,
            moves=self.moves,
        )


_LINE_COLUMNS = (
    "entrant, player_id, name, bot, race_id, outcome, score, cards_played, face_up,"
    " face_down, finish_ms, moves"
)
#: The board's order: the standings rule, then the entrant (ties, as standings list them).
_BOARD_ORDER = "rank_group, rank_a, rank_b, rank_c, rank_finish, entrant"


def _line(row: Row, place: int | None) -> AttemptLine:
    (entrant, player, name, bot, race_id, outcome, score, played, up, down, finish,
     moves) = row
    return AttemptLine(
        entrant, player, name, bool(bot), race_id, RacerOutcome(outcome), score, played, up,
        down, finish, tuple((row, col) for row, col in json.loads(moves)), place,
    )


def daily_board(
    day: str, bots: bool, offset: int, limit: int, you: str | None
) -> Generator[Statement, list[Row], tuple[int, list[AttemptLine], AttemptLine | None]]:
    """A page of ``day``'s board (claimed players' finished attempts, best first by the
    standings rule; with bots or without): how many lines the whole board has, the
    page's lines, and the finished attempt of the entrant ``you``, if any (with its place
    on the board when it is on it)."""
    where = "day = ? AND outcome IS NOT NULL AND player_id IS NOT NULL" + (
        "" if bots else " AND bot = 0"
    )
    (total,), = (yield (f"SELECT count(*) FROM daily_attempts WHERE {where}", (day,)))
    rows = yield (
        f"SELECT {_LINE_COLUMNS} FROM daily_attempts WHERE {where}"
        f" ORDER BY {_BOARD_ORDER} LIMIT ? OFFSET ?",
        (day, limit, offset),
    )
    lines = [_line(row, offset + number) for number, row in enumerate(rows, start=1)]
    own = None
    if you is not None:
        mine = yield (
            f"SELECT {_LINE_COLUMNS}, {_BOARD_ORDER.replace(', entrant', '')}"
            " FROM daily_attempts WHERE day = ? AND entrant = ? AND outcome IS NOT NULL",
            (day, you),
        )
        if mine:
            row = mine[0]
            place = None
            if row[1] is not None and (bots or not row[3]):
                (ahead,), = (yield (
                    f"SELECT count(*) FROM daily_attempts WHERE {where}"
                    f" AND ({_BOARD_ORDER}) < (?, ?, ?, ?, ?, ?)",
                    (day, *row[12:], row[0]),
                ))
                place = int(ahead) + 1
            own = _line(row[:12], place)
    return int(total), lines, own
