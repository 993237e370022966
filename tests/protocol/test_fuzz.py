"""Hypothesis: whatever arrives, a decoder returns a message or raises ProtocolError.

Random bytes, random msgpack values, maps with a real type and random fields, real
messages with one field replaced by a value of any type, huge integers, deep nesting,
oversize strings and arrays. Anything that decodes must re-encode to the same message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import (
    CLIENT_MESSAGES,
    SERVER_MESSAGES,
    Limits,
    Message,
    ProtocolError,
    decode_client,
    decode_server,
    encode,
    encode_wire,
)
from protocol.examples import EXAMPLES

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DECODERS: list[Callable[[bytes], Message]] = [decode_client, decode_server]
FIELD_NAMES = sorted({key for m in EXAMPLES.values() for key in encode_wire(m)})

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=True)
    | st.text(max_size=40)
    | st.binary(max_size=16)
    | st.sampled_from(sorted(EXAMPLES))
    | st.sampled_from([-6, -5, -1, 0, 1, 5, 6, 39, 40, 41, 1000, 1001, 2**32, 2**53])
)
values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=6)
    | st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=8), children, max_size=6),
    max_leaves=25,
)


def pack(value: Any) -> bytes:
    data: bytes = msgpack.packb(value, use_bin_type=True)
    return data


def check(decode: Callable[[bytes], Message], data: bytes) -> None:
    """Decode ``data``: a ProtocolError is fine; a message must survive a round trip."""
    try:
        message = decode(data)
    except ProtocolError as error:
        assert error.message
        return
    assert decode(encode(message)) == message


@FUZZ
@given(data=st.binary(max_size=300))
def test_random_bytes(data: bytes) -> None:
    for decode in DECODERS:
        check(decode, data)


@FUZZ
@given(value=values)
def test_random_msgpack_values(value: Any) -> None:
    for decode in DECODERS:
        check(decode, pack(value))


@FUZZ
@given(kind=st.sampled_from(sorted(EXAMPLES)), fields=st.dictionaries(
    st.sampled_from(FIELD_NAMES), values, max_size=8))
def test_a_real_type_with_random_fields(kind: str, fields: dict[str, Any]) -> None:
    for decode in DECODERS:
        check(decode, pack({**fields, "type": kind}))


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a wire map or array (not the root)."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for key, child in items:
        found.append((*prefix, key))
        if isinstance(child, dict | list):
            found.extend(_paths(child, (*prefix, key)))
    return found


@FUZZ
@given(kind=st.sampled_from(sorted(EXAMPLES)), pick=st.integers(min_value=0), new=values)
def test_a_real_message_with_one_value_replaced(kind: str, pick: int, new: Any) -> None:
    wire = encode_wire(EXAMPLES[kind])
    paths = [p for p in _paths(wire) if p != ("type",)]
    path = paths[pick % len(paths)]
    target = wire
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    decode = decode_client if kind in CLIENT_MESSAGES else decode_server
    check(decode, pack(wire))


@FUZZ
@given(kind=st.sampled_from(sorted(EXAMPLES)), cut=st.integers(min_value=0), flip=st.integers(
    min_value=0, max_value=255))
def test_a_real_frame_truncated_or_corrupted(kind: str, cut: int, flip: int) -> None:
    frame = bytearray(encode(EXAMPLES[kind]))
    position = cut % len(frame)
    decode = decode_client if kind in CLIENT_MESSAGES else decode_server
    check(decode, bytes(frame[:position]))
    frame[position] ^= flip
    check(decode, bytes(frame))


@settings(max_examples=30, deadline=None)
@given(depth=st.integers(min_value=1, max_value=5000), map_level=st.booleans())
def test_deep_nesting(depth: int, map_level: bool) -> None:
    opener = b"\x81\xa1k" if map_level else b"\x91"
    data = b"\x82\xa4type\xa4ping\xa2id" + opener * depth + b"\x00"
    for decode in DECODERS:
        check(decode, data)


@settings(max_examples=30, deadline=None)
@given(size=st.integers(min_value=1, max_value=200_000), kind=st.sampled_from(["str", "arr"]))
def test_oversize_values(size: int, kind: str) -> None:
    filler: Any = "x" * size if kind == "str" else [0] * size
    data = pack({"type": "place", "race": filler, "move": 1, "row": 0, "col": 0})
    for decode in DECODERS:
        check(decode, data)


def test_oversize_frames_fail_fast_at_both_limits() -> None:
    limits = Limits()
    for decode, limit in ((decode_client, limits.max_client_frame),
                          (decode_server, limits.max_server_frame)):
        try:
            decode(b"\x00" * (limit + 1))
        except ProtocolError as error:
            assert error.code.value == "frame_too_large"
        else:
            raise AssertionError("an oversize frame was accepted")


def test_every_type_is_covered_by_the_fuzzers() -> None:
    assert set(EXAMPLES) == set(CLIENT_MESSAGES) | set(SERVER_MESSAGES)
