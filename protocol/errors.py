"""Error codes, websocket close codes, and :class:`ProtocolError`.

Error codes are stable strings: a client may switch on them. Each has a sentence a
person can act on (:attr:`ErrorCode.sentence`) and, when the error ends the connection,
the close code the server uses (:attr:`ErrorCode.close_code`).

>>> ErrorCode.VERSION_MISMATCH.close_code
<CloseCode.VERSION_MISMATCH: 4001>
>>> str(ProtocolError(ErrorCode.BAD_MESSAGE, "place.row must be an integer from -5 to 5, not 9"))
'place.row must be an integer from -5 to 5, not 9'
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class CloseCode(IntEnum):
    """The websocket close codes the server uses (RFC 6455 codes, then 4000+ app codes)."""

    NORMAL = 1000
    """The session ended normally (the client said goodbye, or the server closed it cleanly)."""
    GOING_AWAY = 1001
    """The server is shutting down (SIGTERM); reconnect later with your resume token."""
    POLICY_VIOLATION = 1008
    """The client broke a rule not covered by a more specific code."""
    MESSAGE_TOO_BIG = 1009
    """A frame was larger than the limit."""
    INTERNAL_ERROR = 1011
    """The server failed; the session can be resumed with its token."""
    PROTOCOL_ERROR = 4000
    """Too many malformed frames or messages on this connection."""
    VERSION_MISMATCH = 4001
    """``hello`` asked for a protocol version the server does not speak."""
    INVALID_TOKEN = 4002
    """``hello`` carried a resume token the server does not know (or that expired)."""
    HANDSHAKE_TIMEOUT = 4003
    """No ``hello`` arrived in time after the connection opened."""
    IDLE_TIMEOUT = 4004
    """No message arrived for too long (pongs do not count; an unanswered ping is 1011)."""
    RATE_LIMITED = 4005
    """The client kept sending faster than the rate limit after being warned."""
    REPLACED = 4006
    """The same session was resumed on another connection; this one is closed."""


class ErrorCode(StrEnum):
    """The stable code of an ``error`` message. The value is what travels on the wire."""

    BAD_FRAME = "bad_frame"
    FRAME_TOO_LARGE = "frame_too_large"
    BAD_MESSAGE = "bad_message"
    UNKNOWN_TYPE = "unknown_type"
    VERSION_MISMATCH = "version_mismatch"
    HELLO_REQUIRED = "hello_required"
    ALREADY_WELCOMED = "already_welcomed"
    INVALID_TOKEN = "invalid_token"
    NAME_TAKEN = "name_taken"
    WRONG_ROLE = "wrong_role"
    NOT_A_RACER = "not_a_racer"
    ALREADY_JOINED = "already_joined"
    RACE_NOT_FOUND = "race_not_found"
    RACE_FULL = "race_full"
    RACE_STARTED = "race_started"
    RACE_NOT_RUNNING = "race_not_running"
    SPECTATORS_NOT_ALLOWED = "spectators_not_allowed"
    ILLEGAL_MOVE = "illegal_move"
    BAD_MOVE_NUMBER = "bad_move_number"
    NOT_RACING = "not_racing"
    RATE_LIMITED = "rate_limited"
    SERVER_BUSY = "server_busy"
    NO_WINNABLE_DEAL = "no_winnable_deal"
    SHUTTING_DOWN = "shutting_down"
    UNAVAILABLE = "unavailable"
    INTERNAL_ERROR = "internal_error"
    TOURNAMENT_NOT_FOUND = "tournament_not_found"
    NOT_HOST = "not_host"
    TOURNAMENT_STATE = "tournament_state"
    NOT_AN_ENTRANT = "not_an_entrant"
    ALREADY_ENTERED = "already_entered"
    UNKNOWN_PLAYER_KEY = "unknown_player_key"
    ALREADY_CLAIMED = "already_claimed"
    PLAYER_NOT_FOUND = "player_not_found"
    DAILY_DONE = "daily_done"
    DAY_NOT_FOUND = "day_not_found"
    BAD_CURSOR = "bad_cursor"

    @property
    def sentence(self) -> str:
        """What the code means, for a person (the ``message`` says what exactly)."""
        return _SENTENCES[self]

    @property
    def close_code(self) -> CloseCode | None:
        """The close code when this error ends the connection; ``None`` if it does not."""
        return _CLOSES.get(self)


_SENTENCES: dict[ErrorCode, str] = {
    ErrorCode.BAD_FRAME: "The frame is not one msgpack map (or is a text frame).",
    ErrorCode.FRAME_TOO_LARGE: "The frame is larger than the server accepts.",
    ErrorCode.BAD_MESSAGE: "A field is missing, unknown, of the wrong type or out of range.",
    ErrorCode.UNKNOWN_TYPE: "The message type is not one this side accepts.",
    ErrorCode.VERSION_MISMATCH: "The client speaks another protocol version than the server.",
    ErrorCode.HELLO_REQUIRED: "The first message on a connection must be hello.",
    ErrorCode.ALREADY_WELCOMED: "This connection already sent hello.",
    ErrorCode.INVALID_TOKEN: "The resume token is unknown or expired; say hello without it.",
    ErrorCode.NAME_TAKEN: "Another connected player uses that name, or a player claimed it.",
    ErrorCode.WRONG_ROLE: "A spectator cannot race, and a racer cannot do this.",
    ErrorCode.NOT_A_RACER: "You are not a racer in that race.",
    ErrorCode.ALREADY_JOINED: "You are already in that race (or another); leave it first.",
    ErrorCode.RACE_NOT_FOUND: "No race has that id or code.",
    ErrorCode.RACE_FULL: "The race already has its maximum number of racers.",
    ErrorCode.RACE_STARTED: "The race has started; nobody can join it now.",
    ErrorCode.RACE_NOT_RUNNING: "The race is not running (not started yet, or over).",
    ErrorCode.SPECTATORS_NOT_ALLOWED: "That race does not allow spectators.",
    ErrorCode.ILLEGAL_MOVE: "The rules do not allow that move; nothing changed.",
    ErrorCode.BAD_MOVE_NUMBER: "The move number is not the one the server expects next.",
    ErrorCode.NOT_RACING: "Your game in this race is over (won, lost, resigned or timed out).",
    ErrorCode.RATE_LIMITED: "Too many messages; slow down.",
    ErrorCode.SERVER_BUSY: "The server is at capacity; try again later.",
    ErrorCode.NO_WINNABLE_DEAL: (
        "No winnable deal was found for that ruleset within the server's search budget; "
        "choose other rules or the random seed policy."
    ),
    ErrorCode.SHUTTING_DOWN: "The server is shutting down; reconnect later.",
    ErrorCode.UNAVAILABLE: (
        "Races cannot be served for a moment (the database cannot be reached, another "
        "node is taking the race over, or the server cannot yet lease or check a new "
        "race's id); nothing was done: send it again shortly."
    ),
    ErrorCode.INTERNAL_ERROR: "The server failed to handle the message.",
    ErrorCode.TOURNAMENT_NOT_FOUND: "No tournament has that code.",
    ErrorCode.NOT_HOST: "Only the tournament's host token can do that.",
    ErrorCode.TOURNAMENT_STATE: "The tournament is not in a state that allows that now.",
    ErrorCode.NOT_AN_ENTRANT: "You are not an entrant of that tournament (or were removed).",
    ErrorCode.ALREADY_ENTERED: "You are already an entrant of that tournament.",
    ErrorCode.UNKNOWN_PLAYER_KEY: (
        "No player has that key; check it, or say hello without it to play as a guest."
    ),
    ErrorCode.ALREADY_CLAIMED: "This session already plays as a claimed player.",
    ErrorCode.PLAYER_NOT_FOUND: "No claimed player has that id.",
    ErrorCode.DAILY_DONE: (
        "You have raced today's daily deal already (a claimed player once a day, a guest "
        "once per session); its board is open to you, and tomorrow brings another."
    ),
    ErrorCode.DAY_NOT_FOUND: "No daily deal was dealt on that day (or the day is to come).",
    ErrorCode.BAD_CURSOR: (
        "The page asked for starts past the end (export_tournament.after is larger than "
        "the number of finished games): ask again from the first page."
    ),
}

_CLOSES: dict[ErrorCode, CloseCode] = {
    ErrorCode.FRAME_TOO_LARGE: CloseCode.MESSAGE_TOO_BIG,
    ErrorCode.VERSION_MISMATCH: CloseCode.VERSION_MISMATCH,
    ErrorCode.INVALID_TOKEN: CloseCode.INVALID_TOKEN,
    ErrorCode.SHUTTING_DOWN: CloseCode.GOING_AWAY,
}


class ProtocolError(Exception):
    """A frame or message that breaks the protocol, or a request the server refuses.

    ``message`` is a sentence naming the offending field. When the bad frame could be
    read far enough, ``in_reply_to`` is its ``type`` and ``reply_to`` its ``id``, so
    that the ``error`` sent back can say what it answers.
    """

    code: ErrorCode
    message: str
    in_reply_to: str | None
    reply_to: int | None

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        in_reply_to: str | None = None,
        reply_to: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.in_reply_to = in_reply_to
        self.reply_to = reply_to

    @property
    def close_code(self) -> CloseCode | None:
        """The close code if this error ends the connection (see :class:`ErrorCode`)."""
        return self.code.close_code

    def __repr__(self) -> str:
        return f"ProtocolError({self.code.value!r}, {self.message!r})"
