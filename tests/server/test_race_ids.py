"""A lone server never gives a new race the id of a stored race, even one it has forgotten
(finished before a restart, so no longer in memory): on SQLite and on PostgreSQL."""

from __future__ import annotations

import dataclasses
from collections.abc import Container
from pathlib import Path

import pytest

from protocol import CreateRace, RaceFinished, RaceOptions, RaceSnapshot, RaceState, Resign
from server.config import ServerConfig
from server.lobby import RaceIdSource, new_race_id
from tests.conftest import fast_config, start_live_server
from tests.server.wire_client import WireClient

#: A private race of one racer that starts as soon as it is made.
SOLO = RaceOptions(max_racers=1, min_racers=1, countdown=0, public=False, time_limit=600)

STORED = "AAAAAAAA"
NEXT = "BBBBBBBB"


def drawing_first(*forced: str) -> RaceIdSource:
    """An id source that draws ``forced`` first, in order, then random ids (as the
    server's own does, never one of the ids it is given)."""
    left = list(forced)

    def draw(taken: Container[str]) -> str:
        while left:
            race_id = left.pop(0)
            if race_id not in taken:
                return race_id
        return new_race_id(taken)

    return draw


@pytest.fixture(params=["sqlite", "postgresql"])
def store_config(request: pytest.FixtureRequest, tmp_path: Path) -> ServerConfig:
    """A test server's config on its journal file, or on a PostgreSQL database."""
    config = fast_config(tmp_path / "foursquare.db")
    if request.param == "sqlite":
        return config
    url: str = request.getfixturevalue("postgres_url")
    return dataclasses.replace(config, db=url)


async def race_alone_and_resign(url: str, name: str) -> RaceFinished:
    """``name`` makes a private race of one, which starts at once, and resigns it."""
    racer = await WireClient.connect(url, name)
    await racer.send(CreateRace(options=SOLO, id=racer.next_id()))
    snapshot = await racer.expect(RaceSnapshot)
    while snapshot.state is not RaceState.RUNNING:
        snapshot = await racer.expect(RaceSnapshot)
    await racer.send(Resign(race=snapshot.race, id=racer.next_id()))
    finished = await racer.expect(RaceFinished)
    await racer.close()
    return finished


async def test_a_new_race_never_takes_the_id_of_a_stored_forgotten_race(
    store_config: ServerConfig,
) -> None:
    first = dataclasses.replace(store_config, race_ids=drawing_first(STORED))
    async with start_live_server(first) as live:
        stored = await race_alone_and_resign(live.url, "ann")
        assert stored.race == STORED

    # Restarted, the server holds no finished race in memory; it draws the stored id
    # first all the same, and must pass it over.
    second = dataclasses.replace(store_config, race_ids=drawing_first(STORED, NEXT))
    async with start_live_server(second) as live:
        assert live.server is not None and STORED not in live.server.race_tier.hosts
        bob = await race_alone_and_resign(live.url, "bob")
        assert bob.race == NEXT
        assert not live.server.failed
        results = await live.server.journal.read_results([STORED, NEXT])
        assert [r.name for r in results[STORED].racers] == ["ann"]
        assert [r.name for r in results[NEXT].racers] == ["bob"]
