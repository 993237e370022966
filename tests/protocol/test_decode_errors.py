"""Bad input of every kind becomes a ProtocolError that names what was wrong."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from protocol import (
    PROTOCOL_VERSION,
    CloseCode,
    CreateRace,
    ErrorCode,
    Limits,
    Place,
    ProtocolError,
    RaceOptions,
    decode_client,
    decode_server,
    encode,
    encode_wire,
)
from protocol.examples import EXAMPLES


def pack(value: Any) -> bytes:
    data: bytes = msgpack.packb(value, use_bin_type=True)
    return data


def place_wire(**changes: Any) -> dict[str, Any]:
    wire = encode_wire(Place(race="r1", move=1, row=0, col=0, id=5))
    wire.update(changes)
    return {k: v for k, v in wire.items() if v is not ...}


DEFAULT_LIMITS = Limits()


def client_error(data: bytes | str, limits: Limits = DEFAULT_LIMITS) -> ProtocolError:
    with pytest.raises(ProtocolError) as caught:
        decode_client(data, limits)
    return caught.value


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"row": 9}, "place.row must be an integer from -5 to 5, not 9"),
        ({"row": True}, "place.row must be an integer from -5 to 5, not true"),
        ({"row": 1.0}, "place.row must be an integer from -5 to 5, not a float (1.0)"),
        ({"move": 0}, "place.move must be an integer from 1 to 40, not 0"),
        ({"move": 2**64 - 1}, "from 1 to 40, not 18446744073709551615"),
        ({"move": -(2**63)}, "from 1 to 40, not -9223372036854775808"),
        ({"race": ""}, "place.race must be a string of 1 to 32 characters, not ''"),
        ({"race": "a b"}, "place.race must be a string matching"),
        ({"race": ["r1"]}, "place.race must be a string of 1 to 32 characters, not an array"),
        ({"col": ...}, "place.col is missing"),
        ({"colour": 1}, "place has an unknown field 'colour'"),
        ({"id": -1}, "place.id must be an integer from 0 to 4294967295, not -1"),
    ],
)
def test_bad_fields_are_named(changes: dict[str, Any], words: str) -> None:
    error = client_error(pack(place_wire(**changes)))
    assert error.code is ErrorCode.BAD_MESSAGE
    assert words in error.message
    assert error.in_reply_to == "place"


def test_error_echoes_the_request_id() -> None:
    error = client_error(pack(place_wire(row=9, id=77)))
    assert (error.in_reply_to, error.reply_to) == ("place", 77)


def test_nil_is_accepted_for_an_optional_field() -> None:
    assert decode_client(pack(place_wire(id=None))) == Place(race="r1", move=1, row=0, col=0)


def test_server_ignores_no_field_but_client_tolerates_new_ones() -> None:
    wire = encode_wire(EXAMPLES["placed"])
    wire["added_in_a_later_server"] = [1, 2, 3]
    assert decode_server(pack(wire)) == EXAMPLES["placed"]
    client_wire = encode_wire(EXAMPLES["place"])
    client_wire["extra"] = 1
    assert client_error(pack(client_wire)).code is ErrorCode.BAD_MESSAGE


def test_nested_fields_are_named_with_their_path() -> None:
    wire = encode_wire(EXAMPLES["create_race"])
    wire["options"]["ruleset"]["grid_size"] = 9
    error = client_error(pack(wire))
    assert "create_race.options.ruleset.grid_size must be an integer from 2 to 6" in error.message
    wire["options"]["ruleset"]["grid_size"] = 4
    wire["options"]["min_racers"] = 5
    error = client_error(pack(wire))
    assert "min_racers (5) must not be above max_racers (4)" in error.message


def test_missing_options_take_the_defaults() -> None:
    message = decode_client(pack({"type": "create_race", "options": {"max_racers": 100}}))
    assert message == CreateRace(options=RaceOptions(max_racers=100))


@pytest.mark.parametrize(
    ("data", "code", "words"),
    [
        (b"", ErrorCode.BAD_FRAME, "empty"),
        ("{}", ErrorCode.BAD_FRAME, "text frames"),
        (b"\xc1", ErrorCode.BAD_FRAME, "not one valid msgpack value"),
        (pack({"type": "ping"}) + b"\x00", ErrorCode.BAD_FRAME, "not one valid msgpack value"),
        (pack([1, 2]), ErrorCode.BAD_FRAME, "one map, not an array of 2 items"),
        (pack({1: "ping"}), ErrorCode.BAD_FRAME, "not one valid msgpack value"),
        (pack({b"type": "ping"}), ErrorCode.BAD_FRAME, "not one valid msgpack value"),
        (pack({"type": b"ping"}), ErrorCode.BAD_FRAME, "not one valid msgpack value"),
        (pack({"type": "ping", "id": msgpack.ExtType(5, b"x")}), ErrorCode.BAD_FRAME, "msgpack"),
        (pack({"id": 1}), ErrorCode.BAD_MESSAGE, "no type field"),
        (pack({"type": 3}), ErrorCode.BAD_MESSAGE, "type must be a string, not 3"),
        (pack({"type": "bye"}), ErrorCode.UNKNOWN_TYPE, "unknown message type 'bye'"),
        (pack({"type": "welcome"}), ErrorCode.UNKNOWN_TYPE, "sent by the server"),
        (b"\x91" * 3000 + b"\x90", ErrorCode.BAD_FRAME, "msgpack"),
    ],
)
def test_bad_frames(data: bytes | str, code: ErrorCode, words: str) -> None:
    error = client_error(data)
    assert error.code is code
    assert words in error.message


def test_timestamps_are_refused() -> None:
    import datetime

    stamp = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    data: bytes = msgpack.packb({"type": "ping", "id": stamp}, datetime=True)
    assert client_error(data).code is ErrorCode.BAD_FRAME


def test_oversize_frame_is_refused_before_unpacking() -> None:
    data = pack({"type": "ping", "pad": "x" * 5000})
    error = client_error(data)
    assert error.code is ErrorCode.FRAME_TOO_LARGE
    assert error.close_code is CloseCode.MESSAGE_TOO_BIG
    assert "the limit is 4096" in error.message


def test_unpacker_limits_apply() -> None:
    limits = Limits(max_str_len=8, max_array_len=4, max_map_len=3)
    assert client_error(pack({"type": "ping", "x": "y" * 9}), limits).code is ErrorCode.BAD_FRAME
    assert client_error(pack({"type": "ping", "x": [0] * 5}), limits).code is ErrorCode.BAD_FRAME
    four_keys = {"type": "ping", "a": 1, "b": 2, "c": 3}
    assert client_error(pack(four_keys), limits).code is ErrorCode.BAD_FRAME
    assert client_error(pack({"type": "ping", "x": b"\x00"})).code is ErrorCode.BAD_FRAME


def test_nesting_deeper_than_the_limit_is_refused() -> None:
    deep: Any = 0
    for _ in range(8):
        deep = [deep]
    error = client_error(pack({"type": "ping", "x": deep}))
    assert error.code is ErrorCode.BAD_FRAME
    assert "nests deeper than 8" in error.message


def test_version_mismatch_closes_with_its_code() -> None:
    hello = encode_wire(EXAMPLES["hello"])
    hello["protocol_version"] = PROTOCOL_VERSION + 1
    hello["some_future_field"] = {"x": 1}
    error = client_error(pack(hello))
    assert error.code is ErrorCode.VERSION_MISMATCH
    assert error.close_code is CloseCode.VERSION_MISMATCH
    assert (error.in_reply_to, error.reply_to) == ("hello", 1)
    del hello["protocol_version"]
    assert "hello.protocol_version is missing" in client_error(pack(hello)).message


def test_names_must_be_printable() -> None:
    hello = encode_wire(EXAMPLES["hello"])
    for bad_name, why in [
        ("", "must be a string of 1 to 128 characters"),
        (" Ann", "starts or ends with a space"),
        ("Ann\n", "holds U+000A"),
        ("A\x00nn", "holds U+0000 (a control character), which is not printable"),
        ("x" * 33, "must be 1 to 32 characters once normalised (NFKC), not 33"),
    ]:
        hello["name"] = bad_name
        assert client_error(pack(hello)).message.startswith(f"hello.name {why}")
    hello["name"] = "Ånn Østergård 🂡"
    assert decode_client(pack(hello)).name == "Ånn Østergård 🂡"  # type: ignore[union-attr]


def test_every_error_code_has_a_sentence() -> None:
    for code in ErrorCode:
        assert code.sentence.endswith(".")
        assert code.value == str(code)


def test_encode_refuses_what_is_not_a_message() -> None:
    with pytest.raises(TypeError):
        encode({"type": "ping"})  # type: ignore[arg-type]
