"""The connection's failures are sentences; a port nobody listens on is the real thing."""

from __future__ import annotations

import socket

import pytest

from client.connection import Backoff, Connection, ConnectionFailed, LinkState
from client.wording import describe_error
from protocol import Error, ErrorCode, Welcome
from tests.conftest import LiveServer


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
    backoff = Backoff(first=1.0, ceiling=5.0, attempts=4, jitter=0)
    assert list(backoff.delays()) == [1.0, 2.0, 4.0, 5.0]


def test_backoff_spreads_each_delay_over_its_jitter() -> None:
    """The clients of a node that died do not all come back in the same instant: each
    delay is shortened by a random share of up to ``jitter`` of it, never lengthened."""
    backoff = Backoff(first=1.0, ceiling=5.0, attempts=4, jitter=0.5)
    assert list(backoff.delays(draw=lambda: 0.0)) == [1.0, 2.0, 4.0, 5.0]
    assert list(backoff.delays(draw=lambda: 0.5)) == [0.75, 1.5, 3.0, 3.75]
    drawn = [delay for _ in range(200) for delay in backoff.delays()]
    assert len(set(drawn)) > 4  # drawn at random, not four values again and again
    bounds = [1.0, 2.0, 4.0, 5.0] * 200
    assert all(bound / 2 <= delay <= bound for delay, bound in zip(drawn, bounds, strict=True))


def test_backoff_waits_only_between_rounds_of_addresses() -> None:
    backoff = Backoff(first=1.0, ceiling=5.0, attempts=3, jitter=0)
    assert list(backoff.waits(3)) == [1.0, 0.0, 0.0, 2.0, 0.0, 0.0, 4.0, 0.0, 0.0]
    assert list(backoff.waits(1)) == [1.0, 2.0, 4.0]


async def test_a_lost_connection_tries_the_next_address_and_after_a_refusal_the_one_after_at_once(
    live_server: LiveServer,
) -> None:
    """A cluster of two nodes, one dead: the client, cut off from the live one, tries the
    next address (the dead node) after the round's delay, and when it is refused goes
    back to the live node at once, not after a doubled delay."""
    dead = f"ws://127.0.0.1:{free_port()}"
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    connection = Connection([live_server.url, dead], "ann", sleep=sleep,
                            backoff=Backoff(first=0.5, jitter=0))
    welcomes: list[Welcome] = []
    async for message in connection.messages():
        if not isinstance(message, Welcome):
            continue
        welcomes.append(message)
        if len(welcomes) == 2:
            break
        assert live_server.server is not None
        for server_side in list(live_server.server.socket_tier.connections):
            server_side.transport.abort()  # the connection is lost, not closed
    await connection.close()
    assert welcomes[1].resumed
    assert waited == [0.5, 0.0]
    assert connection.reconnects == 2


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
