"""The store's side of placing a tournament's round on a node, on the machine's real
PostgreSQL: the races' leases are made for the chosen node in one statement fenced by the
tournament's lease, expire together, and are released and taken over together."""

from __future__ import annotations

import asyncio

import pytest

from server import race as core
from server.journal import RaceOpened
from server.postgres import PostgresStore
from server.store import Lease, LeaseLost, StoreError, StoreUnavailable

OPTIONS = core.RaceOptions(max_racers=2, min_racers=2, time_limit=60.0)
ROUND = ["T-R1-0", "T-R1-1"]


async def opened_round(node: PostgresStore, tournament: Lease) -> None:
    """The races of round 1 of tournament ``T``, opened under its lease."""
    for race_id in ROUND:
        node.cover(race_id, tournament)
    await node.write(*(RaceOpened(race_id, "s", OPTIONS, None, 0.0, "T") for race_id in ROUND))


async def test_a_round_is_placed_under_the_tournaments_lease_and_taken_whole(
    postgres_url: str,
) -> None:
    owner = await PostgresStore.open(postgres_url, lease_everything=False)
    chosen = await PostgresStore.open(postgres_url, lease_everything=False)
    try:
        tournament = await owner.acquire_lease("T", "owner", 30.0)
        await opened_round(owner, tournament)
        assert await owner.races_of(["T"]) == [(race, "T", False) for race in ROUND]
        await owner.place_races(ROUND, tournament, "chosen", 30.0)
        made = await owner.read_leases(ROUND)
        assert {(lease.owner, lease.epoch) for lease in made.values()} == {("chosen", 1)}
        assert len({lease.expires_at for lease in made.values()}) == 1  # one expiry
        assert await owner.races_of(["T"]) == [(race, "T", True) for race in ROUND]
        assert set(owner.held_leases) == {"T", *ROUND}  # (the cluster lets go of them)
        taken = await chosen.acquire_lapsed(ROUND, "chosen", 30.0)
        assert sorted(lease.resource_id for lease in taken) == ROUND
        assert {lease.epoch for lease in taken} == {2}
        # The same race ids are never placed twice: nothing of a second placing is made.
        with pytest.raises(StoreError) as again:
            await owner.place_races(ROUND, tournament, "owner", 30.0)
        assert not isinstance(again.value, LeaseLost | StoreUnavailable)
        assert {lease.owner for lease in (await owner.read_leases(ROUND)).values()} == {
            "chosen"}
    finally:
        await owner.aclose()
        await chosen.aclose()


async def test_a_node_that_lost_its_tournament_places_none_of_its_races(
    postgres_url: str,
) -> None:
    owner = await PostgresStore.open(postgres_url, lease_everything=False)
    successor = await PostgresStore.open(postgres_url, lease_everything=False)
    try:
        tournament = await owner.acquire_lease("T", "owner", 30.0)
        await opened_round(owner, tournament)
        await successor.take_over_lease("T", "successor", 30.0)
        with pytest.raises(LeaseLost) as refused:
            await owner.place_races(ROUND, tournament, "chosen", 30.0)
        assert refused.value.resources == ("T",)
        assert await owner.read_leases(ROUND) == {}
        # The tournament's new owner takes the races with it, as none was placed.
        assert await successor.races_of(["T"]) == [(race, "T", False) for race in ROUND]
    finally:
        await owner.aclose()
        await successor.aclose()


async def test_a_rounds_leases_released_together_lapse_together(postgres_url: str) -> None:
    owner = await PostgresStore.open(postgres_url, lease_everything=False)
    chosen = await PostgresStore.open(postgres_url, lease_everything=False)
    other = await PostgresStore.open(postgres_url, lease_everything=False)
    try:
        tournament = await owner.acquire_lease("T", "owner", 30.0)
        await opened_round(owner, tournament)
        await owner.place_races(ROUND, tournament, "chosen", 30.0)
        taken = await chosen.acquire_lapsed(ROUND, "chosen", 30.0)
        assert (await other.lapsed("other", "lobby")).races == []
        await chosen.release_leases(taken)
        assert not set(chosen.held_leases) & set(ROUND)
        released = await other.read_leases(ROUND)
        assert len({lease.expires_at for lease in released.values()}) == 1
        await asyncio.sleep(0.01)
        assert sorted((await other.lapsed("other", "lobby")).races) == ROUND
        again = await other.acquire_lapsed(ROUND, "other", 30.0)
        assert sorted(lease.resource_id for lease in again) == ROUND
    finally:
        await owner.aclose()
        await chosen.aclose()
        await other.aclose()
