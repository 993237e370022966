"""A dead node's races taken over when its leases lapse: every one of them by one node, in
one statement, at a look timed for their expiry.

The node that dies here is the test's own: the real PostgreSQL store, used as a node uses
it, leases more races than a node once took over in a turn (200), writes them as a node
writes a race someone made, renews their leases as a node does, then renews no more. The
two nodes that survive are real processes with long leases of their own, so that they
look for lapsed leases unprompted only every few seconds: a takeover at a look timed for
the dead node's expiry, which they read while it still renewed, is the behaviour tested.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import psycopg
import pytest

from protocol import JoinRace
from server.cluster import RENEWALS_PER_LEASE
from server.journal import CommandRecord, RaceOpened
from server.lobby import new_race_id
from server.postgres import PostgresStore
from server.race import Join, RaceOptions
from server.store import LeaseLost
from tests.cluster.harness import PATIENCE, Cluster, Racer, race_of, running_cluster
from tests.cluster.test_leases import events_of
from tests.server.known_games import WON_SEED

#: Races of the dead node: more than the 200 a node once took in a turn.
RACES = 250

#: The dead node's lease, and the surviving nodes' (long: they look every 5 s unprompted).
DEAD_TTL = 2.0
NODES_TTL = 20.0

#: A race made and waiting for its second racer (private: it stays where it runs).
WAITING = RaceOptions(min_racers=2, max_racers=2, public=False, countdown=1)


def races_in(line: dict[str, object]) -> list[str]:
    """The races a ``races_taken_over`` line names."""
    races = line["races"]
    assert isinstance(races, list)
    return [str(race) for race in races]


async def taken_over(cluster: Cluster, count: int) -> list[tuple[str, dict[str, object]]]:
    """Every node's ``races_taken_over`` lines (with the node), once they hold ``count``
    races in all."""
    deadline = time.monotonic() + PATIENCE
    while True:
        lines = [(name, line) for name in cluster.nodes
                 for line in events_of(cluster, name, "races_taken_over")]
        if sum(len(races_in(line)) for _, line in lines) >= count:
            return lines
        assert time.monotonic() < deadline, f"not all taken over: {lines}"
        await asyncio.sleep(0.1)


async def test_every_lapsed_race_is_taken_over_by_one_node_at_once_at_the_lapse(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix, count=2,
                         lease_ttl=NODES_TTL) as cluster:
        await cluster.wait_for_leader()
        dead = await PostgresStore.open(cluster.db, lease_everything=False)
        try:
            race_ids: list[str] = []
            while len(race_ids) < RACES:
                race_ids.append(new_race_id(set(race_ids)))
            leases = await dead.lease_fresh(race_ids, "dead", DEAD_TTL)
            now = time.time()
            await dead.write(*(record for race_id in race_ids for record in (
                RaceOpened(race_id, WON_SEED, WAITING, None, now),
                CommandRecord(race_id, Join(f"p-{race_id}", "gone", True), now),
            )))
            # Alive for longer than the survivors' period between looks: each has read
            # when these leases expire, and looks again then.
            loop = asyncio.get_running_loop()
            alive_until = loop.time() + NODES_TTL / RENEWALS_PER_LEASE + 1
            while loop.time() < alive_until:
                leases = await dead.renew_leases(leases, DEAD_TTL)
                assert len(leases) == RACES
                await asyncio.sleep(DEAD_TTL / RENEWALS_PER_LEASE)

            # Dead (renews no more): one node takes every race, in one takeover.
            [(taker, line)] = await taken_over(cluster, RACES)
            assert sorted(races_in(line)) == sorted(race_ids)
            assert line["looked"] == "at_expiry"
            with psycopg.connect(cluster.db, autocommit=True) as connection:
                held = connection.execute(
                    "SELECT DISTINCT owner, epoch FROM leases WHERE resource_id = ANY(%s)",
                    (race_ids,),
                ).fetchall()
            assert held == [(taker, 2)]  # each at the epoch after the dead node's

            # What the dead node still writes is refused whole ...
            with pytest.raises(LeaseLost):
                await dead.write(CommandRecord(race_ids[0], Join("late", "late", True), now))
            # ... and the race runs on its new owner: a racer on the other node joins it.
            other = next(name for name in cluster.nodes if name != taker)
            joiner = Racer(cluster.addresses(other), "joiner", 0.25, JoinRace(race=race_ids[0]))
            joining = asyncio.create_task(joiner.run())
            try:
                assert await race_of([joiner]) == race_ids[0]
                assert not joiner.errors()
            finally:
                joining.cancel()
                await asyncio.gather(joining, return_exceptions=True)
        finally:
            await dead.aclose()
