"""The rules one server keeps about sessions, kept across the nodes of a cluster.

Real node processes on one PostgreSQL database and one Redis, and real websocket clients
connected to different nodes:

- one race at a time: a session seated in a race on one node gets ``already_joined``
  when it asks to join a race on another, until its own game there is over;
- an idle session is not expired while a race on another node still holds it, its own
  game there over or not;
- names are unique among connected human players across the cluster (``name_taken``);
- a session resumed on another node closes its old connection with 4006;
- a node that dies: the sessions connected to it are counted away in the races of the
  others once its leases lapse, and their names are free again.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from websockets.asyncio.client import connect

from protocol import (
    CardToPlace,
    CloseCode,
    CreateRace,
    Error,
    ErrorCode,
    Hello,
    JoinRace,
    Ok,
    Ping,
    Pong,
    QuickRace,
    RaceOptions,
    RaceSnapshot,
    Resign,
    ServerMessage,
    Welcome,
    decode_server,
    encode,
)
from tests.cluster.harness import PATIENCE, Cluster, running_cluster
from tests.server.wire_client import TIMEOUT, WireClient

#: A race for two, listed nowhere (joined by its code), run by the node it is made on,
#: counting down as soon as both are in.
DUEL = RaceOptions(max_racers=2, min_racers=2, public=False, countdown=1)

#: A race for three: two seated wait in its lobby for a third.
TRIO = RaceOptions(max_racers=3, min_racers=3, public=False, countdown=1)


async def made(client: WireClient, options: RaceOptions) -> str:
    """The id of a private race ``client`` makes (and is seated in)."""
    await client.send(CreateRace(options=options, id=client.next_id()))
    snapshot = await client.expect(RaceSnapshot)
    return snapshot.race


async def answer(client: WireClient, request_id: int) -> ServerMessage:
    """The answer to ``client``'s request ``request_id`` (an error, or what names it)."""
    while True:
        message = await client.receive()
        if getattr(message, "reply_to", None) == request_id:
            return message


async def refused(client: WireClient, message: QuickRace | CreateRace | JoinRace) -> Error:
    """Send ``message`` (whose id is its own); the error that answers it."""
    await client.send(message)
    reply = await answer(client, message.id or 0)
    assert isinstance(reply, Error), reply
    return reply


async def hello_answer(url: str, name: str, *, bot: bool = False,
                       resume: str | None = None) -> ServerMessage:
    """What a new connection saying hello as ``name`` is answered (then it is closed)."""
    async with connect(url, compression=None) as connection:
        await connection.send(encode(Hello(name=name, bot=bot, resume=resume, id=1)))
        return decode_server(await asyncio.wait_for(connection.recv(), TIMEOUT))


async def welcomed_soon(url: str, name: str) -> None:
    """Say hello as ``name`` until welcomed (a name held on a dead node frees once its
    leases lapse)."""
    deadline = time.monotonic() + PATIENCE
    while True:
        reply = await hello_answer(url, name)
        if isinstance(reply, Welcome):
            return
        assert isinstance(reply, Error) and reply.code is ErrorCode.NAME_TAKEN, reply
        assert time.monotonic() < deadline, f"{name} is still taken"
        await asyncio.sleep(0.2)


async def racer_shown(client: WireClient, racer: str, *, connected: bool) -> None:
    """Read ``client``'s messages until a race snapshot shows ``racer`` so."""
    async with asyncio.timeout(PATIENCE):
        while True:
            message = await client.receive()
            if isinstance(message, RaceSnapshot) and any(
                info.racer == racer and info.connected is connected for info in message.racers
            ):
                return


async def test_a_session_races_in_one_race_at_a_time_across_nodes(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=2) as cluster:
        await cluster.wait_for_leader()
        n1, n2 = cluster.nodes["n1"].url, cluster.nodes["n2"].url
        ann = await WireClient.connect(n1, "ann")
        bob = await WireClient.connect(n1, "bob")
        carl = await WireClient.connect(n2, "carl")
        first = await made(ann, DUEL)  # run by n1
        second = await made(carl, TRIO)  # run by n2, which never saw ann's seat
        assert (cluster.owner(first), cluster.owner(second)) == ("n1", "n2")

        # Seated in the lobby of a race on n1: no race on n2, and no second race anywhere.
        error = await refused(ann, JoinRace(race=second, id=ann.next_id()))
        assert error.code is ErrorCode.ALREADY_JOINED and first in error.message, error
        moved = await WireClient.connect(n2, "ann", resume=ann.welcome.resume)
        for request in (JoinRace(race=second, id=moved.next_id()), QuickRace(id=moved.next_id()),
                        CreateRace(options=DUEL, id=moved.next_id())):
            error = await refused(moved, request)
            assert error.code is ErrorCode.ALREADY_JOINED, (request, error)

        # Racing (the race started): still tied to it until its own game is over.
        await bob.send(JoinRace(race=first, id=bob.next_id()))
        await moved.expect(CardToPlace, race=first)
        error = await refused(moved, JoinRace(race=second, id=moved.next_id()))
        assert error.code is ErrorCode.ALREADY_JOINED, error
        resign = Resign(race=first, id=moved.next_id())
        await moved.send(resign)
        assert isinstance(await answer(moved, resign.id or 0), Ok)
        join = JoinRace(race=second, id=moved.next_id())
        await moved.send(join)
        joined = await answer(moved, join.id or 0)
        assert isinstance(joined, RaceSnapshot) and joined.race == second, joined
        for client in (moved, bob, carl):
            await client.close()


@pytest.fixture
def quick_expiry() -> Iterator[None]:
    """Nodes that forget a session idle for a second, looking every half second."""
    saved = {name: os.environ.get(name) for name in (
        "FOURSQUARE_SESSION_EXPIRY", "FOURSQUARE_SESSION_EXPIRY_INTERVAL"
    )}
    os.environ["FOURSQUARE_SESSION_EXPIRY"] = "1"
    os.environ["FOURSQUARE_SESSION_EXPIRY_INTERVAL"] = "0.5"
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.mark.usefixtures("quick_expiry")
async def test_an_idle_session_racing_on_another_node_is_kept(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=2) as cluster:
        await cluster.wait_for_leader()
        n1, n2 = cluster.nodes["n1"].url, cluster.nodes["n2"].url
        bob = await WireClient.connect(n1, "bob")
        race = await made(bob, DUEL)  # run by n1
        ann = await WireClient.connect(n2, "ann")  # a session of n2's
        await ann.send(JoinRace(race=race, id=ann.next_id()))
        await ann.expect(CardToPlace, race=race)  # racing: away, it has a minute to resume
        idle = await WireClient.connect(n2, "idle")  # in no race: expires
        await ann.close()
        await idle.close()
        # Several of n2's looks: its race tier alone would let ann go (the race is n1's).
        await kept_and_forgotten(cluster, "n2", kept=ann, forgotten=idle)
        await bob.close()


@pytest.mark.usefixtures("quick_expiry")
async def test_an_idle_session_whose_game_is_over_is_kept_until_its_race_on_another_node_ends(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=2) as cluster:
        await cluster.wait_for_leader()
        n1, n2 = cluster.nodes["n1"].url, cluster.nodes["n2"].url
        bob = await WireClient.connect(n1, "bob")
        carl = await WireClient.connect(n1, "carl")
        race = await made(bob, TRIO)  # run by n1
        await carl.send(JoinRace(race=race, id=carl.next_id()))
        ann = await WireClient.connect(n2, "ann")  # a session of n2's
        await ann.send(JoinRace(race=race, id=ann.next_id()))
        await ann.expect(CardToPlace, race=race)
        resign = Resign(race=race, id=ann.next_id())
        await ann.send(resign)  # ann's game is over; bob and carl race on
        assert isinstance(await answer(ann, resign.id or 0), Ok)
        idle = await WireClient.connect(n2, "idle")  # in no race: expires
        await ann.close()
        await idle.close()
        # One server keeps ann until the race is over: so does the cluster.
        await kept_and_forgotten(cluster, "n2", kept=ann, forgotten=idle)
        for client in (bob, carl):
            await client.close()


async def kept_and_forgotten(
    cluster: Cluster, node: str, *, kept: WireClient, forgotten: WireClient
) -> None:
    """Wait until ``node`` has expired sessions, and a while more (several of its looks);
    then ``kept``'s session resumes there, and ``forgotten``'s is unknown."""
    url = cluster.nodes[node].url
    deadline = time.monotonic() + PATIENCE
    while not cluster.logged(node, "sessions_expired"):
        assert time.monotonic() < deadline, f"{node} expired no session"
        await asyncio.sleep(0.2)
    await asyncio.sleep(2)
    back = await hello_answer(url, kept.welcome.name, resume=kept.welcome.resume)
    assert isinstance(back, Welcome) and back.resumed, back
    gone = await hello_answer(url, forgotten.welcome.name, resume=forgotten.welcome.resume)
    assert isinstance(gone, Error) and gone.code is ErrorCode.INVALID_TOKEN, gone


async def test_names_are_unique_among_connected_players_across_nodes(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=2) as cluster:
        await cluster.wait_for_leader()
        n1, n2 = cluster.nodes["n1"].url, cluster.nodes["n2"].url
        ann = await WireClient.connect(n1, "Ann")
        for name in ("ann", "ANN", "\u0410nn"):  # (a Cyrillic A)
            reply = await hello_answer(n2, name)
            assert isinstance(reply, Error) and reply.code is ErrorCode.NAME_TAKEN, (name, reply)
        # Bots and spectators need no name of their own; a resume keeps its name.
        assert isinstance(await hello_answer(n2, "ann", bot=True), Welcome)
        moved = await WireClient.connect(n2, "Ann", resume=ann.welcome.resume)
        await name_held_on(cluster, ann.racer_id, "n2")
        reply = await hello_answer(n1, "ann")
        assert isinstance(reply, Error) and reply.code is ErrorCode.NAME_TAKEN, reply
        await moved.close()
        await welcomed_soon(n1, "ann")  # the name is free once its player is gone


async def test_a_session_resumed_on_another_node_closes_its_old_connection(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=3) as cluster:
        await cluster.wait_for_leader()
        urls = [node.url for node in cluster.nodes.values()]
        first = await WireClient.connect(urls[0], "ann", bot=True)
        token = first.welcome.resume
        second = await WireClient.connect(urls[1], "ann", bot=True, resume=token)
        async with asyncio.timeout(PATIENCE):
            await first.connection.wait_closed()
        assert first.connection.close_code == CloseCode.REPLACED
        # And back: the newer connection stays, wherever the older one is.
        third = await WireClient.connect(urls[2], "ann", bot=True, resume=token)
        async with asyncio.timeout(PATIENCE):
            await second.connection.wait_closed()
        assert second.connection.close_code == CloseCode.REPLACED
        await third.send(Ping(id=third.next_id()))
        await third.expect(Pong)
        await third.close()


async def test_a_dead_nodes_sessions_are_counted_away_and_their_names_freed(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=3) as cluster:
        await cluster.wait_for_leader()
        await cluster.wait_for_every_node_live()
        n1, n3 = cluster.nodes["n1"].url, cluster.nodes["n3"].url
        bob = await WireClient.connect(cluster.nodes["n2"].url, "bob")
        race = await made(bob, DUEL)  # run by n2
        ann = await WireClient.connect(n1, "ann")
        await ann.send(JoinRace(race=race, id=ann.next_id()))
        await ann.expect(CardToPlace, race=race)
        assert isinstance(await hello_answer(n3, "ann"), Error)
        cluster.nodes["n1"].kill()
        # n2 counts ann away once n1's leases lapse (nothing ever said she left) ...
        await racer_shown(bob, ann.racer_id, connected=False)
        assert any(line["gone"] == ["n1"] for line in cluster.logged("n2", "nodes_gone"))
        # ... her name is free for a new player ...
        await welcomed_soon(n3, "ann")
        # ... and she resumes on another node, as herself, and is back in her race.
        back = await WireClient.connect(n3, "ann", resume=ann.welcome.resume)
        await racer_shown(bob, ann.racer_id, connected=True)
        await back.close()
        await bob.close()


async def name_held_on(cluster: Cluster, session: str, node: str) -> None:
    """Wait until the store says ``session``'s name is held for it on ``node`` alone."""
    deadline = time.monotonic() + PATIENCE
    while True:
        with psycopg.connect(cluster.db, autocommit=True) as connection:
            nodes = {str(row[0]) for row in connection.execute(
                "SELECT node FROM names WHERE player_id = %s", (session,)
            )}
        if nodes == {node}:
            return
        assert time.monotonic() < deadline, f"{session}'s name is held on {nodes}"
        await asyncio.sleep(0.05)
