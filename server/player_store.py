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
from typing import Any

from protocol.names import lookalike_keys

Row = tuple[Any, ...]
Statement = tuple[str, tuple[Any, ...]]
Job = Generator[Statement, list[Row], Any]
"""A transaction: yields statements, is sent each one's rows, returns its answer."""
JobFactory = Callable[[], Job]
"""What a store is given to run: it makes the job (again, to try once more)."""

#: The tables in SQLite (the journal's file); :data:`POSTGRES_SCHEMA` is the same in
#: PostgreSQL's types.
SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS claimed_players (
    player_id TEXT PRIMARY KEY,
    key_hash BLOB NOT NULL UNIQUE,
    name TEXT NOT NULL,
    bot INTEGER NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS claimed_names (
    look TEXT PRIMARY KEY,
    player_id TEXT NOT NULL
);
"""

POSTGRES_SCHEMA = """
CREATE TABLE IF NOT EXISTS claimed_players (
    player_id text PRIMARY KEY,
    key_hash bytea NOT NULL UNIQUE,
    name text NOT NULL,
    bot integer NOT NULL,
    created_at double precision NOT NULL
);
CREATE TABLE IF NOT EXISTS claimed_names (
    look text PRIMARY KEY,
    player_id text NOT NULL
);
"""


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


def name_claimed(name: str) -> Generator[Statement, list[Row], bool]:
    """Whether a claimed name looks the same as ``name``."""
    looks = sorted(lookalike_keys(name))
    marks = ", ".join("?" * len(looks))
    rows = yield (f"SELECT 1 FROM claimed_names WHERE look IN ({marks}) LIMIT 1", tuple(looks))
    return bool(rows)
