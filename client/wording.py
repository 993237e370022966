"""The one place where a refusal, a failure or a count becomes the words a person reads.

The screens, the bots and the ``foursquare`` command all show errors through these
functions, so a refusal reads the same wherever it appears, never as a code, a nested
parenthesis or a system error number.

>>> describe_error(Error(code=ErrorCode.RACE_FULL, message="this race is full"))
'That race is full.'
>>> plural(1, "point"), plural(2, "point"), plural(0, "entry", "entries")
('1 point', '2 points', '0 entries')
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Sequence

from websockets.exceptions import InvalidHandshake, InvalidStatus, InvalidURI

from protocol import Error, ErrorCode
from protocol.names import BadName, normalise_name

#: Refusals a player meets in the client, in the client's words (the server's own
#: message would only say the same again).
_PLAYER_SENTENCES = {
    ErrorCode.NAME_TAKEN: (
        "That name is taken by another connected player, or claimed by a player: choose "
        "another (or play with that player's key)."
    ),
    ErrorCode.UNKNOWN_PLAYER_KEY: (
        "The server knows no player with your saved key: import the right one "
        "(foursquare key import), or play as a guest with --guest."
    ),
    ErrorCode.RACE_FULL: "That race is full.",
    ErrorCode.RACE_NOT_FOUND: "No race has that code.",
    ErrorCode.RACE_STARTED: "That race has already started.",
    ErrorCode.TOURNAMENT_NOT_FOUND: "No tournament has that code.",
    ErrorCode.DAILY_DONE: (
        "You have raced today's daily deal already: see how you stand under Boards; "
        "tomorrow brings another."
    ),
    ErrorCode.DAY_NOT_FOUND: "No daily deal was dealt that day.",
    ErrorCode.VERSION_MISMATCH: (
        "This client and the server speak different protocol versions: one of them needs "
        "updating."
    ),
}


def plural(count: int, noun: str, plural_noun: str | None = None) -> str:
    """``count`` and the noun, singular for exactly one: ``1 game``, ``3 games``."""
    return f"{count} {noun if count == 1 else plural_noun or noun + 's'}"


def as_sentence(text: str) -> str:
    """``text`` with a capital first letter and one full stop at the end.

    >>> as_sentence("not now: it is paused.")
    'Not now: it is paused.'
    """
    text = text.strip().rstrip(".")
    return text[:1].upper() + text[1:] + "." if text else ""


def verdict(seed: str, problems: Sequence[str], against: str) -> str:
    """The revealed ``seed`` and whether the result held up when checked here, the seed
    against the commitment ``against`` names and every move replayed (``problems``:
    what did not add up, none when all did).

    >>> verdict("s1", [], "the record's commitment").splitlines()[1][:48]
    "✓ verified: the seed matches the record's commit"
    """
    if problems:
        mark = "✗ NOT verified: " + "; ".join(problems)
    else:
        mark = (
            f"✓ verified: the seed matches {against}, and every racer's moves replay to "
            "the result claimed"
        )
    return f"Seed {seed}\n{mark}"


def describe_error(error: Error) -> str:
    """The sentence for an ``error`` from the server: what went wrong, said once.

    The code's own words for the refusals players meet; otherwise the server's message,
    which says what exactly (the code's general sentence when it says nothing).
    """
    code = error.code
    if code in _PLAYER_SENTENCES:
        return _PLAYER_SENTENCES[code]
    return as_sentence(error.message) or code.sentence


def unreachable_reason(error: BaseException) -> str:
    """Why a connection could not be opened, in words (never an ``[Errno …]``).

    >>> unreachable_reason(ConnectionRefusedError(111, "Connect call failed"))
    'nothing answers there (is the server running?)'
    >>> unreachable_reason(socket.gaierror(-2, "Name or service not known"))
    'the name does not resolve'
    """
    if isinstance(error, socket.gaierror):
        return "the name does not resolve"
    if isinstance(error, ConnectionRefusedError) or "Connect call failed" in str(error):
        # Several addresses refused at once (IPv4 and IPv6) come as one plain OSError.
        return "nothing answers there (is the server running?)"
    if isinstance(error, TimeoutError):
        return "no answer in time"
    if isinstance(error, InvalidURI):
        return "that is not a ws:// or wss:// address"
    if isinstance(error, ssl.SSLCertVerificationError):
        return (
            f"its certificate is not trusted ({error.verify_message}); "
            "trust its CA with --ca-file FILE"
        )
    if isinstance(error, InvalidHandshake):
        return "something answers there, but not as a websocket server"
    if isinstance(error, OSError) and error.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
        return "the network cannot reach it"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    text = str(error).strip()
    return text or type(error).__name__


def refusal_sentence(error: BaseException) -> str | None:
    """What the server said when it refused the websocket upgrade with an HTTP status (at
    a connection cap it answers 429 or 503 with one sentence), or ``None``."""
    if not isinstance(error, InvalidStatus):
        return None
    response = error.response
    body = bytes(response.body or b"").decode("utf-8", errors="replace").strip()
    said = body.splitlines()[0] if body else "The server refused the connection."
    return f"{said} (HTTP {response.status_code})"


def describe_unreachable(url: str, error: BaseException) -> str:
    """The sentence for a server that could not be reached at ``url`` (or that refused
    the connection, in its own words)."""
    unreachable = f"Cannot reach the server at {url}: {unreachable_reason(error)}."
    return refusal_sentence(error) or unreachable


def usable_name(typed: str) -> str:
    """The name to send for ``typed``: without the spaces and tabs around it (a slip of
    the keyboard, not part of a name), in the form the server uses; raises
    :class:`~protocol.names.BadName` saying why the server would refuse it.

    >>> usable_name(" ann" + chr(9))
    'ann'
    >>> usable_name("  ")
    Traceback (most recent call last):
    ...
    protocol.names.BadName: needs at least one visible character
    """
    name = typed.strip()
    if not name:
        raise BadName("needs at least one visible character")
    return normalise_name(name)
