"""The connection's failures are sentences; a port nobody listens on is the real thing."""

from __future__ import annotations

import socket

import pytest

from client.connection import Backoff, Connection, ConnectionFailed, LinkState
from client.wording import describe_error
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
        f"Cannot reach the server at {url}: nothing answers there (is the server running?)."
    )
    assert states == [LinkState.CONNECTING, LinkState.CLOSED]


async def test_a_name_that_does_not_resolve_is_a_sentence_not_an_errno() -> None:
    connection = Connection("ws://nosuch.invalid:8765", "ann")
    with pytest.raises(ConnectionFailed) as failure:
        async for _ in connection.messages():
            pass
    assert str(failure.value) == (
        "Cannot reach the server at ws://nosuch.invalid:8765: the name does not resolve."
    )


async def test_a_bad_address_is_a_sentence() -> None:
    connection = Connection("http://example.invalid", "ann")
    with pytest.raises(ConnectionFailed, match="not a ws:// or wss:// address"):
        async for _ in connection.messages():
            pass


def test_backoff_doubles_up_to_its_ceiling() -> None:
    assert list(Backoff(first=1.0, ceiling=5.0, attempts=4).delays()) == [1.0, 2.0, 4.0, 5.0]


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        (ErrorCode.NAME_TAKEN, "'ann' is connected already",
         "That name is taken by another connected player, or claimed by a player: choose "
         "another (or play with that player's key)."),
        (ErrorCode.RACE_FULL, "this race is full", "That race is full."),
        (ErrorCode.VERSION_MISMATCH, "hello.protocol_version is 99; this server speaks version 1",
         "This client and the server speak different protocol versions: one of them needs "
         "updating."),
        (ErrorCode.TOURNAMENT_STATE,
         "not now: registration is not open; the tournament is finished and ending",
         "Not now: registration is not open; the tournament is finished and ending."),
        (ErrorCode.SERVER_BUSY, "", ErrorCode.SERVER_BUSY.sentence),
    ],
)
def test_refusals_read_as_one_sentence_said_once(
    code: ErrorCode, message: str, expected: str
) -> None:
    assert describe_error(Error(code=code, message=message)) == expected


async def test_sending_while_offline_reports_it() -> None:
    from protocol import Ping

    assert await Connection("ws://127.0.0.1:1", "ann").send(Ping()) is False
