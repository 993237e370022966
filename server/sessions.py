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
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from protocol import Role
from protocol.names import lookalike_keys
from server.bus import Caller

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection

    from server.rate_limit import TokenBucket


def _named(session: Session) -> bool:
    """Whether ``session``'s name must be unique among those connected: only human
    players' (see ``SocketTier._name_taken``)."""
    return not session.bot and session.role is Role.PLAYER


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
    player: str | None = None
    """The claimed player this session plays as (:mod:`server.player_store`); ``None``
    for a guest. Set at its ``hello`` (with a player key) or by its ``claim_name``."""
    connection: ServerConnection | None = None
    feeds: dict[str, None] = field(default_factory=dict)
    """The feeds (:mod:`server.bus`) this session's connection listens to now."""
    idle_since: float | None = None
    """When the session was last left without a connection (wall clock); ``None`` while
    it has one."""
    bucket: TokenBucket | None = None
    """The session's rate limit, made at its first hello and kept across connections: a
    client that floods, is closed with 4005 and resumes finds the bucket (and its
    strikes) as it left them."""
    attached_at: float = 0.0
    """When its connection said hello (wall clock): in a cluster, the newer of two
    connections of one session on two nodes stays (see
    :meth:`server.socket_tier.SocketTier.attached_elsewhere`)."""
    moved_at: float | None = None
    """When its connection here was closed for a resume on another node of a cluster
    (wall clock; ``None``: it was not, or it came back since)."""
    caller: Caller = field(init=False)
    """Who this session is, as its commands to the race tier say."""

    def __post_init__(self) -> None:
        self.caller = Caller(self.session_id, self.name, self.bot, self.role, self.player)

    def plays_as(self, player: str) -> None:
        """From now on the session plays as the claimed player ``player``."""
        self.player = player
        self.caller = Caller(self.session_id, self.name, self.bot, self.role, player)


class SharedSessions(Protocol):
    """What the socket tier of a cluster's node reads and writes of its sessions in the
    shared store (:class:`~server.postgres.PostgresStore`), for the rules one server
    keeps in memory: one race at a time, names unique among connected players, idle
    sessions kept while a race or a tournament holds them."""

    async def seat_of(self, player_id: str) -> str | None:
        """The race, on any node, that session ``player_id`` is tied to (seated, its own
        game not over: :mod:`server.seats`), if any."""
        ...

    async def held(self, player_ids: Collection[str]) -> set[str]:
        """Those of ``player_ids`` that a race (on any node) ties, or that are entered in
        a tournament not over."""
        ...

    async def claim_names(
        self, player_id: str, node: str, looks: Collection[str], *, all_or_none: bool
    ) -> bool:
        """Hold the look-alike keys ``looks`` of a connected session's name for it on
        ``node``; whether every key could be (see the store's method)."""
        ...

    async def name_holders(self, looks: Collection[str]) -> set[tuple[str, str]]:
        """The sessions holding any of ``looks``, each with its node."""
        ...

    async def release_names(self, player_id: str, node: str) -> None:
        """Hold session ``player_id``'s keys on ``node`` no more."""
        ...


class SessionRegistry:
    """Every session the server knows, by id and by token digest, and since when each
    one without a connection has been idle.

    A session's connection is set through :meth:`attach` and :meth:`detach`, which keep
    the idle sessions in the order they were left (oldest first), so that expiry looks
    only at the oldest ones, and count the connected human players by their names'
    look-alike keys.

    >>> registry = SessionRegistry()
    >>> session, token = registry.create("ann", bot=False, role=Role.PLAYER, now=0.0)
    >>> registry.resume(token) is session, registry.resume("x" * 22)
    (True, None)
    """

    def __init__(self) -> None:
        self._by_id: dict[str, Session] = {}
        self._by_digest: dict[bytes, Session] = {}
        self._connected_looks: Counter[str] = Counter()
        """The look-alike keys of connected human players' names, each with how many
        use it (for :meth:`name_in_use`)."""
        self._idle: dict[str, Session] = {}
        """Sessions without a connection, by id, in the order they were left: a dict
        keeps insertion order, and a session left again moves to the end."""

    def __len__(self) -> int:
        return len(self._by_id)

    def create(
        self, name: str, bot: bool, role: Role, now: float, player: str | None = None
    ) -> tuple[Session, str]:
        """A new session (playing as the claimed ``player``, if given) and its token (to
        be sent to its owner only, once); it counts as idle from ``now`` until
        :meth:`attach`."""
        token = secrets.token_urlsafe(16)  # 128 bits
        session_id = "p-" + secrets.token_hex(5)
        while session_id in self._by_id:
            session_id = "p-" + secrets.token_hex(5)
        session = Session(session_id, token_digest(token), name, bot, role, player)
        self.add(session, idle_since=now)
        return session, token

    def add(self, session: Session, idle_since: float) -> None:
        """Register a session without a connection (a new one, or one recovered from the
        journal: add those oldest first) that has been idle since ``idle_since``."""
        self._by_id[session.session_id] = session
        self._by_digest[session.token_hash] = session
        session.idle_since = idle_since
        self._idle[session.session_id] = session

    def attach(self, session: Session, connection: ServerConnection) -> None:
        """``session`` is now on ``connection`` (which replaces any other)."""
        if session.connection is None:
            self._idle.pop(session.session_id, None)
            if _named(session):
                self._connected_looks.update(lookalike_keys(session.name))
        session.connection = connection
        session.idle_since = None

    def detach(self, session: Session, now: float) -> None:
        """``session`` has no connection any more, from ``now`` on."""
        if session.connection is not None and _named(session):
            for key in lookalike_keys(session.name):
                self._connected_looks[key] -= 1
                if self._connected_looks[key] <= 0:
                    del self._connected_looks[key]
        session.connection = None
        session.idle_since = now
        self._idle.pop(session.session_id, None)  # to the end: the most recently left
        self._idle[session.session_id] = session

    def idle_before(self, cutoff: float, limit: int) -> list[Session]:
        """Up to ``limit`` sessions idle since before ``cutoff``, oldest first.

        Only the oldest are looked at: the scan stops at the first session left after
        ``cutoff`` (the order is the order they were left, so only a wall clock that
        went back could put a later one behind it, and that one is found next time).
        """
        found: list[Session] = []
        for session in self._idle.values():
            if len(found) >= limit or session.idle_since is None or session.idle_since > cutoff:
                break
            found.append(session)
        return found

    def remove(self, session: Session) -> None:
        """Forget an idle session: its token is refused from now on."""
        if session.connection is not None:
            raise ValueError(f"session {session.session_id} is connected")
        del self._by_id[session.session_id]
        del self._by_digest[session.token_hash]
        self._idle.pop(session.session_id, None)

    def reserve_name(self, name: str, reserved: bool = True) -> None:
        """Count ``name`` as a connected player's (``reserved`` false: no longer) while a
        new session of that name waits for the cluster's store to hold it: another
        hello on this node meanwhile finds it in use."""
        for key in lookalike_keys(name):
            self._connected_looks[key] += 1 if reserved else -1
            if self._connected_looks[key] <= 0:
                del self._connected_looks[key]

    def connected(self) -> list[Session]:
        """The sessions that have a connection now."""
        return [s for s in self._by_id.values() if s.connection is not None]

    def name_in_use(self, name: str) -> bool:
        """Whether a connected human player's name looks the same as ``name``, ignoring
        case and look-alike letters (:func:`protocol.names.lookalike_keys`).

        >>> registry = SessionRegistry()
        >>> ann, _ = registry.create("Ann", bot=False, role=Role.PLAYER, now=0.0)
        >>> registry.name_in_use("ann")
        False
        >>> registry.attach(ann, object())  # any connection
        >>> registry.name_in_use("ANN"), registry.name_in_use("\u0410nn")
        (True, True)
        >>> registry.name_in_use("bob")
        False
        >>> registry.detach(ann, now=1.0); registry.name_in_use("ann")
        False
        """
        return any(self._connected_looks[key] > 0 for key in lookalike_keys(name))

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
