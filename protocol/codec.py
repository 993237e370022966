"""Encoding and strict, bounded decoding of frames.

One message is one msgpack map in one binary websocket frame, with a ``type`` key.
Decoding checks the frame size before unpacking, hands msgpack its own limits (string,
binary, array and map sizes; no extension types; string map keys only), checks the
nesting depth, then checks every field. Whatever is wrong with the input, the caller
gets a :class:`ProtocolError`, never another exception.

>>> from protocol.messages import Place
>>> decode_client(encode(Place(race="K7QX", move=3, row=0, col=1, id=7)))
Place(race='K7QX', move=3, row=0, col=1, id=7)
"""

from __future__ import annotations

from typing import Any, cast

import msgpack

from protocol.errors import ErrorCode, ProtocolError
from protocol.limits import PROTOCOL_VERSION, Limits
from protocol.messages import (
    CLIENT_MESSAGES,
    SERVER_MESSAGES,
    ClientMessage,
    Hello,
    Message,
    ServerMessage,
)
from protocol.schema import SCHEMAS, decode_fields, encode_fields, show

_DEFAULT_LIMITS = Limits()
#: One packer for every message, not one per call (``msgpack.packb`` builds a new one
#: each time: half the cost of packing a small map). Sharing it between threads is safe:
#: with no ``default`` hook, ``pack`` runs start to end in C without releasing the
#: interpreter lock, and resets its buffer before it returns.
_pack = msgpack.Packer(use_bin_type=True).pack
_TYPE_KEY = frozenset({"type"})
_MAX_ID = 2**32 - 1


def encode(message: Message) -> bytes:
    """The frame for ``message``: one msgpack map whose ``type`` key names the message.

    Encoding trusts the message's values (they come from this program); use the
    ``decode_*`` twin in tests to check that what is sent is what a peer accepts.
    """
    cls = type(message)
    schema = SCHEMAS.get(cls)
    if schema is None or not hasattr(cls, "TYPE"):
        raise TypeError(f"not a protocol message: {message!r}")
    wire = schema.encode(message)
    wire["type"] = cls.TYPE
    return cast(bytes, _pack(wire))


def with_field(encoded: bytes, key: str, value: str | int) -> tuple[bytes, memoryview]:
    """The encoded map ``encoded`` with one more field, ``key: value``, as two parts to
    send one after the other: a new head (the map's header, then the field) and the rest of
    ``encoded``, shared, not copied.

    A message that goes to many recipients, each with a field of its own (a racer's
    ``you`` in a race snapshot), is so encoded once, whatever the number of recipients.
    ``key`` must not be in the map already.

    >>> from protocol.messages import Pong
    >>> head, rest = with_field(encode(Pong(server_time=5)), "you", "p-1")
    >>> msgpack.unpackb(head + rest)
    {'you': 'p-1', 'server_time': 5, 'type': 'pong'}
    """
    first = encoded[0]
    if first & 0xF0 == 0x80:  # fixmap
        count, start = first & 0x0F, 1
    elif first == 0xDE:  # map 16
        count, start = int.from_bytes(encoded[1:3], "big"), 3
    elif first == 0xDF:  # map 32
        count, start = int.from_bytes(encoded[1:5], "big"), 5
    else:
        raise ValueError("not an encoded map")
    count += 1
    if count < 16:
        header = bytes((0x80 | count,))
    elif count < 1 << 16:
        header = b"\xde" + count.to_bytes(2, "big")
    else:
        header = b"\xdf" + count.to_bytes(4, "big")
    return header + _pack(key) + _pack(value), memoryview(encoded)[start:]


def encode_wire(message: Message) -> dict[str, Any]:
    """The plain map that :func:`encode` packs (for logs, docs and JSON views)."""
    cls = type(message)
    wire: dict[str, Any] = {"type": cls.TYPE}
    wire.update(_as_unpacked(encode_fields(SCHEMAS[cls], message)))
    return wire


def _as_unpacked(value: Any) -> Any:
    """``value`` as msgpack unpacks it: the encoder leaves tuples (positions, arrays of
    plain values) for msgpack to pack as arrays, and those come back as lists."""
    if isinstance(value, dict):
        return {key: _as_unpacked(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_unpacked(item) for item in value]
    return value


Frame = bytes | bytearray | memoryview | str
"""What a websocket library hands over: text frames are refused with ``bad_frame``."""


def decode_client(data: Frame, limits: Limits = _DEFAULT_LIMITS) -> ClientMessage:
    """Read one client-to-server frame, strictly: unknown fields are errors.

    A ``hello`` with another protocol version fails with ``version_mismatch`` before its
    other fields are read, so that any future client gets the right answer.
    """
    return cast(
        ClientMessage,
        _decode(data, limits, limits.max_client_frame, CLIENT_MESSAGES, SERVER_MESSAGES, True),
    )


def decode_server(data: Frame, limits: Limits = _DEFAULT_LIMITS) -> ServerMessage:
    """Read one server-to-client frame. Fields this client does not know are ignored
    (a server may add optional fields); everything it knows is checked as strictly.
    """
    return cast(
        ServerMessage,
        _decode(data, limits, limits.max_server_frame, SERVER_MESSAGES, CLIENT_MESSAGES, False),
    )


def _decode(
    data: object,
    limits: Limits,
    max_frame: int,
    types: dict[str, Any],
    other_side: dict[str, Any],
    strict: bool,
) -> Any:
    if isinstance(data, str):
        raise ProtocolError(ErrorCode.BAD_FRAME, "text frames are not used: send binary frames")
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ProtocolError(ErrorCode.BAD_FRAME, f"a frame is bytes, not {type(data).__name__}")
    size = len(data)
    if size > max_frame:
        raise ProtocolError(
            ErrorCode.FRAME_TOO_LARGE, f"the frame is {size} bytes; the limit is {max_frame}"
        )
    if size == 0:
        raise ProtocolError(ErrorCode.BAD_FRAME, "the frame is empty")
    try:
        wire = msgpack.unpackb(
            data,
            raw=False,
            use_list=True,
            strict_map_key=True,
            max_str_len=limits.max_str_len,
            max_bin_len=limits.max_bin_len,
            max_array_len=limits.max_array_len,
            max_map_len=limits.max_map_len,
            max_ext_len=0,
            ext_hook=_refuse_ext,
        )
    except Exception as error:  # msgpack raises many kinds; all mean the same here
        raise ProtocolError(
            ErrorCode.BAD_FRAME, f"the frame is not one valid msgpack value ({_reason(error)})"
        ) from None
    if type(wire) is not dict:
        raise ProtocolError(ErrorCode.BAD_FRAME, f"a frame holds one map, not {show(wire)}")
    if not _depth_within(wire, limits.max_depth):
        raise ProtocolError(
            ErrorCode.BAD_FRAME, f"the message nests deeper than {limits.max_depth} levels"
        )
    raw_id = wire.get("id") if strict else wire.get("reply_to")
    reply_to = raw_id if type(raw_id) is int and 0 <= raw_id <= _MAX_ID else None
    kind = wire.get("type")
    if type(kind) is not str:
        raise ProtocolError(
            ErrorCode.BAD_MESSAGE,
            "the message has no type field" if kind is None
            else f"type must be a string, not {show(kind)}",
            reply_to=reply_to,
        )
    cls = types.get(kind)
    if cls is None:
        if kind in other_side:
            hint = f"{kind!r} is sent by the {'server' if strict else 'client'}, not to it"
        else:
            hint = f"unknown message type {show(kind)}"
        raise ProtocolError(ErrorCode.UNKNOWN_TYPE, hint, reply_to=reply_to)
    try:
        if cls is Hello:
            _check_version(wire)
        return decode_fields(SCHEMAS[cls], wire, kind, strict, _TYPE_KEY)
    except ProtocolError as error:
        error.in_reply_to, error.reply_to = kind, reply_to
        raise


def _check_version(wire: dict[str, Any]) -> None:
    if "protocol_version" not in wire:
        raise ProtocolError(ErrorCode.BAD_MESSAGE, "hello.protocol_version is missing")
    version = wire["protocol_version"]
    if version != PROTOCOL_VERSION or type(version) is not int:
        raise ProtocolError(
            ErrorCode.VERSION_MISMATCH,
            f"hello.protocol_version is {show(version)}; this server speaks version "
            f"{PROTOCOL_VERSION}",
        )


def _refuse_ext(code: int, data: bytes) -> Any:
    raise ValueError(f"extension type {code} is not used")


def _reason(error: Exception) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def _depth_within(value: object, limit: int) -> bool:
    """Whether ``value`` nests at most ``limit`` arrays/maps deep (iterative: no recursion)."""
    level: list[object] = [value]
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return False
        below: list[object] = []
        for item in level:
            children = item.values() if type(item) is dict else item
            below.extend(c for c in cast(Any, children) if type(c) is list or type(c) is dict)
        level = below
    return True
