"""Quick races placed across a cluster: the leader's lobby forms each, and hands it, once
started, to the node running the fewest races, which takes its lease and runs it.

Three real node processes on one PostgreSQL database and one Redis; racers are the real
client's bots. Each test checks where the race ran (the store's leases, the nodes' logs),
what the racers saw against what the journal holds (:func:`check_result`, which runs
``foursquare result`` and ``foursquare verify``), and that the race had one owner at a
time: when the chosen node is stopped before it takes the race, and when it is killed
after.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from server.lobby import least_loaded
from tests.cluster.harness import (
    PATIENCE,
    Cluster,
    Racer,
    check_result,
    moves_made,
    race_of,
    running_cluster,
)

#: Options of the nodes for a quick race that counts down long enough for all its racers
#: to join (the tests' servers count down 0.2 s), or for a node to be stopped meanwhile.
SLOW_COUNTDOWN = ("--quick-countdown", "3")

#: A lease long enough that a node stopped while a race counts down still looks alive
#: to the leader when the race starts (the stopped node is then the one chosen).
SLOW_LEASE_TTL = 8.0


def racers_on(cluster: Cluster, nodes: Sequence[str], tag: str, pace: float) -> list[Racer]:
    """One racer connected to each of ``nodes`` (named ``tag-NODE``), asking for a quick
    race."""
    return [Racer(cluster.addresses(node), f"{tag}-{node}", pace) for node in nodes]


async def played(racers: Sequence[Racer]) -> None:
    """Run ``racers`` to the end of their race; each must have finished it."""
    async with asyncio.timeout(PATIENCE * 2):
        results = await asyncio.gather(*(racer.run() for racer in racers))
    for result in results:
        assert result.standing is not None, result.describe()


def placed(cluster: Cluster, leader: str) -> list[tuple[object, object]]:
    """The races the leader handed over, each with the node it chose."""
    return [(line["race"], line["node"]) for line in cluster.logged(leader, "race_placed")]


@dataclass
class Placing:
    """Two racers in a quick race, on the leader and on the node the race will not be
    placed on; ``chosen`` is the one it will be (while no node runs a race)."""

    leader: str
    chosen: str
    third: str
    racers: list[Racer]
    race: str
    playing: asyncio.Task[None]


async def placing(cluster: Cluster) -> Placing:
    """Two racers asking for a quick race away from the node it will be placed on."""
    leader = await cluster.wait_for_leader()
    await cluster.wait_for_every_node_live()
    chosen = least_loaded(dict.fromkeys(cluster.nodes, 0), here=leader)
    (third,) = set(cluster.nodes) - {leader, chosen}
    racers = racers_on(cluster, [leader, third], "r", pace=0.2)
    playing = asyncio.create_task(played(racers))
    return Placing(leader, chosen, third, racers, await race_of(racers), playing)


async def test_started_quick_races_go_to_the_least_loaded_nodes_and_are_played_there(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(
        tmp_path, postgres_url, redis_url, cluster_prefix, extra=SLOW_COUNTDOWN
    ) as cluster:
        leader = await cluster.wait_for_leader()
        await cluster.wait_for_every_node_live()
        # One racer on each node, in one quick race formed by the leader's lobby.
        first = racers_on(cluster, list(cluster.nodes), "a", pace=0.4)
        playing = asyncio.create_task(played(first))
        race = await race_of(first)
        await moves_made(first[0], 1)  # started, handed over, and moving
        owner = await cluster.wait_for_owner(race)
        assert owner != leader
        # Another quick race, formed while the first runs, goes to the node with none.
        second = racers_on(cluster, [leader, owner], "b", pace=0.2)
        playing_too = asyncio.create_task(played(second))
        other = await race_of(second)
        assert other != race
        await moves_made(second[0], 1)
        other_owner = await cluster.wait_for_owner(other)
        assert {owner, other_owner} == set(cluster.nodes) - {leader}
        await asyncio.gather(playing, playing_too)
        assert placed(cluster, leader) == [(race, owner), (other, other_owner)]
        check_result(postgres_url, race, first, tmp_path)
        check_result(postgres_url, other, second, tmp_path)
        # The hand-over cost nobody a reconnection, and each owner took its race up once.
        assert all(racer.welcomes() == 1 for racer in [*first, *second])
        for node, taken in ((owner, race), (other_owner, other)):
            assert [line["races"] for line in cluster.logged(node, "races_taken_over")] == [
                [taken]
            ]


async def test_a_race_placed_on_a_stopped_node_is_taken_up_by_another_and_never_by_it(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(
        tmp_path, postgres_url, redis_url, cluster_prefix, lease_ttl=SLOW_LEASE_TTL,
        extra=SLOW_COUNTDOWN,
    ) as cluster:
        game = await placing(cluster)
        leader, chosen, third, racers, race = (
            game.leader, game.chosen, game.third, game.racers, game.race)
        # Stopped during the countdown: its leases are still good when the race starts,
        # so the leader chooses it, and it cannot answer.
        stopped = cluster.nodes[chosen].process
        stopped.send_signal(signal.SIGSTOP)
        try:
            await moves_made(racers[0], 3)
            owner = await cluster.wait_for_owner(race)
        finally:
            stopped.send_signal(signal.SIGCONT)
        assert owner in (leader, third)
        await game.playing
        assert placed(cluster, leader) == [(race, chosen)]
        check_result(postgres_url, race, racers, tmp_path)
        # Woken, the chosen node found the race's lease taken: it never ran the race.
        assert cluster.recovered([chosen]) == []
        assert cluster.recovered([leader, third]) == [race]


async def test_a_placed_race_whose_node_is_killed_finishes_on_another(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        game = await placing(cluster)
        chosen, racers, race = game.chosen, game.racers, game.race
        await moves_made(racers[0], 3)
        assert cluster.owner(race) == chosen
        cluster.nodes[chosen].kill()
        successor = await cluster.wait_for_owner(race, other_than=chosen)
        await moves_made(racers[0], len(racers[0].acknowledged()) + 2)
        await game.playing
        assert successor in (game.leader, game.third)
        check_result(postgres_url, race, racers, tmp_path)
        assert all(racer.welcomes() == 1 for racer in racers)  # neither was on it
        # Placed on the chosen node (rebuilt there), then taken over by one other.
        assert cluster.recovered([chosen]) == [race]
        assert cluster.recovered([game.leader, game.third]) == [race]
