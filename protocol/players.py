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

from dataclasses import dataclass
from typing import ClassVar, cast

from protocol.codec import encode
from protocol.messages import (
    CLIENT_MESSAGES,
    NAME,
    PLAYER_ID,
    REQUEST_ID,
    SERVER_MESSAGES,
    TOKEN,
    Message,
)
from protocol.schema import register

# ------------------------------------------------------ client -> server


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimName:
    """Claim your name for good: answered by ``player_key``, the key to play as you again."""

    TYPE: ClassVar[str] = "claim_name"
    id: int | None = None


register(ClaimName, id=REQUEST_ID)


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


register(PlayerKey, player=PLAYER_ID, name=NAME, key=TOKEN, reply_to=REQUEST_ID)

PlayerClientMessage = ClaimName
"""Any players' message a client sends."""

PlayerServerMessage = PlayerKey
"""Any players' message the server sends."""

#: The players' message classes by wire type, one table per direction.
PLAYER_CLIENT_MESSAGES: dict[str, type[PlayerClientMessage]] = {
    cls.TYPE: cls for cls in (ClaimName,)
}
PLAYER_SERVER_MESSAGES: dict[str, type[PlayerServerMessage]] = {
    cls.TYPE: cls for cls in (PlayerKey,)
}

# The codec reads these tables at decode time, so registering here is enough.
CLIENT_MESSAGES.update(PLAYER_CLIENT_MESSAGES)  # type: ignore[arg-type]
SERVER_MESSAGES.update(PLAYER_SERVER_MESSAGES)  # type: ignore[arg-type]

#: Value types the messages above nest, in the order ``docs/protocol.md`` lists them.
PLAYER_VALUE_TYPES: tuple[type, ...] = ()

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
    )
}


def encode_players(message: PlayerClientMessage | PlayerServerMessage) -> bytes:
    """The frame for a players' message (:func:`~protocol.codec.encode`, typed for these)."""
    return encode(cast(Message, message))
