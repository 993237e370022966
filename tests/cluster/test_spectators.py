"""A race's updates cross Redis once, whatever the number of its spectators: two real
node processes, a race run on one, its spectators on the other, and a subscriber of the
test's own on the race's Redis channel."""

from __future__ import annotations

import asyncio
from pathlib import Path

import redis.asyncio as redis

from protocol import Progress, RaceSnapshot, ServerMessage, decode_server
from server.bus import Deliver
from server.bus_codec import unpack
from tests.cluster.harness import (
    PATIENCE,
    Racer,
    Spectator,
    race_of,
    running_cluster,
)

#: Spectators of the race, all on the node that does not run it.
SPECTATORS = 6


def feed_progress(seen: list[ServerMessage]) -> list[Progress]:
    """The progress updates a spectator got from the race's feed: all but the one of its
    first view, which follows its snapshot and is its own."""
    updates = []
    for before, message in zip([None, *seen], seen, strict=False):
        if isinstance(message, Progress) and not isinstance(before, RaceSnapshot):
            updates.append(message)
    return updates


async def channel_progress(
    client: redis.Redis, channel: str, into: list[Progress], subscribed: asyncio.Event
) -> None:
    """Every progress update published on ``channel`` (a race's), as it comes."""
    async with client.pubsub(ignore_subscribe_messages=True) as pubsub:
        await pubsub.subscribe(channel)
        subscribed.set()
        while True:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            if message is None:
                continue
            _, _, body = message["data"].partition(b"\n")  # after the publisher's node id
            for event in unpack(body):
                if isinstance(event, Deliver):
                    decoded = decode_server(event.payload)
                    if isinstance(decoded, Progress):
                        into.append(decoded)


async def test_each_progress_update_is_published_once_whatever_the_spectators_of_a_node(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=2) as cluster:
        leader = await cluster.wait_for_leader()
        other = next(name for name in cluster.nodes if name != leader)
        # Both racers on the leader, which runs quick races: the race is run there.
        racers = [Racer(cluster.addresses(leader), f"r{seat}", 0.3) for seat in (1, 2)]
        playing = [asyncio.create_task(racer.run()) for racer in racers]
        race = await race_of(racers)
        assert cluster.owner(race) == leader
        published: list[Progress] = []
        client = redis.Redis.from_url(redis_url)
        subscribed = asyncio.Event()
        listening = asyncio.create_task(channel_progress(
            client, f"{cluster_prefix}:race:{race}", published, subscribed))
        await asyncio.wait_for(subscribed.wait(), PATIENCE)
        spectators = [Spectator(cluster.addresses(other), race) for _ in range(SPECTATORS)]
        watching = [asyncio.create_task(spectator.run()) for spectator in spectators]
        async with asyncio.timeout(PATIENCE * 2):
            await asyncio.gather(*playing, *watching)
        listening.cancel()
        await client.aclose()

    counted = [feed_progress(spectator.seen) for spectator in spectators]
    shown = {update for updates in counted for update in updates}
    assert shown, "no progress update reached the spectators"
    # Each update the spectators were shown was published on the race's channel, once:
    # not once per spectator, nor on each spectator's own channel.
    assert shown <= set(published)
    assert all(published.count(update) == 1 for update in shown)
    assert all(len(updates) == len(set(updates)) for updates in counted)
