"""Connection caps, new sessions per address, and client addresses from trusted proxies."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import select
import time
import urllib.request
from pathlib import Path
from socket import SO_ERROR, SOL_SOCKET
from socket import socket as tcp_socket

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import InvalidStatus

from client.connection import Connection, ConnectionFailed
from protocol import Error, ErrorCode, Hello, Welcome, decode_server, encode
from server.config import ServerConfig
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.server.exposition import Labels, exposition_samples
from tests.server.test_abuse import Lines, server_log  # noqa: F401 (a fixture)
from tests.server.wire_client import TIMEOUT, WireClient


async def metrics(live: LiveServer) -> dict[tuple[str, Labels], float]:
    def get() -> str:
        with urllib.request.urlopen(live.http_url + "/metrics", timeout=TIMEOUT) as response:
            text: str = response.read().decode()
            return text

    return exposition_samples(await asyncio.to_thread(get))


async def open_socket(live: LiveServer, forwarded_for: str | None = None) -> ClientConnection:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else None
    return await connect(live.url, additional_headers=headers)


async def refused_status(live: LiveServer, forwarded_for: str | None = None) -> tuple[int, str]:
    with pytest.raises(InvalidStatus) as refused:
        await open_socket(live, forwarded_for)
    response = refused.value.response
    return response.status_code, bytes(response.body or b"").decode()


async def until_open(live: LiveServer, count: int) -> None:
    """Wait until the server counts ``count`` open connections (a close is counted when
    the server has seen the TCP connection go)."""
    assert live.server is not None
    while live.server.socket_tier.admission.open != count:
        await asyncio.sleep(0.01)


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    return dataclasses.replace(
        fast_config(tmp_path / "db"), max_connections=3, max_connections_per_address=2
    )


async def test_connections_past_the_cap_per_address_are_refused_with_429(
    live_server: LiveServer,
) -> None:
    first, second = await open_socket(live_server), await open_socket(live_server)
    status, body = await refused_status(live_server)
    assert status == 429
    assert body == "Too many connections from your address; close some and try again.\n"
    # The terminal client's connection shows the server's sentence.
    with pytest.raises(ConnectionFailed, match="Too many connections from your address"):
        async for _ in Connection(live_server.url, "third").messages():
            pass
    lines = await metrics(live_server)
    assert lines[("foursquare_refused_total", (("reason", "connections_per_address"),))] == 2
    assert lines[("foursquare_limit", (("limit", "connections_per_address"),))] == 2
    await first.close()
    await until_open(live_server, 1)
    third = await open_socket(live_server)  # a closed connection gave its place back
    await second.close()
    await third.close()


async def test_an_untrusted_peer_cannot_pick_its_address(live_server: LiveServer) -> None:
    """Without --trusted-proxy, X-Forwarded-For is ignored: every connection here is
    127.0.0.1's, whatever the header says."""
    sockets = [await open_socket(live_server, f"203.0.113.{n}") for n in (1, 2)]
    status, _ = await refused_status(live_server, "203.0.113.3")
    assert status == 429
    for socket in sockets:
        await socket.close()


async def test_a_trusted_proxy_names_the_client_and_the_total_cap_holds(
    tmp_path: Path, server_log: Lines  # noqa: F811 (the fixture)
) -> None:
    config = dataclasses.replace(
        fast_config(tmp_path / "db"),
        max_connections=3,
        max_connections_per_address=2,
        trusted_proxies=("127.0.0.0/8",),
    )
    async with start_live_server(config) as live:
        # Two from one client behind the proxy, then that client is at its cap...
        sockets = [await open_socket(live, "198.51.100.7, 203.0.113.1") for _ in range(2)]
        status, _ = await refused_status(live, "203.0.113.1")
        assert status == 429
        # ...while another client behind the same proxy gets in, up to the total cap.
        sockets.append(await open_socket(live, "203.0.113.2"))
        status, body = await refused_status(live, "203.0.113.3")
        assert status == 503
        assert body.startswith("The server has all the connections it can take")
        lines = await metrics(live)
        assert lines[("foursquare_refused_total", (("reason", "connections"),))] == 1
        assert lines[("foursquare_refused_total", (("reason", "connections_per_address"),))] == 1
        for socket in sockets:
            await socket.close()
    opened = [json.loads(line) for line in server_log.lines if '"connection_open"' in line]
    assert [line["remote"] for line in opened] == ["203.0.113.1", "203.0.113.1", "203.0.113.2"]
    assert all(line["proxy"].startswith("127.0.0.1:") for line in opened)


async def test_new_sessions_per_address_are_capped_and_resumes_are_not(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "db"), new_sessions_per_minute=2)
    async with start_live_server(config) as live:
        ann = await WireClient.connect(live.url, "ann")
        await WireClient.connect(live.url, "bob")
        async with connect(live.url) as third:
            await third.send(encode(Hello(name="cat", bot=False, id=1)))
            refusal = decode_server(await asyncio.wait_for(third.recv(), TIMEOUT))
            assert isinstance(refusal, Error) and refusal.code is ErrorCode.SERVER_BUSY
            # A resume is not a new session.
            await third.send(encode(Hello(name="ann", bot=False, resume=ann.welcome.resume)))
            welcome = decode_server(await asyncio.wait_for(third.recv(), TIMEOUT))
            assert isinstance(welcome, Welcome) and welcome.resumed
        lines = await metrics(live)
        assert lines[("foursquare_refused_total", (("reason", "new_sessions_per_address"),))] == 1


#: Clients arriving at once: three times asyncio's own default backlog (100), within
#: the server's (``ServerConfig.listen_backlog``) and Linux's default ``somaxconn`` (4,096).
STORM = 300


async def test_a_storm_of_connections_waits_in_the_backlog_while_the_server_is_busy(
    tmp_path: Path,
) -> None:
    """A node's clients resuming all at once on a survivor busy taking its races over:
    every TCP handshake completes and waits to be accepted, none is dropped for the
    kernel's TCP to retry seconds later."""
    async with start_live_server(fast_config(tmp_path / "db")) as live:
        assert live.server is not None
        port = live.server.port
        storm = [tcp_socket() for _ in range(STORM)]
        try:
            for client in storm:
                client.setblocking(False)
                client.connect_ex(("127.0.0.1", port))
            # The event loop does not run until this test awaits again: the server
            # accepts nothing meanwhile, as when its loop is busy, and every connection
            # the kernel completes waits in the listening socket's backlog. A handshake
            # dropped past the backlog stays unconnected (its SYN is retried after 1 s,
            # and dropped again while the backlog is full), so the deadline only bounds
            # how long a failing run takes.
            connecting = set(storm)
            deadline = time.monotonic() + 3.0
            while connecting and time.monotonic() < deadline:
                _, writable, _ = select.select([], list(connecting), [], 0.1)
                connecting -= {client for client in writable
                               if client.getsockopt(SOL_SOCKET, SO_ERROR) == 0}
            assert len(connecting) == 0, f"{len(connecting)} of {STORM} handshakes dropped"
        finally:
            for client in storm:
                client.close()
