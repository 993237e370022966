"""Every message type survives encode -> decode unchanged, in the direction it travels."""

from __future__ import annotations

import msgpack
import pytest

from protocol import (
    CLIENT_MESSAGES,
    SERVER_MESSAGES,
    Message,
    decode_client,
    decode_server,
    encode,
    encode_wire,
)
from protocol.examples import EXAMPLES


@pytest.mark.parametrize("kind", sorted(CLIENT_MESSAGES))
def test_client_message_round_trips(kind: str) -> None:
    message = EXAMPLES[kind]
    assert decode_client(encode(message)) == message


@pytest.mark.parametrize("kind", sorted(SERVER_MESSAGES))
def test_server_message_round_trips(kind: str) -> None:
    message = EXAMPLES[kind]
    assert decode_server(encode(message)) == message


@pytest.mark.parametrize("kind", sorted(EXAMPLES))
def test_frame_is_one_map_with_its_type(kind: str) -> None:
    message: Message = EXAMPLES[kind]
    wire = msgpack.unpackb(encode(message), raw=False)
    assert isinstance(wire, dict)
    assert wire["type"] == kind
    assert wire == encode_wire(message)


def test_every_type_has_an_example() -> None:
    assert set(EXAMPLES) == set(CLIENT_MESSAGES) | set(SERVER_MESSAGES)
    assert not set(CLIENT_MESSAGES) & set(SERVER_MESSAGES)
