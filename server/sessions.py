"""Player sessions and their secret resume tokens.

A session is a player identity that outlives connections: its public id (also its racer
id in races) and a resume token of 128 random bits that only its owner ever receives.
The server keeps only the token's SHA-256, so neither the journal nor memory holds the
secret itself, and compares digests in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from protocol import Role
from protocol.names import lookalike_keys

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

    from server.rate_limit import TokenBucket


def token_digest(token: str) -> bytes:
    """The SHA-256 of a resume token: what is stored and compared."""
    return hashlib.sha256(token.encode("utf-8")).digest()


@dataclass(eq=False, slots=True)
class Session:
    """One player identity, and where it is now."""

    session_id: str
    token_hash: bytes
    name: str
    bot: bool
    role: Role = Role.PLAYER
    connection: ServerConnection | None = None
    race_id: str | None = None
    """The race this session races in (the latest one)."""
    watching: set[str] = field(default_factory=set)
    """Races this session spectates."""
    bucket: TokenBucket | None = None
    """The session's rate limit, made at its first hello and kept across connections: a
    client that floods, is closed with 4005 and resumes finds the bucket (and its
    strikes) as it left them."""


class SessionRegistry:
    """Every session the server knows, by id and by token digest.

    >>> registry = SessionRegistry()
    >>> session, token = registry.create("ann", bot=False, role=Role.PLAYER)
    >>> registry.resume(token) is session, registry.resume("x" * 22)
    (True, None)
    """

    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}
        self._by_digest: dict[bytes, Session] = {}
        self._by_look: dict[str, list[Session]] = {}
        """Human players' sessions under each of their names' look-alike keys (for
        :meth:`name_in_use`)."""

    def __len__(self) -> int:
        return len(self._by_id)

    def create(self, name: str, bot: bool, role: Role) -> tuple[Session, str]:
        """A new session and its token (to be sent to its owner only, once)."""
        token = secrets.token_urlsafe(16)  # 128 bits
        session_id = "p-" + secrets.token_hex(5)
        while session_id in self._by_id:
            session_id = "p-" + secrets.token_hex(5)
        session = Session(session_id, token_digest(token), name, bot, role)
        self.add(session)
        return session, token

    def add(self, session: Session) -> None:
        """Register a session (a new one, or one recovered from the journal)."""
        self._by_id[session.session_id] = session
        self._by_digest[session.token_hash] = session
        if not session.bot and session.role is Role.PLAYER:
            for key in lookalike_keys(session.name):
                self._by_look.setdefault(key, []).append(session)

    def name_in_use(self, name: str) -> bool:
        """Whether a connected human player's name looks the same as ``name``, ignoring
        case and look-alike letters (:func:`protocol.names.lookalike_keys`).

        >>> registry = SessionRegistry()
        >>> ann, _ = registry.create("Ann", bot=False, role=Role.PLAYER)
        >>> registry.name_in_use("ann")
        False
        >>> ann.connection = object()  # any connection
        >>> registry.name_in_use("ANN"), registry.name_in_use("\u0410nn")
        (True, True)
        >>> registry.name_in_use("bob")
        False
        """
        return any(
            session.connection is not None
            for key in lookalike_keys(name)
            for session in self._by_look.get(key, ())
        )

    def resume(self, token: str) -> Session | None:
        """The session ``token`` belongs to, or ``None``."""
        digest = token_digest(token)
        session = self._by_digest.get(digest)
        # The lookup is keyed by a digest, which leaks nothing about the token; the
        # constant-time comparison keeps the final check free of timing signals too.
        if session is None or not hmac.compare_digest(session.token_hash, digest):
            return None
        return session

    def get(self, session_id: str) -> Session | None:
        """The session with this public id, if any."""
        return self._by_id.get(session_id)
