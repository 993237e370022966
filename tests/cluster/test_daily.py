"""The daily deal on a cluster: node processes on one PostgreSQL database and one Redis.
A player races the day's deal through one node; the store's key refuses its second
attempt on another node, and again after the leader is killed and another node leads."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from protocol import Error, ErrorCode, RaceSnapshot
from protocol.daily import Daily, DailyRace
from tests.cluster.harness import PATIENCE, running_cluster
from tests.players.test_daily import ask_daily, race_to_the_end
from tests.players.test_players import claimed_key, hello
from tests.server.wire_client import WireClient

#: Seconds between two moves: within a node's rate limit (20 a second).
PACE = 0.06


async def daily_race(client: WireClient) -> RaceSnapshot | Error:
    """Ask for the daily; while a failover is under way (``unavailable``), ask again."""
    deadline = time.monotonic() + PATIENCE
    while True:
        request = client.next_id()
        await client.send(DailyRace(id=request))
        answer = await client.receive()
        while not (isinstance(answer, RaceSnapshot | Error) and answer.reply_to == request):
            answer = await client.receive()
        if not (isinstance(answer, Error) and answer.code is ErrorCode.UNAVAILABLE):
            return answer
        assert time.monotonic() < deadline, "the cluster stayed unavailable"
        await asyncio.sleep(0.2)


async def test_one_daily_attempt_per_player_across_nodes_and_a_failover(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FOURSQUARE_DAILY_COUNTDOWN", "0.5")
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=2) as cluster:
        leader = await cluster.wait_for_leader()
        (follower,) = [name for name in cluster.nodes if name != leader]
        # Through the follower: the attempt is taken by the leader's race tier.
        ann, key = await claimed_key(cluster.nodes[follower].url, "Ann")
        room = await daily_race(ann)
        assert isinstance(room, RaceSnapshot)
        await race_to_the_end(ann, room.race, PACE)
        await ann.close()
        # Formed on the leader, the room ran, once started, on the node with no race.
        placed = [(line["race"], line["node"]) for line in cluster.logged(leader, "race_placed")]
        assert placed == [(room.race, follower)]
        # The same player on the leader: refused.
        on_leader, _ = await hello(cluster.nodes[leader].url, name="Ann", player_key=key.key)
        assert on_leader is not None
        refused = await daily_race(on_leader)
        assert isinstance(refused, Error) and refused.code is ErrorCode.DAILY_DONE
        await on_leader.close()
        # The leader killed: the new leader knows nothing of it but the store.
        cluster.nodes[leader].kill()
        assert await cluster.wait_for_leader(other_than=leader) == follower
        after, _ = await hello(cluster.nodes[follower].url, name="Ann", player_key=key.key)
        assert after is not None
        refused = await daily_race(after)
        assert isinstance(refused, Error) and refused.code is ErrorCode.DAILY_DONE
        board = await ask_daily(after)
        assert isinstance(board, Daily) and board.total == 1
        assert board.entries[0].player == key.player and board.you == board.entries[0]
        await after.close()
