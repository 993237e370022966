"""The protocol version and the size limits applied before and while unpacking a frame."""

from __future__ import annotations

from dataclasses import dataclass

#: The version both sides must speak; ``hello`` carries it and the server insists on it.
PROTOCOL_VERSION = 1


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what a decoder accepts; everything past them is a :class:`ProtocolError`.

    The frame sizes are checked before unpacking; the others are handed to msgpack's
    unpacker (so it never allocates past them), except ``max_depth``, checked right after.
    Client frames are small (the largest, ``create_race``, is a few hundred bytes); server
    frames can be large (``finished`` for a 1,000-racer race holds every racer's moves).

    >>> Limits().max_client_frame
    4096
    """

    max_client_frame: int = 4096
    """Bytes in one client-to-server frame (what :func:`decode_client` accepts)."""
    max_server_frame: int = 4 * 1024 * 1024
    """Bytes in one server-to-client frame (what :func:`decode_server` accepts)."""
    max_str_len: int = 1024
    """Bytes (UTF-8) in one string."""
    max_bin_len: int = 0
    """Bytes in one binary value: the protocol uses none."""
    max_array_len: int = 1024
    """Items in one array (a race has at most 1,000 racers)."""
    max_map_len: int = 32
    """Keys in one map."""
    max_depth: int = 8
    """Nesting of arrays and maps; the top-level map is depth 1."""
