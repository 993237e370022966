r"""The wire contract between the Foursquare race server and its clients. No sockets here.

One message is one msgpack map in one binary websocket frame; its ``type`` key names it.
The server reads with :func:`decode_client`, the client with :func:`decode_server`; both
send with :func:`encode`. Anything malformed becomes a :class:`ProtocolError` with a
stable :class:`ErrorCode`. ``docs/protocol.md`` describes every message.

>>> frame = encode(Place(race="K7QX", move=1, row=0, col=0, id=1))
>>> decode_client(frame)
Place(race='K7QX', move=1, row=0, col=0, id=1)
>>> decode_client(b"\x81\xa4type\xa3bye")
Traceback (most recent call last):
...
protocol.errors.ProtocolError: unknown message type 'bye'
"""

from protocol.codec import decode_client, decode_server, encode, encode_wire
from protocol.errors import CloseCode, ErrorCode, ProtocolError
from protocol.limits import PROTOCOL_VERSION, Limits
from protocol.messages import (
    CLIENT_MESSAGES,
    SERVER_MESSAGES,
    Boards,
    CardToPlace,
    ClientMessage,
    CreateRace,
    Error,
    Flip,
    Hello,
    JoinRace,
    LeaveRace,
    ListRaces,
    Message,
    MovePlaced,
    Ok,
    PileView,
    Ping,
    Place,
    Pong,
    Progress,
    ProgressEntry,
    QuickRace,
    RaceFinished,
    RaceList,
    RaceOptions,
    RacerBoard,
    RacerInfo,
    RacerStatus,
    RaceSnapshot,
    RaceState,
    RaceSummary,
    Ready,
    Resign,
    Role,
    SeedPolicy,
    ServerInfo,
    ServerMessage,
    Spectate,
    Standing,
    Welcome,
)

__all__ = [
    "CLIENT_MESSAGES",
    "PROTOCOL_VERSION",
    "SERVER_MESSAGES",
    "Boards",
    "CardToPlace",
    "ClientMessage",
    "CloseCode",
    "CreateRace",
    "Error",
    "ErrorCode",
    "Flip",
    "Hello",
    "JoinRace",
    "LeaveRace",
    "Limits",
    "ListRaces",
    "Message",
    "MovePlaced",
    "Ok",
    "PileView",
    "Ping",
    "Place",
    "Pong",
    "Progress",
    "ProgressEntry",
    "ProtocolError",
    "QuickRace",
    "RaceFinished",
    "RaceList",
    "RaceOptions",
    "RaceSnapshot",
    "RaceState",
    "RaceSummary",
    "RacerBoard",
    "RacerInfo",
    "RacerStatus",
    "Ready",
    "Resign",
    "Role",
    "SeedPolicy",
    "ServerInfo",
    "ServerMessage",
    "Spectate",
    "Standing",
    "Welcome",
    "decode_client",
    "decode_server",
    "encode",
    "encode_wire",
]
