"""Hostile and careless clients, limits, timeouts, and the HTTP endpoints."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame, Opcode
from websockets.protocol import Event, State

from protocol import (
    CloseCode,
    CreateRace,
    Error,
    ErrorCode,
    Hello,
    JoinRace,
    MovePlaced,
    Ping,
    Place,
    Pong,
    RaceOptions,
    RaceSnapshot,
    Spectate,
    Welcome,
    decode_server,
    encode,
)
from server.app import RaceServer
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.server.exposition import exposition_samples, exposition_types
from tests.server.wire_client import TIMEOUT, WireClient, http_get


async def still_answers(client: WireClient) -> None:
    await client.send(Ping(id=client.next_id()))
    assert isinstance(await client.expect(Pong), Pong)


async def test_healthz_and_metrics_answer_over_plain_http(live_server: LiveServer) -> None:
    ann = await WireClient.connect(live_server.url, "ann")
    bob = await WireClient.connect(live_server.url, "bob")
    await ann.send(CreateRace(options=RaceOptions(max_racers=2, countdown=0), id=1))
    race = (await ann.expect(RaceSnapshot)).race
    await bob.send(JoinRace(race=race, id=2))
    await ann.send(Place(race=race, move=1, row=0, col=0, id=3))
    await ann.expect(MovePlaced)
    await ann.send(Place(race=race, move=2, row=3, col=3, id=4))
    assert (await ann.expect(Error)).code is ErrorCode.ILLEGAL_MOVE

    status, _, body = await asyncio.to_thread(http_get, live_server.http_url + "/healthz")
    assert (status, body) == (200, "ok\n")
    status, kind, metrics = await asyncio.to_thread(http_get, live_server.http_url + "/metrics")
    assert status == 200 and kind.startswith("text/plain; version=0.0.4")
    samples = exposition_samples(metrics)
    assert samples["foursquare_connections", ()] == 2
    assert samples["foursquare_connections_total", ()] == 2
    assert samples["foursquare_races", (("phase", "running"),)] == 1
    assert samples["foursquare_seats_total", ()] == 2
    assert samples["foursquare_moves_total", ()] == 1
    assert samples["foursquare_errors_total", (("code", "illegal_move"),)] == 1
    assert samples["foursquare_move_latency_seconds_count", ()] == 1
    assert samples["foursquare_move_latency_seconds_bucket", (("le", "+Inf"),)] == 1
    assert samples["foursquare_move_latency_seconds_sum", ()] > 0
    types = exposition_types(metrics)
    for name, kind in [("foursquare_connections", "gauge"),
                       ("foursquare_connections_total", "counter"),
                       ("foursquare_races", "gauge"), ("foursquare_seats_total", "counter"),
                       ("foursquare_moves_total", "counter"),
                       ("foursquare_errors_total", "counter"),
                       ("foursquare_move_latency_seconds", "histogram")]:
        assert types[name] == kind
    # The process's own, from the Prometheus client library.
    assert samples["process_resident_memory_bytes", ()] > 0
    assert samples["process_open_fds", ()] >= 2  # at least the two websockets
    assert samples["process_cpu_seconds_total", ()] > 0
    assert ("python_gc_collections_total", (("generation", "0"),)) in samples
    await ann.close()
    await bob.close()


async def test_bad_messages_get_typed_errors_and_the_connection_lives_on(
    live_server: LiveServer,
) -> None:
    client = await WireClient.connect(live_server.url, "careless")
    nested: object = 1
    for _ in range(40):
        nested = [nested]
    cases = [
        (b"\xc1", ErrorCode.BAD_FRAME),
        (msgpack.packb([1, 2, 3]), ErrorCode.BAD_FRAME),
        (msgpack.packb({"type": "launch_missiles"}), ErrorCode.UNKNOWN_TYPE),
        (msgpack.packb({"type": "place", "race": "X", "move": 2**63, "row": 0, "col": 0}),
         ErrorCode.BAD_MESSAGE),
        (msgpack.packb({"type": "place", "race": "X", "move": "one", "row": 0, "col": 0}),
         ErrorCode.BAD_MESSAGE),
        (msgpack.packb({"type": "ping", "deep": nested}), ErrorCode.BAD_FRAME),
        (encode(Place(race="NOSUCH", move=1, row=0, col=0, id=9)), ErrorCode.RACE_NOT_FOUND),
        (encode(Hello(name="again", bot=False)), ErrorCode.ALREADY_WELCOMED),
    ]
    for frame, code in cases:
        await client.connection.send(frame)
        error = await client.expect(Error)
        assert error.code is code, (frame[:40], error)
    await client.connection.send("a text frame")
    assert (await client.expect(Error)).code is ErrorCode.BAD_FRAME
    await still_answers(client)
    await client.close()


@pytest.mark.parametrize(
    "message",
    [
        pytest.param(b"\x80" * 100_000, id="oversize"),
        pytest.param([b""] * 100 + [encode(Ping(id=1))], id="too-many-fragments"),
    ],
)
async def test_an_oversize_message_closes_that_connection_only(
    live_server: LiveServer, message: bytes | list[bytes]
) -> None:
    bystander = await WireClient.connect(live_server.url, "bystander")
    sender = await WireClient.connect(live_server.url, "sender")
    await sender.connection.send(message)
    with pytest.raises(ConnectionClosed):
        while True:
            await sender.receive()
    assert sender.connection.close_code == CloseCode.MESSAGE_TOO_BIG
    await still_answers(bystander)
    await bystander.close()


async def test_a_flood_is_rate_limited_with_a_typed_error(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "db"), rate_per_second=1.0, rate_burst=5)
    async with start_live_server(config) as live:
        client = await WireClient.connect(live.url, "flood")
        for request in range(20):
            await client.send(Ping(id=request))
        answers = [await client.receive() for _ in range(20)]
        refused = [a for a in answers if isinstance(a, Error)]
        assert refused and all(a.code is ErrorCode.RATE_LIMITED for a in refused)
        assert 5 <= sum(isinstance(a, Pong) for a in answers) < 20
        await client.close()


async def test_a_silent_connection_is_closed_at_the_handshake_timeout(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "db"), handshake_timeout=0.3)
    async with start_live_server(config) as live, connect(live.url) as silent:
        await silent.send(encode(Ping(id=1)))
        refusal = decode_server(await asyncio.wait_for(silent.recv(), TIMEOUT))
        assert isinstance(refusal, Error) and refusal.code is ErrorCode.HELLO_REQUIRED
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(silent.recv(), TIMEOUT)
        assert silent.close_code == CloseCode.HANDSHAKE_TIMEOUT


async def test_another_protocol_version_is_refused_and_closed(live_server: LiveServer) -> None:
    async with connect(live_server.url) as old:
        await old.send(encode(Hello(protocol_version=99, name="old", bot=False)))
        refusal = decode_server(await asyncio.wait_for(old.recv(), TIMEOUT))
        assert isinstance(refusal, Error) and refusal.code is ErrorCode.VERSION_MISMATCH
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(old.recv(), TIMEOUT)
        assert old.close_code == CloseCode.VERSION_MISMATCH


# --------------------------------------------------------------- fuzzing


@pytest.fixture(scope="module")
def threaded_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real server for every fuzz example, on its own event loop in a thread."""
    loop = asyncio.new_event_loop()
    server = RaceServer(fast_config(tmp_path_factory.mktemp("fuzz") / "db"))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(TIMEOUT)
    yield server.url
    asyncio.run_coroutine_threadsafe(server.stop(), loop).result(TIMEOUT)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(TIMEOUT)
    loop.close()


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
wire_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20,
)
frames = st.binary(max_size=300) | st.dictionaries(
    st.sampled_from(["type", "race", "move", "row", "col", "id", "name", "options"]),
    wire_values | st.sampled_from(["place", "hello", "create_race", "spectate", "ping"]),
    max_size=6,
).map(lambda value: msgpack.packb(value, use_bin_type=True))


async def send_garbage(url: str, garbage: list[bytes]) -> None:
    bystander = await WireClient.connect(url, "bystander")
    fuzzed = await WireClient.connect(url, "fuzzed")
    for frame in garbage:
        await fuzzed.connection.send(frame)
        answer = await fuzzed.receive()
        assert isinstance(answer, Error | Pong | RaceSnapshot), answer
    await still_answers(fuzzed)
    await still_answers(bystander)
    await fuzzed.close()
    await bystander.close()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(garbage=st.lists(frames, min_size=1, max_size=4))
def test_random_frames_get_answers_never_a_crash(
    threaded_server: str, garbage: list[bytes]
) -> None:
    asyncio.run(send_garbage(threaded_server, garbage))


async def test_a_client_that_stops_reading_is_cut_off_and_the_rest_go_on(tmp_path: Path) -> None:
    config = dataclasses.replace(
        fast_config(tmp_path / "db"),
        send_buffer_limit=16 * 1024,
        rate_per_second=100_000.0,
        rate_burst=100_000,
    )
    async with start_live_server(config) as live:
        assert live.server is not None
        ann = await WireClient.connect(live.url, "ann")
        await ann.send(CreateRace(options=RaceOptions(max_racers=8, min_racers=8), id=1))
        race = (await ann.expect(RaceSnapshot)).race
        # A client that reads nothing: a small receive buffer, and websockets stops
        # reading the socket once a frame waits unread.
        # The buffer is set before connecting, so the window the sloth advertises matches
        # it. Set afterwards, on a busy machine the sloth's own requests sometimes stopped
        # reaching the server (megabytes held in the sloth's kernel, none waiting at the
        # server): with no more requests there were no more answers, and no backlog.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", live.server.port))
        sloth = await connect(live.url, sock=sock, compression=None, max_queue=1)
        await sloth.send(encode(Hello(name="sloth", bot=False, id=1)))
        while len(live.server.socket_tier.connections) < 2:
            await asyncio.sleep(0.01)
        # And a small kernel buffer on the server's side, as on a slow link, so that the
        # backlog reaches the server's own buffer after a few dozen answers.
        for connection in live.server.socket_tier.connections:
            server_socket = connection.transport.get_extra_info("socket")
            server_socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        ask = encode(Spectate(race=race, id=2))  # answered by a snapshot, progress, boards
        with contextlib.suppress(ConnectionClosed):  # the sloth may notice, or not
            for _ in range(100_000):
                await sloth.send(ask)
                await asyncio.sleep(0)  # the server runs in this event loop
                if len(live.server.socket_tier.connections) == 1:
                    break
        # The sloth may see its connection closed before the server has let it go: the
        # server forgets a connection once its close is done, a moment later on a busy
        # machine. Wait for that (bounded), then only ann's is left: the sloth was cut off.
        for _ in range(2_000):
            if len(live.server.socket_tier.connections) == 1:
                break
            await asyncio.sleep(0.01)
        assert len(live.server.socket_tier.connections) == 1
        sloth.transport.abort()
        # The others never noticed.
        await ann.send(Ping(id=3))
        await ann.expect(Pong, reply_to=3)
        await ann.close()


async def test_keepalive_pings_keep_a_live_client_and_drop_one_that_stopped_answering(
    tmp_path: Path,
) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "db"), ping_interval=0.2, ping_timeout=0.4)
    async with start_live_server(config) as live:
        assert live.server is not None
        awake = await WireClient.connect(live.url, "awake")
        asleep = await WireClient.connect(live.url, "asleep")
        # Its socket is no longer read: pings go unanswered, as from a vanished peer.
        asleep.connection.transport.pause_reading()
        port = asleep.connection.local_address[1]
        connections = live.server.socket_tier.connections
        (server_side,) = [c for c in connections if c.remote_address[1] == port]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + TIMEOUT
        while server_side.state is State.OPEN and loop.time() < deadline:
            await asyncio.sleep(0.05)
        # Its ping went unanswered: the server closes the connection (and drops it once
        # the close handshake times out).
        assert server_side.state is not State.OPEN
        assert server_side.protocol.close_sent is not None
        assert server_side.protocol.close_sent.code == CloseCode.INTERNAL_ERROR
        asleep.connection.transport.abort()  # rather than wait out the close handshake
        # Many intervals later, the client that answers its pings is still there.
        await asyncio.sleep(1.0)
        await still_answers(awake)
        await awake.close()


async def test_messages_sent_without_waiting_are_answered_in_order(
    live_server: LiveServer,
) -> None:
    """A hello, then pings, sent back to back: the pings wait for the welcome (the hello's
    journal write), and every answer comes in the order of the requests. (More wait than
    the connection holds before it stops reading, which it then resumes.)"""
    async with connect(live_server.url) as eager:
        await eager.send(encode(Hello(name="eager", bot=True, id=1)))
        for request in range(2, 32):
            await eager.send(encode(Ping(id=request)))
        answers = [decode_server(await asyncio.wait_for(eager.recv(), TIMEOUT)) for _ in range(31)]
    assert isinstance(answers[0], Welcome) and answers[0].reply_to == 1
    assert [(type(a), a.reply_to) for a in answers[1:]] == [(Pong, r) for r in range(2, 32)]


async def test_a_message_in_fragments_is_answered_as_one(live_server: LiveServer) -> None:
    client = await WireClient.connect(live_server.url, "fragments")
    frame = encode(Ping(id=7))
    await client.connection.send([frame[:1], frame[1:3], frame[3:]])
    assert (await client.expect(Pong)).reply_to == 7
    await client.connection.send(["a text ", "frame in fragments"])
    assert (await client.expect(Error)).code is ErrorCode.BAD_FRAME
    await still_answers(client)
    await client.close()



class PingCountingConnection(ClientConnection):
    """A client connection that counts the websocket pings it is sent."""

    pings = 0

    def process_event(self, event: Event) -> None:
        if isinstance(event, Frame) and event.opcode is Opcode.PING:
            self.pings += 1
        super().process_event(event)


async def test_only_a_quiet_connection_is_pinged(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "db"), ping_interval=0.2, ping_timeout=0.5)
    async with (
        start_live_server(config) as live,
        connect(live.url, create_connection=PingCountingConnection) as talker,
        connect(live.url, create_connection=PingCountingConnection) as quiet,
    ):
        for connection, name in ((talker, "talker"), (quiet, "quiet")):
            await connection.send(encode(Hello(name=name, bot=True)))
            assert isinstance(decode_server(await connection.recv()), Welcome)
        for request in range(20):  # a message every 50 ms for a second
            await talker.send(encode(Ping(id=request)))
            assert isinstance(decode_server(await talker.recv()), Pong)
            await asyncio.sleep(0.05)
        assert isinstance(talker, PingCountingConnection)
        assert isinstance(quiet, PingCountingConnection)
        assert talker.pings == 0
        assert quiet.pings >= 3  # about one every 0.2 s, each answered
        assert quiet.state is State.OPEN


async def test_a_shutdown_waits_at_most_the_close_timeout_for_a_client_that_reads_nothing(
    tmp_path: Path,
) -> None:
    """A client that reads nothing never answers the close frame, which waits behind its
    backlog: the server stops all the same, once ``close_timeout`` has passed."""
    config = dataclasses.replace(
        fast_config(tmp_path / "db"),
        close_timeout=1.0,
        rate_per_second=100_000.0,
        rate_burst=100_000,
    )
    loop = asyncio.get_running_loop()
    async with contextlib.AsyncExitStack() as stack:
        live = await stack.enter_async_context(start_live_server(config))
        server = live.server
        assert server is not None
        ann = await WireClient.connect(live.url, "ann")
        await ann.send(CreateRace(options=RaceOptions(max_racers=8, min_racers=8), id=1))
        race = (await ann.expect(RaceSnapshot)).race
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.connect(("127.0.0.1", server.port))
        sloth = await connect(live.url, sock=sock, compression=None, max_queue=1)
        stack.callback(sloth.transport.abort)
        await sloth.send(encode(Hello(name="sloth", bot=False, id=1)))
        while len(server.socket_tier.connections) < 2:
            await asyncio.sleep(0.01)
        port = sock.getsockname()[1]
        (held,) = [c for c in server.socket_tier.connections if c.remote_address[1] == port]
        held.transport.get_extra_info("socket").setsockopt(
            socket.SOL_SOCKET, socket.SO_SNDBUF, 4096
        )
        ask = encode(Spectate(race=race, id=2))
        while held.transport.get_write_buffer_size() < 256 * 1024:  # a backlog, not a cutoff
            await sloth.send(ask)
            await asyncio.sleep(0)
        started = loop.time()
        await asyncio.wait_for(server.stop(), TIMEOUT)
        took = loop.time() - started
    assert took >= config.close_timeout * 0.9
    assert held.transport.is_closing()
