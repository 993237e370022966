"""A cluster end to end: three node processes on one PostgreSQL database and one Redis.

Each test plays a real race with the real client's bots, spread over the nodes, does
something to the cluster mid-race (nothing, SIGKILL of the node running the race, SIGSTOP
of it past its leases, a Redis restart, the database unavailable), lets the race finish,
and checks what the racers saw against what the journal holds (:func:`check_result`).
The leader forms the quick race and, once it starts, hands it to the node running the
fewest races (:mod:`tests.cluster.test_placement`): here the first node other than the
leader, where the second racer is.
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass
from pathlib import Path

from protocol import ErrorCode
from tests.cluster.harness import (
    PATIENCE,
    Cluster,
    Racer,
    Spectator,
    ThrowawayRedis,
    check_result,
    moves_made,
    race_of,
    running_cluster,
)
from tests.server.postgres_faults import allow_connections, terminate_backends


@dataclass
class Game:
    """Two racers in one quick race and a spectator of it, on nodes of a cluster."""

    db: str
    racers: list[Racer]
    spectator: Spectator
    done: asyncio.Task[None]
    """Runs until all three have seen the race's end."""

    async def finish(self, tmp_path: Path) -> str:
        """Wait for the end; check it (:func:`check_result`); the race's id."""
        await self.done
        race = await race_of(self.racers)
        check_result(self.db, race, self.racers, tmp_path)
        assert self.spectator.seen[-1] == self.racers[0].tracker.finished
        return race


async def play(cluster: Cluster, on_leader: bool) -> tuple[str, list[str], Game]:
    """The leader, the other nodes, and a game on them: one racer on the leader
    (``on_leader``) or none, the other racer(s) and the spectator on the other nodes
    (without a racer on the leader, the spectator watches there)."""
    leader = await cluster.wait_for_leader()
    others = [name for name in cluster.nodes if name != leader]
    racer_nodes, watcher = (
        ((leader, others[0]), others[1]) if on_leader else ((others[0], others[1]), leader)
    )
    racers = [Racer(cluster.addresses(node), f"r-{node}", 0.2) for node in racer_nodes]
    playing = [asyncio.create_task(racer.run()) for racer in racers]
    spectator = Spectator(cluster.addresses(watcher), await race_of(racers))

    async def everyone() -> None:
        async with asyncio.timeout(PATIENCE * 2):
            results, _ = await asyncio.gather(asyncio.gather(*playing), spectator.run())
        for result in results:
            assert result.standing is not None, result.describe()

    return leader, others, Game(cluster.db, racers, spectator, asyncio.create_task(everyone()))


async def test_a_race_across_three_nodes_is_played_to_the_end(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        _, _, game = await play(cluster, on_leader=False)
        await game.finish(tmp_path)
        assert all(racer.welcomes() == 1 for racer in game.racers)  # nobody reconnected


async def test_the_owner_killed_mid_race_the_race_finishes_on_another_node(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        leader, others, game = await play(cluster, on_leader=True)
        await moves_made(game.racers[1], 3)
        race = await race_of(game.racers)
        # The leader placed the race as it started on the least loaded node (which one rests
        # on the load map it last read): whichever runs it is killed.
        owner = await cluster.wait_for_owner(race)
        cluster.nodes[owner].kill()
        successor = await cluster.wait_for_owner(race, other_than=owner)
        await game.finish(tmp_path)
        assert successor != owner
        for racer, node in zip(game.racers, (leader, others[0]), strict=True):
            # A racer on the killed node came back through another; the other stayed.
            assert (racer.welcomes() >= 2) == (node == owner), (node, racer.welcomes())
        # One other node took the lease of the race and rebuilt it.
        assert cluster.recovered(set(cluster.nodes) - {owner}) == [race]


async def test_an_owner_stopped_past_its_lease_writes_nothing_when_it_wakes(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        _, others, game = await play(cluster, on_leader=True)
        racers = game.racers
        await moves_made(racers[0], 3)
        race = await race_of(racers)
        owner = cluster.owner(race)
        assert owner == others[0]
        stopped = cluster.nodes[owner].process
        stopped.send_signal(signal.SIGSTOP)
        try:
            await cluster.wait_for_owner(race, other_than=owner)
            await moves_made(racers[0], len(racers[0].acknowledged()) + 2)
        finally:
            stopped.send_signal(signal.SIGCONT)
        await game.finish(tmp_path)
        # The old owner found the race's lease taken and dropped the race; every write it
        # tried after waking was refused whole, none of them is stored (check_result).
        lost = [line["races"] for line in cluster.logged(owner, "races_lost")]
        assert any(race in races for races in lost if isinstance(races, list))


async def test_redis_restarted_mid_race_the_nodes_reconnect_and_the_race_goes_on(
    tmp_path: Path, postgres_url: str, cluster_prefix: str
) -> None:
    redis = ThrowawayRedis()
    redis.start()
    try:
        with running_cluster(tmp_path, postgres_url, redis.url, cluster_prefix) as cluster:
            # Both racers away from the leader: every move of theirs crosses Redis.
            _, _, game = await play(cluster, on_leader=False)
            await moves_made(game.racers[0], 3)
            redis.kill()
            await asyncio.sleep(1.0)
            redis.start()
            await game.finish(tmp_path)
            for name in cluster.nodes:
                events = [line.get("event") for line in cluster.log(name)]
                assert "bus_unavailable" in events and "bus_available" in events, name
    finally:
        redis.kill()


async def test_postgresql_unavailable_mid_race_moves_are_refused_until_it_is_back(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        leader, _, game = await play(cluster, on_leader=True)
        racers = game.racers
        await moves_made(racers[0], 3)
        await allow_connections(postgres_url, False)
        await terminate_backends(postgres_url)
        try:
            deadline = asyncio.get_running_loop().time() + PATIENCE
            while not any(e.code is ErrorCode.UNAVAILABLE for r in racers for e in r.errors()):
                assert asyncio.get_running_loop().time() < deadline, "no move was refused"
                await asyncio.sleep(0.05)
            acknowledged = [len(racer.acknowledged()) for racer in racers]
            await asyncio.sleep(1.0)
            # Nothing acknowledged while the store is down.
            assert [len(racer.acknowledged()) for racer in racers] == acknowledged
        finally:
            await allow_connections(postgres_url, True)
        await game.finish(tmp_path)
        events = [line.get("event") for line in cluster.log(leader)]
        assert "node_suspended" in events
