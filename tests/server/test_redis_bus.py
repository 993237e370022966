"""The cluster's bus over the machine's real Redis: commands reach the leader once, or
are answered where they were sent; events reach each node that listens, once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Protocol

import pytest

from protocol import ErrorCode, Place, Role
from server.bus import (
    Attach,
    Audience,
    Caller,
    Command,
    Deliver,
    Done,
    Event,
    Follow,
    Refuse,
    Request,
    ToFeed,
    race_feed,
)
from server.redis_bus import RedisBus

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


async def test_a_command_reaches_the_leader_once_and_an_update_each_listening_node_once(
    node: Node,
) -> None:
    leader, follower, idle = node("a"), node("b"), node("c")
    for bus in (leader, follower, idle):
        await bus.start()
    commands: list[Command] = []
    leader.serve(commands.append)
    await leader.serving()
    heard, idle_heard = collect(follower), collect(idle)
    follower.subscribe(race_feed("K7QX"))
    follower.send(MOVE)
    await until(lambda: len(commands) == 1)
    assert commands == [MOVE]
    await asyncio.sleep(0.3)  # the subscription reaches Redis
    update = Deliver(ToFeed(race_feed("K7QX"), Audience.EVERYONE), b"\x81\xa1a\x01")
    leader.publish([update, update])
    await until(lambda: len(heard) == 2)
    await asyncio.sleep(0.2)
    assert heard == [update, update]  # one message of two events, once
    assert idle_heard == []  # follows nothing: gets nothing
    assert leader.published == 1


async def test_a_command_that_reaches_no_leader_is_sent_again_until_one_leads(
    node: Node,
) -> None:
    follower, late = node("b"), node("a")
    await follower.start()
    await late.start()
    follower.send(MOVE)
    await asyncio.sleep(0.5)  # nobody leads: kept, and published again every 0.2 s
    commands: list[Command] = []
    late.serve(commands.append)
    await until(lambda: commands == [MOVE])
    await asyncio.sleep(0.5)
    assert commands == [MOVE]  # once


async def test_a_command_no_leader_takes_in_time_is_refused_where_it_was_sent(
    node: Node,
) -> None:
    follower = node("b", failover_wait=0.3)
    await follower.start()
    answered = collect(follower)
    follower.send(MOVE)
    follower.send(Attach(ANN, resumed=True, ticket=4))
    await until(lambda: len(answered) == 2)
    refusal, done = answered
    assert isinstance(refusal, Refuse) and refusal.code is ErrorCode.UNAVAILABLE
    assert (refusal.in_reply_to, refusal.reply_to) == ("place", 3)
    assert done == Done("p-1", 4)


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
