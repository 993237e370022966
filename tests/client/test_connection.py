"""The connection's failures are sentences; a port nobody listens on is the real thing."""

from __future__ import annotations

import socket

import pytest

from client.connection import Backoff, Connection, ConnectionFailed, LinkState, describe_error
from protocol import Error, ErrorCode


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_an_unreachable_server_is_a_sentence() -> None:
    states: list[LinkState] = []
    url = f"ws://127.0.0.1:{free_port()}"
    connection = Connection(url, "ann", on_state=lambda state, _: states.append(state))
    with pytest.raises(ConnectionFailed) as failure:
        async for _ in connection.messages():
            pass
    assert str(failure.value) == (
        f"Cannot reach the server at {url}: connection refused (is the server running?)."
    )
    assert states == [LinkState.CONNECTING, LinkState.CLOSED]


async def test_a_bad_address_is_a_sentence() -> None:
    connection = Connection("http://example.invalid", "ann")
    with pytest.raises(ConnectionFailed, match="not a ws:// or wss:// address"):
        async for _ in connection.messages():
            pass


def test_backoff_doubles_up_to_its_ceiling() -> None:
    assert list(Backoff(first=1.0, ceiling=5.0, attempts=4).delays()) == [1.0, 2.0, 4.0, 5.0]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (ErrorCode.NAME_TAKEN, "That name is taken by another connected player (ann is here)"),
        (ErrorCode.RACE_FULL, "That race is full (ann is here)."),
        (ErrorCode.VERSION_MISMATCH, "This client and the server speak different protocol"),
    ],
)
def test_refusals_read_as_sentences(code: ErrorCode, expected: str) -> None:
    assert describe_error(Error(code=code, message="ann is here.")).startswith(expected)


async def test_sending_while_offline_reports_it() -> None:
    from protocol import Ping

    assert await Connection("ws://127.0.0.1:1", "ann").send(Ping()) is False
