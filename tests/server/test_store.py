"""The store's promises, on both implementations: a real SQLite file and a real PostgreSQL
database (one of the test's own). Written, committed, recovered; leases and the fences
that refuse a stale epoch's writes whole; PostgreSQL lost mid-write and back."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import psycopg
import pytest

from protocol import Role
from server.journal import (
    CommandRecord,
    Journal,
    PlayerRecord,
    PlayerSeen,
    RaceOpened,
    Record,
    Recovered,
    ResultRecord,
    StoppedWatching,
    StoredRace,
    Watching,
    rebuild,
)
from server.journal_file import JournalRefused
from server.postgres import PostgresStore
from server.race import Command, Join, Place, Race, RaceOptions, Resign, SetReady, Start
from server.seats import SeatKeeper, SeatLeft
from server.store import (
    EVERY_RESOURCE,
    LONE_SERVER,
    Health,
    LeaseHeld,
    LeaseLost,
    Store,
    StoreUnavailable,
    is_database_url,
    load_result,
    load_tournaments,
)
from server.tournament import (
    Ending,
    EntrantJoined,
    Finished,
    Opened,
    Tournament,
    TournamentSettings,
    hash_token,
)
from server.tournament_store import TournamentOpened, TournamentStore
from tests.server.known_games import WON_SEED, conformance_game
from tests.server.postgres_faults import allow_connections, database_name, terminate_backends

WON_MOVES = conformance_game(WON_SEED)[1]
OPTIONS = RaceOptions(min_racers=2, max_racers=3, countdown=0.0, progress_interval=0.0)

Opener = Callable[..., Coroutine[Any, Any, Store]]


@pytest.fixture(params=["sqlite", "postgresql"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a store is kept: an SQLite file, or a PostgreSQL database of the test's own."""
    if request.param == "sqlite":
        return str(tmp_path / "journal.db")
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
async def open_at(where: str) -> AsyncIterator[Opener]:
    """Opens stores at ``where`` (as many as a test wants: another server, another node),
    and closes them after the test."""
    opened: list[Store] = []

    async def open_store(*, lease_everything: bool = True) -> Store:
        store: Store
        if is_database_url(where):
            store = await PostgresStore.open(where, lease_everything=lease_everything)
        else:
            store = await asyncio.to_thread(Journal, where, lease_everything=lease_everything)
        opened.append(store)
        return store

    yield open_store
    for store in reversed(opened):
        await store.aclose()


def moves(race_id: str, first: int, count: int) -> list[CommandRecord]:
    return [
        CommandRecord(race_id, Place("p1", n, (0, 0)), float(n))
        for n in range(first, first + count)
    ]


def commands_of(recovered: Recovered, race_id: str) -> list[object]:
    (stored,) = [race for race in recovered.races if race.opened.race_id == race_id]
    return [record.command for record in stored.commands]


# ------------------------------------------------------------ write, recover


async def test_what_is_written_is_recovered_by_the_next_store(open_at: Opener) -> None:
    race = Race("R1", WON_SEED, OPTIONS, "CODE")
    store = await open_at()
    opened = RaceOpened("R1", WON_SEED, OPTIONS, "CODE", 1.0)
    records: list[CommandRecord] = []
    commands: list[Command] = [
        Join("ann", "ann ü", False), Join("bob", "bob", True), SetReady("ann", True),
        SetReady("bob", True), Start(),
    ]
    for now, command in enumerate(commands, start=2):
        race.apply(command, float(now))
        records.append(CommandRecord("R1", command, float(now)))
    for number, position in enumerate(WON_MOVES[:5], start=1):
        command = Place("ann", number, position)
        race.apply(command, 10.0 + number)
        records.append(CommandRecord("R1", command, 10.0 + number))
    await store.write(
        PlayerRecord("ann", b"h1", "ann ü", False, 0.5, last_seen=3.0),
        PlayerRecord("eve", b"h2", "eve", False, 0.0, Role.SPECTATOR),
        opened,
    )
    await asyncio.gather(*(store.write(record) for record in records))
    await store.write(
        PlayerSeen("eve", 7.0), *(Watching("eve", r) for r in ("R1", "R2", "R3")),
        StoppedWatching("eve", ("R2",)),
    )
    await store.aclose()

    recovered = await (await open_at()).recover()
    assert recovered.players == (
        PlayerRecord("ann", b"h1", "ann ü", False, 0.5, last_seen=3.0),
        PlayerRecord("eve", b"h2", "eve", False, 0.0, Role.SPECTATOR, last_seen=7.0),
    )
    assert recovered.races == (StoredRace(opened, tuple(records)),)
    assert recovered.watching == (Watching("eve", "R1"), Watching("eve", "R3"))
    assert rebuild(recovered.races[0]).snapshot(20.0) == race.snapshot(20.0)


async def test_what_one_loop_iteration_submits_is_one_transaction(open_at: Opener) -> None:
    store = await open_at()
    await store.write(RaceOpened("R1", "s", OPTIONS, None, 0.0))
    committed = store.batches_committed  # type: ignore[attr-defined]
    writes = [store.write(record) for record in moves("R1", 1, 400)]
    writes.append(store.write(RaceOpened("R2", "s", OPTIONS, None, 0.0)))
    writes += [store.write(record) for record in moves("R2", 1, 3)]
    await asyncio.gather(*writes)
    assert store.batches_committed == committed + 1  # type: ignore[attr-defined]
    recovered = await store.recover()
    assert commands_of(recovered, "R1") == [r.command for r in moves("R1", 1, 400)]
    assert commands_of(recovered, "R2") == [r.command for r in moves("R2", 1, 3)]


async def test_a_crowd_starting_to_watch_is_written_in_its_order_with_the_moves(
    open_at: Opener,
) -> None:
    """Spectators starting and stopping to watch, a session twice in one run, and moves
    between them, all in one transaction: what is recovered is what they did, in order."""
    store = await open_at()
    await store.write(RaceOpened("R1", "s", OPTIONS, None, 0.0))
    committed = store.batches_committed  # type: ignore[attr-defined]
    records: list[Record] = [
        *(Watching(f"s{n}", "R1") for n in range(50)),
        Watching("eve", "R1"), Watching("eve", "R2"), Watching("eve", "R1"),
        *moves("R1", 1, 3),
        StoppedWatching("eve", ("R1",)), StoppedWatching("s3", ("R1",)),
        Watching("eve", "R1"), *moves("R1", 4, 2), Watching("s3", "R2"),
    ]
    await asyncio.gather(*(store.write(record) for record in records))
    assert store.batches_committed == committed + 1  # type: ignore[attr-defined]
    recovered = await store.recover()
    assert recovered.watching == (
        *(Watching(f"s{n}", "R1") for n in range(50) if n != 3),
        Watching("eve", "R2"), Watching("eve", "R1"), Watching("s3", "R2"),
    )
    assert commands_of(recovered, "R1") == [r.command for r in moves("R1", 1, 5)]
    await store.aclose()


async def test_a_finished_race_leaves_its_result_not_its_commands(
    open_at: Opener, where: str
) -> None:
    race = Race("R1", WON_SEED, OPTIONS)
    store = await open_at()
    await store.write(RaceOpened("R1", WON_SEED, OPTIONS, None, 0.0))
    for command in (Join("ann", "ann", False), Join("bob", "bob", True), Start(),
                    Resign("bob"), Resign("ann")):
        race.apply(command, 1.0)
        await store.write(CommandRecord("R1", command, 1.0))
    assert race.result is not None
    await store.write(ResultRecord("R1", race.result, 2.0))
    assert (await store.recover()).races == ()
    assert await store.read_results(["R1", "R9"]) == {"R1": race.result}
    await store.aclose()
    # The command that prints it reads it, from the file or the database.
    assert await asyncio.to_thread(load_result, where, "R1") == race.result
    assert await asyncio.to_thread(load_result, where, "R9") is None


async def test_tournaments_are_written_with_races_and_read_back(
    open_at: Opener, where: str
) -> None:
    settings = TournamentSettings(name="cup", rounds=1, race_size=2)
    tournament = Tournament("T1", "CUP123", hash_token("host-token-0123456789"), settings, 0.0)
    store = await open_at()
    await store.write(TournamentOpened.of(tournament))
    joined = [EntrantJoined("e1", "ann", False), EntrantJoined("e2", "bob", True)]
    await store.write(*TournamentStore.events_of("T1", [Opened(), *joined], 2.0))
    (stored,) = await store.read_tournaments()
    assert stored.opened == TournamentOpened.of(tournament)
    assert stored.events == ((Opened(), 2.0), (joined[0], 2.0), (joined[1], 2.0))
    assert await store.read_tournaments("NOSUCH") == []
    await store.aclose()
    (restored,) = await asyncio.to_thread(load_tournaments, where, None, "CUP123")
    assert sorted(restored.entrants) == ["e1", "e2"]


async def test_a_tournament_keeps_its_creator_and_finished_ones_can_be_left_out(
    open_at: Opener, where: str
) -> None:
    settings = TournamentSettings(name="cup")
    token = hash_token("host-token-0123456789")
    store = await open_at()
    for number, creator in ((1, "p-ann"), (2, "p-bob"), (3, "p-ann")):
        tournament = Tournament(f"T{number}", f"CUP{number}AA", token, settings, float(number),
                                created_by=creator)
        await store.write(TournamentOpened.of(tournament))
    await store.write(*TournamentStore.events_of("T2", [Opened(), Ending(), Finished()], 9.0))
    every = await store.read_tournaments()
    assert [(t.opened.code, t.opened.created_by) for t in every] == [
        ("CUP1AA", "p-ann"), ("CUP2AA", "p-bob"), ("CUP3AA", "p-ann"),
    ]
    unfinished = await store.read_tournaments(include_finished=False)
    assert [t.opened.code for t in unfinished] == ["CUP1AA", "CUP3AA"]
    assert await store.read_tournaments("CUP2AA", include_finished=False) == []
    (finished,) = await store.read_tournaments("CUP2AA")
    assert finished.events[-1] == (Finished(), 9.0)
    await store.aclose()
    (restored,) = await asyncio.to_thread(load_tournaments, where, None, "CUP3AA")
    assert restored.created_by == "p-ann"


async def test_an_older_store_gains_the_creator_column_and_reads_until_then(
    open_at: Opener, where: str
) -> None:
    """A store written before creators were recorded: the commands read it as it is
    (creators unknown), and the next server brings it up to date."""
    settings = TournamentSettings(name="old cup")
    old = Tournament("T1", "OLD123", hash_token("host-token-0123456789"), settings, 1.0)
    await (await open_at()).aclose()
    older = (
        "ALTER TABLE tournaments DROP COLUMN created_by;"
        f" UPDATE schema_version SET version = {1 if is_database_url(where) else 8}"
    )
    insert = (
        "INSERT INTO tournaments (tournament_id, code, host_token_hash, settings, created_at,"
        " status) VALUES ('T1', 'OLD123', %s, %s, 1.0, 'created')"
    )
    values = (old.host_token_hash, json.dumps(settings.to_dict()))
    if is_database_url(where):
        async with await psycopg.AsyncConnection.connect(where, autocommit=True) as connection:
            for statement in older.split(";"):
                await connection.execute(statement)
            await connection.execute(insert, values)
    else:
        with contextlib.closing(sqlite3.connect(where, isolation_level=None)) as connection:
            connection.executescript(older)
            connection.execute(insert.replace("%s", "?"), values)
    (read,) = await asyncio.to_thread(load_tournaments, where, None, "OLD123")
    assert read.created_by is None and read.settings == settings
    store = await open_at()
    (stored,) = await store.read_tournaments()
    assert stored.opened == TournamentOpened.of(old)
    new = Tournament("T2", "NEW123", old.host_token_hash, settings, 2.0, created_by="p-ann")
    await store.write(TournamentOpened.of(new))
    assert [t.opened.created_by for t in await store.read_tournaments()] == [None, "p-ann"]


async def test_a_failed_transaction_leaves_nothing_and_the_store_goes_on(
    open_at: Opener,
) -> None:
    store = await open_at()
    await store.write(RaceOpened("R1", "s", OPTIONS, None, 0.0))
    with pytest.raises((sqlite3.IntegrityError, psycopg.errors.UniqueViolation)):
        await store.write(
            CommandRecord("R1", Join("p", "p", False), 1.0),
            RaceOpened("R1", "s", OPTIONS, None, 0.0),  # already there: the whole of it fails
        )
    await store.write(CommandRecord("R1", Join("q", "q", False), 2.0))
    assert commands_of(await store.recover(), "R1") == [Join("q", "q", False)]
    assert store.health is Health.AVAILABLE


# ------------------------------------------------------------ leases, fences


async def test_a_second_server_takes_the_store_over_and_the_first_is_refused_whole(
    open_at: Opener,
) -> None:
    first = await open_at()
    assert first.held_leases[EVERY_RESOURCE].owner == LONE_SERVER
    await first.write(RaceOpened("R1", "s", OPTIONS, None, 0.0), *moves("R1", 1, 2))
    second = await open_at()
    epochs = [
        store.held_leases[EVERY_RESOURCE].epoch for store in (first, second)
    ]
    assert epochs[1] == epochs[0] + 1
    # Moves alone (one statement), and a transaction of several kinds of record.
    with pytest.raises(LeaseLost) as refused:
        await first.write(*moves("R1", 3, 2))
    assert refused.value.resources == (EVERY_RESOURCE,)
    with pytest.raises(LeaseLost):
        await first.write(PlayerRecord("p9", b"h9", "zed", False, 0.0), *moves("R1", 3, 1))
    recovered = await second.recover()
    assert commands_of(recovered, "R1") == [r.command for r in moves("R1", 1, 2)]
    assert recovered.players == ()
    await second.write(*moves("R1", 3, 1))  # the holder writes on
    assert commands_of(await second.recover(), "R1") == [r.command for r in moves("R1", 1, 3)]


@pytest.fixture
async def two_nodes(open_at: Opener) -> tuple[Store, Store]:
    """Two stores on the same database, as two nodes of a cluster: holding no lease
    until they take one."""
    return await open_at(lease_everything=False), await open_at(lease_everything=False)


async def test_a_node_taken_over_loses_only_that_race_and_its_mixed_writes_whole(
    two_nodes: tuple[Store, Store],
) -> None:
    node_a, node_b = two_nodes
    lease_1 = await node_a.acquire_lease("R1", "node-a", 30.0)
    await node_a.acquire_lease("R2", "node-a", 30.0)
    await node_a.write(RaceOpened("R1", "s", OPTIONS, None, 0.0),
                       RaceOpened("R2", "s", OPTIONS, None, 0.0))
    with pytest.raises(LeaseHeld):
        await node_b.acquire_lease("R1", "node-b", 30.0)  # held, not expired
    taken = await node_b.take_over_lease("R1", "node-b", 30.0)
    assert (taken.owner, taken.epoch) == ("node-b", lease_1.epoch + 1)
    with pytest.raises(LeaseLost) as refused:
        await node_a.write(*moves("R1", 1, 1), *moves("R2", 1, 1))
    assert refused.value.resources == ("R1",)
    assert "R1" not in node_a.held_leases
    await node_a.write(*moves("R2", 1, 1))  # its other race goes on
    with pytest.raises(LeaseLost):  # and it no longer writes the one it lost
        await node_a.write(*moves("R1", 1, 1))
    await node_b.write(*moves("R1", 1, 1))
    recovered = await node_b.recover()
    assert commands_of(recovered, "R1") == [moves("R1", 1, 1)[0].command]
    assert commands_of(recovered, "R2") == [moves("R2", 1, 1)[0].command]
    with pytest.raises(LeaseLost):
        await node_a.renew_lease(lease_1, 30.0)


async def test_a_lease_is_acquired_when_it_has_expired_or_was_released(
    two_nodes: tuple[Store, Store],
) -> None:
    node_a, node_b = two_nodes
    first = await node_a.acquire_lease("T1", "node-a", 3600.0)
    again = await node_a.acquire_lease("T1", "node-a", 3600.0)  # its own: a new epoch
    assert again.epoch == first.epoch + 1
    with pytest.raises(LeaseHeld) as held:
        await node_b.acquire_lease("T1", "node-b", 30.0)
    assert held.value.lease == await node_a.read_lease("T1") == again
    renewed = await node_a.renew_lease(again, 0.0)  # expires at once
    assert renewed.epoch == again.epoch
    taken = await node_b.acquire_lease("T1", "node-b", 60.0)
    assert (taken.owner, taken.epoch) == ("node-b", again.epoch + 1)
    assert taken.expires_at is not None and renewed.expires_at is not None
    assert taken.expires_at > renewed.expires_at
    await node_b.release_lease(taken)
    assert "T1" not in node_b.held_leases
    assert (await node_a.acquire_lease("T1", "node-a", 30.0)).epoch == taken.epoch + 1


async def test_a_write_for_a_race_whose_lease_is_not_held_is_refused(open_at: Opener) -> None:
    node = await open_at(lease_everything=False)
    with pytest.raises(LeaseLost):
        await node.write(RaceOpened("R1", "s", OPTIONS, None, 0.0))
    await node.write(PlayerRecord("p1", b"h", "ann", False, 0.0))  # a player's: no lease
    assert [p.player_id for p in (await node.recover()).players] == ["p1"]


# ------------------------------------------------------------ PostgreSQL only


async def test_fresh_leases_are_taken_in_one_statement_leaving_out_those_ever_taken(
    postgres_url: str,
) -> None:
    node_a = await PostgresStore.open(postgres_url, lease_everything=False)
    node_b = await PostgresStore.open(postgres_url, lease_everything=False)
    try:
        old = await node_b.acquire_lease("R2", "node-b", 0.0)  # expired, but taken once
        taken = await node_a.lease_fresh(["R1", "R2", "R3"], "node-a", 30.0)
        assert sorted(lease.resource_id for lease in taken) == ["R1", "R3"]
        assert {(lease.owner, lease.epoch) for lease in taken} == {("node-a", 1)}
        assert set(node_a.held_leases) == {"R1", "R3"}
        assert await node_a.read_lease("R2") == old
    finally:
        await node_a.aclose()
        await node_b.aclose()


async def test_leases_are_renewed_in_one_statement_and_one_taken_over_is_let_go(
    postgres_url: str,
) -> None:
    node_a = await PostgresStore.open(postgres_url, lease_everything=False)
    node_b = await PostgresStore.open(postgres_url, lease_everything=False)
    try:
        leases = [await node_a.acquire_lease(r, "node-a", 1.0) for r in ("R2", "R1", "R3")]
        await node_b.take_over_lease("R3", "node-b", 30.0)
        renewed = {lease.resource_id: lease for lease in await node_a.renew_leases(leases, 60.0)}
        assert sorted(renewed) == ["R1", "R2"]
        for old in leases[:2]:
            new = renewed[old.resource_id]
            assert new.epoch == old.epoch
            assert new.expires_at is not None and old.expires_at is not None
            assert new.expires_at > old.expires_at + 30
        assert set(node_a.held_leases) == {"R1", "R2"}  # R3 is node-b's now
    finally:
        await node_a.aclose()
        await node_b.aclose()


async def test_lapsed_leases_are_taken_in_one_statement_and_two_takers_never_share_one(
    postgres_url: str,
) -> None:
    """A node's look for lapsed leases, as two surviving nodes make it at once: each
    lapsed lease is taken by one of them (one statement each, at the next epoch), a lease
    still held or kept for good is left alone, and the old holder's writes are refused."""
    dead = await PostgresStore.open(postgres_url, lease_everything=False)
    node_a = await PostgresStore.open(postgres_url, lease_everything=False)
    node_b = await PostgresStore.open(postgres_url, lease_everything=False)
    try:
        lapsing = [f"R{index:03}" for index in range(300)]
        old = {lease.resource_id: lease for lease in await dead.lease_fresh(lapsing, "dead", 0.5)}
        await dead.write(*(RaceOpened(race, "s", OPTIONS, None, 0.0) for race in lapsing))
        live = await dead.acquire_lease("LIVE", "dead", 60.0)
        kept = await dead.acquire_lease("KEPT", "dead", None)
        renewed = await dead.renew_leases(list(old.values()), 2.0)
        assert len({lease.expires_at for lease in renewed}) == 1  # renewed together, as one
        lapsed = await node_a.lapsed("node-a", "LOBBY")
        assert lapsed.races == [] and lapsed.next_in is not None and 0 < lapsed.next_in <= 2.0
        await asyncio.sleep(lapsed.next_in)
        lapsed = await node_a.lapsed("node-a", "LOBBY")
        assert sorted(lapsed.races) == lapsing
        wanted = [*lapsing, "LIVE", "KEPT"]
        taken_a, taken_b = await asyncio.gather(
            node_a.acquire_lapsed(wanted, "node-a", 30.0),
            node_b.acquire_lapsed(list(reversed(wanted)), "node-b", 30.0),
        )
        by_a = {lease.resource_id for lease in taken_a}
        by_b = {lease.resource_id for lease in taken_b}
        assert not by_a & by_b
        assert sorted(by_a | by_b) == lapsing
        for lease in [*taken_a, *taken_b]:
            assert lease.epoch == old[lease.resource_id].epoch + 1
        assert set(node_a.held_leases) == by_a and set(node_b.held_leases) == by_b
        assert await dead.read_lease("LIVE") == live and await dead.read_lease("KEPT") == kept
        with pytest.raises(LeaseLost):
            await dead.write(*moves("R000", 1, 1))
        assert (await node_a.lapsed("node-a", "LOBBY")).races == []
    finally:
        for store in (dead, node_a, node_b):
            await store.aclose()


async def test_players_asked_for_at_once_are_each_found_or_not(postgres_url: str) -> None:
    """A failover's resumes ask for many players at once (read together): each caller gets
    its own player, or ``None`` for a token nobody has, however many ask alike."""
    store = await PostgresStore.open(postgres_url)
    try:
        players = [PlayerRecord(f"p{n}", f"h{n}".encode(), f"n{n}", True, 1.0, last_seen=2.0)
                   for n in range(30)]
        await store.write(*players)
        asked = [*(p.token_hash for p in players), *(p.token_hash for p in players[:5]),
                 *(f"nobody{n}".encode() for n in range(10))]
        found = await asyncio.gather(*(store.read_player(digest) for digest in asked))
        assert found[:35] == [*players, *players[:5]]
        assert found[35:] == [None] * 10
        assert await store.read_player(players[7].token_hash) == players[7]  # and on its own
    finally:
        await store.aclose()


async def test_a_lease_taken_over_fails_only_its_races_writes_in_a_shared_transaction(
    postgres_url: str,
) -> None:
    """The group commit gives each race its own future: the transaction is refused for
    R1's stale epoch, then written again without R1, so R2's move (submitted in the same
    loop iteration) is stored, and only R1's future fails."""
    node_a = await PostgresStore.open(postgres_url, lease_everything=False)
    node_b = await PostgresStore.open(postgres_url, lease_everything=False)
    try:
        await node_a.acquire_lease("R1", "node-a", 30.0)
        await node_a.acquire_lease("R2", "node-a", 30.0)
        await node_a.write(RaceOpened("R1", "s", OPTIONS, None, 0.0),
                           RaceOpened("R2", "s", OPTIONS, None, 0.0))
        await node_b.take_over_lease("R1", "node-b", 30.0)
        lost, kept = node_a.submit(*moves("R1", 1, 1)), node_a.submit(*moves("R2", 1, 1))
        assert lost is not kept
        with pytest.raises(LeaseLost) as refused:
            await node_a.wait(lost)
        assert refused.value.resources == ("R1",)
        await node_a.wait(kept)
        recovered = await node_b.recover()
        assert commands_of(recovered, "R1") == []
        assert commands_of(recovered, "R2") == [moves("R2", 1, 1)[0].command]
    finally:
        await node_a.aclose()
        await node_b.aclose()



async def test_a_takeover_waits_for_the_transaction_that_holds_the_lease(
    postgres_url: str,
) -> None:
    """The fence locks the lease's row until its transaction ends: a takeover made
    meanwhile (another connection) waits, so a write is either in before the new epoch or
    refused after it, never stored under the new holder."""
    node_a = await PostgresStore.open(postgres_url, lease_everything=False)
    node_b = await PostgresStore.open(postgres_url, lease_everything=False)
    lease = await node_a.acquire_lease("R1", "node-a", 30.0)
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as writer:
        async with writer.transaction():
            await writer.execute("SELECT foursquare_fence(%s, %s)", (["R1"], [lease.epoch]))
            takeover = asyncio.create_task(node_b.take_over_lease("R1", "node-b", 30.0))
            async with await psycopg.AsyncConnection.connect(postgres_url) as watcher:
                while True:  # until the takeover is seen waiting for the row's lock
                    cursor = await watcher.execute(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                        " AND query LIKE 'INSERT INTO leases%%'"
                    )
                    row = await cursor.fetchone()
                    await watcher.rollback()
                    if row is not None and row[0] == 1:
                        break
                    assert not takeover.done()
                    await asyncio.sleep(0.01)
            assert not takeover.done()
        assert (await takeover).epoch == lease.epoch + 1
    await node_a.aclose()
    await node_b.aclose()


async def test_a_cut_connection_fails_the_write_and_the_store_connects_again(
    postgres_url: str,
) -> None:
    store = await PostgresStore.open(postgres_url)
    await store.write(RaceOpened("R1", "s", OPTIONS, None, 0.0), *moves("R1", 1, 2))
    assert await terminate_backends(postgres_url) >= 1
    waiting = [store.write(record) for record in moves("R1", 3, 3)]
    for outcome in await asyncio.gather(*waiting, return_exceptions=True):
        assert isinstance(outcome, StoreUnavailable), outcome
    await asyncio.wait_for(store.available(), 10)
    assert store.health is Health.AVAILABLE
    await store.write(*moves("R1", 3, 1))
    assert commands_of(await store.recover(), "R1") == [r.command for r in moves("R1", 1, 3)]
    await store.aclose()


async def test_while_the_database_is_down_writes_fail_at_once_until_it_is_back(
    postgres_url: str,
) -> None:
    store = await PostgresStore.open(postgres_url)
    await store.write(RaceOpened("R1", "s", OPTIONS, None, 0.0))
    await allow_connections(postgres_url, False)
    try:
        await terminate_backends(postgres_url)
        with pytest.raises(StoreUnavailable) as cut:
            await store.write(*moves("R1", 1, 1))  # the connection is found cut
        assert database_name(postgres_url) in str(cut.value)
        assert store.health is Health.UNAVAILABLE
        await asyncio.sleep(0.3)  # the store tries to connect again meanwhile, and fails
        for first in (1, 2):
            with pytest.raises(StoreUnavailable):
                await store.write(*moves("R1", first, 1))
        assert store.health is Health.UNAVAILABLE
    finally:
        await allow_connections(postgres_url, True)
    await asyncio.wait_for(store.available(), 10)
    await store.write(*moves("R1", 1, 1))
    assert commands_of(await store.recover(), "R1") == [moves("R1", 1, 1)[0].command]
    await store.aclose()


async def test_a_database_that_cannot_be_reached_is_refused_in_a_sentence(
    postgres_url: str, unused_tcp_port: int
) -> None:
    closed = f"postgresql://user:secret@127.0.0.1:{unused_tcp_port}/nowhere"
    with pytest.raises(JournalRefused) as refused:
        await PostgresStore.open(closed, timeout=2.0)
    sentence = str(refused.value)
    assert sentence.startswith(f"the journal postgresql://user:***@127.0.0.1:{unused_tcp_port}/"
                               "nowhere cannot be reached (")
    assert "secret" not in sentence and not refused.value.damaged
    # A command reading a database without the tables is refused, and creates none.
    with pytest.raises(JournalRefused, match="holds no foursquare tables"):
        await asyncio.to_thread(load_result, postgres_url, "R1")
    async with await psycopg.AsyncConnection.connect(postgres_url) as connection:
        cursor = await connection.execute("SELECT to_regclass('races')")
        assert await cursor.fetchone() == (None,)



async def test_a_seat_is_stored_with_its_race_under_its_lease_until_the_game_is_over(
    postgres_url: str,
) -> None:
    """A cluster's ``seats``: what a race's :class:`SeatKeeper` records, written in the
    race's transactions, is the race each session is tied to, for every node to read;
    a race finished ties nobody, and a node that lost the race writes none."""
    node_a = await PostgresStore.open(postgres_url, lease_everything=False)
    node_b = await PostgresStore.open(postgres_url, lease_everything=False)
    try:
        await node_a.acquire_lease("R1", "node-a", 30.0)
        race = Race("R1", WON_SEED, OPTIONS)
        keeper = SeatKeeper(race)
        await node_a.write(RaceOpened("R1", WON_SEED, OPTIONS, None, 0.0))

        async def apply(command: Command) -> None:
            race.apply(command, 1.0)
            await node_a.write(CommandRecord("R1", command, 1.0),
                               *keeper.changes(race, command))

        for command in (Join("ann", "ann", False), Join("bob", "bob", True), Start()):
            await apply(command)
        assert await node_b.seat_of("ann") == "R1" and await node_b.seat_of("eve") is None
        assert await node_b.held(["ann", "bob", "eve"]) == {"ann", "bob"}
        await apply(Resign("bob"))  # bob's game is over: free to race elsewhere
        assert await node_b.seat_of("bob") is None and await node_b.seat_of("ann") == "R1"
        # ... and still kept by the expiry until the race is over, as one server keeps it.
        assert await node_b.held(["bob"]) == {"bob"}
        await node_b.take_over_lease("R1", "node-b", 30.0)
        with pytest.raises(LeaseLost):  # the old owner's records are refused whole
            await node_a.write(SeatLeft("ann", "R1"))
        assert await node_b.seat_of("ann") == "R1"
        # Its new owner finishes it: the last seat goes in the transaction of the result.
        keeper = SeatKeeper(race)  # (rebuilt from the race, as a takeover does)
        race.apply(Resign("ann"), 2.0)
        assert race.result is not None
        await node_b.write(CommandRecord("R1", Resign("ann"), 2.0),
                           *keeper.changes(race, Resign("ann")),
                           ResultRecord("R1", race.result, 2.0))
        assert await node_a.held(["ann", "bob"]) == set()
    finally:
        await node_a.aclose()
        await node_b.aclose()


async def test_a_names_keys_are_held_all_or_none_and_freed_with_their_nodes_leases(
    postgres_url: str,
) -> None:
    """A cluster's ``names``: a session takes every look-alike key of its name or none; a
    key held for a session on a node that lives is refused to others, one held on a node
    whose leases lapsed is free, and of two sessions claiming a key at once one has it."""
    node_a = await PostgresStore.open(postgres_url, lease_everything=False)
    node_b = await PostgresStore.open(postgres_url, lease_everything=False)
    try:
        await node_a.acquire_lease("A1", "node-a", 60.0)
        await node_b.acquire_lease("B1", "node-b", 10.0)  # node-b dies: it lapses unrenewed
        assert await node_a.claim_names("p1", "node-a", {"ann", "anna"}, all_or_none=True)
        assert not await node_b.claim_names("p2", "node-b", {"ann", "x"}, all_or_none=True)
        assert await node_a.name_holders({"ann", "x"}) == {("p1", "node-a")}  # x not taken
        assert await node_b.claim_names("p1", "node-b", {"ann", "anna"}, all_or_none=True)
        assert await node_a.name_holders({"ann"}) == {("p1", "node-b")}  # resumed there
        assert not await node_a.claim_names("p3", "node-a", {"ann"}, all_or_none=False)
        async with asyncio.timeout(30):
            while set(await node_a.node_loads()) != {"node-a"}:
                await asyncio.sleep(0.1)  # until node-b's leases have lapsed: its
                # sessions hold nothing any more
        assert await node_a.claim_names("p3", "node-a", {"ann"}, all_or_none=True)
        await node_a.release_names("p3", "node-b")  # (another node's: nothing)
        assert await node_a.name_holders({"ann"}) == {("p3", "node-a")}
        await node_a.release_names("p3", "node-a")
        assert await node_a.name_holders({"ann"}) == set()
        claims = await asyncio.gather(*(
            store.claim_names(player, "node-a", {"bob"}, all_or_none=True)
            for store, player in ((node_a, "p4"), (node_b, "p5"))
        ))
        assert sorted(claims) == [False, True]
    finally:
        await node_a.aclose()
        await node_b.aclose()
