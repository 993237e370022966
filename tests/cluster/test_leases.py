"""Races spread over the nodes of a cluster, each run by the holder of its own lease.

Private races are made on the node where they are asked for. Two of them, made on two
different nodes, are played to the end; one's owner is killed (or stopped past its
lease) mid-race: that race alone moves to another node, the other race's racers never
notice, and the journal holds every acknowledged move once (:func:`check_result`).
"""

from __future__ import annotations

import asyncio
import signal
from dataclasses import dataclass
from pathlib import Path

from protocol import CreateRace, JoinRace, RaceOptions
from tests.cluster.harness import (
    PATIENCE,
    Cluster,
    Racer,
    check_result,
    moves_made,
    race_of,
    running_cluster,
)

#: A race for two, started as soon as both are ready, listed nowhere (joined by its code).
PRIVATE = RaceOptions(max_racers=2, min_racers=2, public=False, countdown=1)


@dataclass
class PrivateRace:
    """A race made by a racer on one node and joined by one on another."""

    maker: Racer
    joiner: Racer
    playing: asyncio.Task[None]
    race: str

    @property
    def racers(self) -> list[Racer]:
        """Both racers."""
        return [self.maker, self.joiner]


async def private_race(cluster: Cluster, maker_node: str, joiner_node: str) -> PrivateRace:
    """A private race made on ``maker_node`` and joined from ``joiner_node``, under way."""
    maker = Racer(cluster.addresses(maker_node), f"m-{maker_node}", 0.25,
                  CreateRace(options=PRIVATE))
    making = asyncio.create_task(maker.run())
    race = await race_of([maker])
    joiner = Racer(cluster.addresses(joiner_node), f"j-{joiner_node}", 0.25,
                   JoinRace(race=race))
    joining = asyncio.create_task(joiner.run())

    async def both() -> None:
        async with asyncio.timeout(PATIENCE * 2):
            results = await asyncio.gather(making, joining)
        for result in results:
            assert result.standing is not None, result.describe()

    return PrivateRace(maker, joiner, asyncio.create_task(both()), race)


async def two_races(cluster: Cluster) -> tuple[PrivateRace, PrivateRace]:
    """Race A made on n2 (joined from n1), race B made on n3 (joined from n1): no racer
    of B is on n2. Each is run by the node it was made on."""
    await cluster.wait_for_leader()
    a = await private_race(cluster, "n2", "n1")
    b = await private_race(cluster, "n3", "n1")
    for game in (a, b):
        await moves_made(game.maker, 2)
        await moves_made(game.joiner, 2)
    assert cluster.owner(a.race) == "n2"
    assert cluster.owner(b.race) == "n3"
    return a, b


def events_of(cluster: Cluster, name: str, event: str) -> list[dict[str, object]]:
    """Node ``name``'s log lines of ``event``."""
    return [line for line in cluster.log(name) if line.get("event") == event]


async def test_races_run_by_different_nodes_are_both_played_to_the_end(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        a, b = await two_races(cluster)
        await asyncio.gather(a.playing, b.playing)
        for game in (a, b):
            check_result(cluster.db, await race_of(game.racers), game.racers, tmp_path)
            assert all(racer.welcomes() == 1 for racer in game.racers)
        # Each node opened the race made on it, and no other.
        assert [line["race"] for line in events_of(cluster, "n2", "race_open")] == [a.race]
        assert [line["race"] for line in events_of(cluster, "n3", "race_open")] == [b.race]


async def test_an_owner_killed_moves_only_its_race_and_loses_no_acknowledged_move(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        a, b = await two_races(cluster)
        cluster.nodes["n2"].kill()
        await asyncio.gather(a.playing, b.playing)
        for game in (a, b):
            check_result(cluster.db, game.race, game.racers, tmp_path)
        assert a.maker.welcomes() >= 2  # its node died: it came back through another
        assert all(racer.welcomes() == 1 for racer in b.racers)  # B's never noticed
        assert not [e for racer in b.racers for e in racer.errors()]
        # Race A alone was taken over, by one of the nodes left; B stayed on n3.
        taken = [(name, line["races"]) for name in ("n1", "n3")
                 for line in events_of(cluster, name, "races_taken_over")]
        assert [races for _, races in taken] == [[a.race]], taken
        assert not events_of(cluster, "n3", "races_lost")


async def test_an_owner_stopped_past_its_lease_writes_nothing_of_its_race_when_it_wakes(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        a, b = await two_races(cluster)
        stopped = cluster.nodes["n2"].process
        stopped.send_signal(signal.SIGSTOP)
        try:
            deadline = asyncio.get_running_loop().time() + PATIENCE
            while cluster.owner(a.race) in (None, "n2"):
                assert asyncio.get_running_loop().time() < deadline, "nobody took A over"
                await asyncio.sleep(0.1)
            # The joiner, on n1, races on under the new owner while n2 sleeps.
            await moves_made(a.joiner, len(a.joiner.acknowledged()) + 2)
        finally:
            stopped.send_signal(signal.SIGCONT)
        await asyncio.gather(a.playing, b.playing)
        for game in (a, b):
            check_result(cluster.db, game.race, game.racers, tmp_path)
        assert all(racer.welcomes() == 1 for racer in b.racers)
        # On waking, n2 found A's lease taken and dropped the race (whatever it still
        # tried to write was refused whole: check_result found each move stored once).
        lost = events_of(cluster, "n2", "races_lost")
        assert any(a.race in line["races"] for line in lost)  # type: ignore[operator]
