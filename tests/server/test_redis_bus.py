"""The cluster's bus over the machine's real Redis: commands reach their race's owner
once, or are answered where they were sent; events reach each node that listens, once."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from typing import Protocol

import pytest
import redis.asyncio as redis

from protocol import ErrorCode, Place, Role
from server.bus import (
    Attach,
    Audience,
    Caller,
    Command,
    Deliver,
    Detach,
    Done,
    Event,
    Follow,
    Refuse,
    Request,
    TakeRace,
    ToFeed,
    ToSession,
    race_feed,
    session_channel,
)
from server.redis_bus import SHARED_AT_LEAST, RedisBus

ANN = Caller("p-1", "ann", False, Role.PLAYER)
MOVE = Request(ANN, Place(race="K7QX", move=1, row=0, col=0, id=3), received_at=1.5)

class Node(Protocol):
    """Starts a node's bus."""

    def __call__(self, node_id: str, failover_wait: float = 5.0) -> RedisBus:
        """A bus for node ``node_id`` (not started yet)."""
        ...


@pytest.fixture
async def node(redis_url: str, cluster_prefix: str) -> AsyncIterator[Node]:
    """Start nodes of one cluster (closed after the test)."""
    started: list[RedisBus] = []

    def start(node_id: str, failover_wait: float = 5.0) -> RedisBus:
        bus = RedisBus(redis_url, cluster_prefix, node_id, failover_wait=failover_wait)
        started.append(bus)
        return bus

    yield start
    for bus in started:
        await bus.aclose()


async def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    """Wait until ``condition()`` holds (fails the test after ``seconds``)."""
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.01)


def collect(bus: RedisBus) -> list[Event]:
    """Every event ``bus`` hands its socket tier, in order."""
    events: list[Event] = []

    def take(batch: Sequence[Event]) -> None:
        events.extend(batch)

    bus.listen(take)
    return events


def owners(table: dict[str, str]) -> Callable[[Collection[str]], Awaitable[dict[str, str]]]:
    """A node's reading of who holds each lease, from ``table`` (``""`` where absent): the
    store's ``leases`` table stands behind it in a node (tests/cluster)."""

    async def resolve(resources: Collection[str]) -> dict[str, str]:
        return {resource: table.get(resource, "") for resource in resources}

    return resolve


def holding(*resources: str) -> Callable[[str], bool]:
    """A node's own leases."""
    return lambda resource: resource in resources


async def test_a_command_reaches_its_races_owner_once_and_an_update_each_listening_node_once(
    node: Node,
) -> None:
    owner, other, idle = node("a"), node("b"), node("c")
    for bus in (owner, other, idle):
        await bus.start()
    commands: list[Command] = []
    misplaced: list[Command] = []
    owner.serve(commands.append, holding("K7QX"), owners({}))
    other.serve(misplaced.append, holding(), owners({"K7QX": "a"}))
    heard, idle_heard = collect(other), collect(idle)
    other.subscribe(race_feed("K7QX"))
    other.send(MOVE)
    await until(lambda: len(commands) == 1)
    assert commands == [MOVE]
    assert misplaced == []
    await asyncio.sleep(0.3)  # the subscription reaches Redis
    update = Deliver(ToFeed(race_feed("K7QX"), Audience.EVERYONE), b"\x81\xa1a\x01")
    owner.publish([update, update])
    await until(lambda: len(heard) == 2)
    await asyncio.sleep(0.2)
    assert heard == [update, update]  # one message of two events, once
    assert idle_heard == []  # follows nothing: gets nothing
    assert owner.published == 1


async def test_a_race_handed_to_a_node_reaches_that_node_alone_once(node: Node) -> None:
    leader, chosen, other = node("a"), node("b"), node("c")
    heard: dict[str, list[Command]] = {"a": [], "b": [], "c": []}
    for bus in (leader, chosen, other):
        await bus.start()
        bus.serve(heard[bus.node_id].append, holding(), owners({}))
    leader.send_to("b", TakeRace("K7QX"))
    await until(lambda: heard["b"] == [TakeRace("K7QX")])
    await asyncio.sleep(0.3)
    assert heard == {"a": [], "b": [TakeRace("K7QX")], "c": []}


async def test_a_command_whose_owner_is_gone_is_sent_again_until_it_is_back(
    node: Node,
) -> None:
    other, late = node("b"), node("a")
    await other.start()
    other.serve(lambda command: None, holding(), owners({"K7QX": "a"}))
    other.send(MOVE)
    await asyncio.sleep(0.5)  # "a" is not there: kept, and published again every 0.2 s
    commands: list[Command] = []
    await late.start()
    late.serve(commands.append, holding("K7QX"), owners({}))
    await until(lambda: commands == [MOVE])
    await asyncio.sleep(0.5)
    assert commands == [MOVE]  # once


async def test_a_command_for_a_race_nobody_runs_is_answered_where_it_was_sent(
    node: Node,
) -> None:
    alone = node("b")
    await alone.start()
    here: list[Command] = []
    alone.serve(here.append, holding(), owners({}))
    alone.send(MOVE)
    await until(lambda: here == [MOVE])  # its race tier says there is no such race


async def test_a_command_sent_to_a_node_that_lost_the_race_goes_on_to_its_owner(
    node: Node,
) -> None:
    sender, stale, owner = node("b"), node("c"), node("a")
    for bus in (sender, stale, owner):
        await bus.start()
    wrong: list[Command] = []
    commands: list[Command] = []
    sender.serve(wrong.append, holding(), owners({"K7QX": "c"}))  # read before it moved
    stale.serve(wrong.append, holding(), owners({"K7QX": "a"}))
    owner.serve(commands.append, holding("K7QX"), owners({}))
    sender.send(MOVE)
    await until(lambda: commands == [MOVE])
    await asyncio.sleep(0.3)
    assert commands == [MOVE] and wrong == []


async def test_a_command_no_owner_takes_in_time_is_refused_where_it_was_sent(
    node: Node,
) -> None:
    other = node("b", failover_wait=0.3)
    await other.start()
    answered = collect(other)
    other.subscribe("session:p-1")  # p-1 is connected to this node
    other.serve(None, holding(), owners({"K7QX": "gone"}))
    other.send(Attach(ANN, resumed=True, ticket=4))  # no race tier here: released at once
    other.send(MOVE)
    await until(lambda: len(answered) == 2)
    done, refusal = answered
    assert done == Done("p-1", 4)
    assert isinstance(refusal, Refuse) and refusal.code is ErrorCode.UNAVAILABLE
    assert (refusal.in_reply_to, refusal.reply_to) == ("place", 3)


async def test_a_feed_followed_here_in_a_batch_gets_the_batchs_later_updates_here(
    node: Node,
) -> None:
    leader = node("a")
    await leader.start()
    heard = collect(leader)
    leader.subscribe("session:p-1")  # p-1 is connected to this node
    follow = Follow("p-1", race_feed("K7QX"), member=True)
    update = Deliver(ToFeed(race_feed("K7QX"), Audience.EVERYONE), b"\x80")
    leader.publish([follow, update])
    assert heard == [follow, update]  # at once, in order: the socket tier then follows it


async def test_a_big_payload_sent_to_many_sessions_crosses_redis_once(
    node: Node, redis_url: str, cluster_prefix: str
) -> None:
    owner, other = node("a"), node("b")
    for bus in (owner, other):
        await bus.start()
    heard = collect(other)
    sessions = [f"p-{index}" for index in range(20)]
    for session in sessions:
        other.subscribe(session_channel(session))
    view = b"\x81\xa4view\xc5" + (SHARED_AT_LEAST).to_bytes(2, "big") + bytes(SHARED_AT_LEAST)
    small = b"\x81\xa1a\x01"
    client = redis.Redis.from_url(redis_url)
    crossed: list[int] = []
    async with client.pubsub() as watcher:
        await watcher.psubscribe(f"{cluster_prefix}:*")
        await asyncio.sleep(0.3)  # the subscriptions reach Redis
        for session in sessions:  # one view each, as many spectators starting to watch
            owner.publish([Deliver(ToSession(session), view), Deliver(ToSession(session), small)])
        await until(lambda: len(heard) == 2 * len(sessions))
        while (message := await watcher.get_message(True, timeout=0.5)) is not None:
            crossed.append(len(message["data"]))
    await client.aclose()
    assert heard == [event for session in sessions for event in (
        Deliver(ToSession(session), view), Deliver(ToSession(session), small))]
    assert sum(crossed) < 2 * len(view)  # once, not once per session


async def test_the_shared_payloads_of_two_nodes_are_told_apart(node: Node) -> None:
    first, second, listener = node("a"), node("b"), node("c")
    for bus in (first, second, listener):
        await bus.start()
    heard = collect(listener)
    for session in ("p-1", "p-2", "p-3"):
        listener.subscribe(session_channel(session))
    await asyncio.sleep(0.3)  # the subscriptions reach Redis
    views = [b"\x81\xa4view\xc5" + (SHARED_AT_LEAST).to_bytes(2, "big")
             + bytes([mark]) * SHARED_AT_LEAST for mark in (1, 2)]
    # Each node's first shared payload; then the first node's again, which it does not
    # publish again: the listener must still tell it from the second node's.
    sends = [(first, "p-1", views[0]), (second, "p-2", views[1]), (first, "p-3", views[0])]
    for count, (bus, session, view) in enumerate(sends, 1):
        bus.publish([Deliver(ToSession(session), view)])
        await until(functools.partial(lambda count: len(heard) >= count, count))
    assert heard == [Deliver(ToSession("p-1"), views[0]), Deliver(ToSession("p-2"), views[1]),
                     Deliver(ToSession("p-3"), views[0])]


async def test_a_session_coming_reaches_every_node_stamped_with_its_own(node: Node) -> None:
    """An ``Attach`` goes to every node's race tier with the id of the node the session is
    connected to, and a resumed one to every other node's socket tier too (which closes
    an older connection of the session); a ``Detach`` goes everywhere alike."""
    here, there = node("a"), node("b")
    heard: dict[str, list[Command]] = {"a": [], "b": []}
    elsewhere: dict[str, list[Attach]] = {"a": [], "b": []}
    for bus in (here, there):
        await bus.start()
        bus.serve(heard[bus.node_id].append, holding(), owners({}))
        bus.on_attached_elsewhere(elsewhere[bus.node_id].append)
    here.send(Attach(ANN, resumed=False, ticket=1, since=10.0))
    here.send(Attach(ANN, resumed=True, ticket=2, since=11.0))
    here.send(Detach("p-1"))
    stamped = [Attach(ANN, resumed=False, ticket=1, since=10.0, node="a"),
               Attach(ANN, resumed=True, ticket=2, since=11.0, node="a"),
               Detach("p-1", node="a")]
    await until(lambda: len(heard["b"]) == 3)
    await asyncio.sleep(0.2)
    assert heard == {"a": stamped, "b": stamped}
    assert elsewhere == {"a": [], "b": [stamped[1]]}  # a new session is nowhere else
