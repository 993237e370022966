"""The frames the server writes straight to a connection's transport."""

from __future__ import annotations

import pytest
from websockets.frames import Frame, Opcode

from server.fanout import binary_frame


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 65535, 65536, 70000])
def test_a_message_is_framed_as_websockets_frames_it(size: int) -> None:
    payload = bytes(range(256)) * (size // 256) + bytes(size % 256)
    expected = Frame(Opcode.BINARY, payload).serialize(mask=False, extensions=[])
    assert binary_frame(payload) == expected
