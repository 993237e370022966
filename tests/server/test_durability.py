"""A server killed or stopped mid-race: nothing acknowledged is lost, racers go on."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from cli.main import main as foursquare
from engine import deal
from protocol import (
    Boards,
    CardToPlace,
    CloseCode,
    CreateRace,
    JoinRace,
    MovePlaced,
    Place,
    RaceFinished,
    RaceOptions,
    RaceSnapshot,
    RaceState,
    Resign,
)
from protocol.result import RaceResult, verify_result
from server.config import ServerConfig
from tests.conftest import LiveServer, fast_config, run_server_process, start_live_server
from tests.server.postgres_faults import terminate_backends
from tests.server.wire_client import WireClient

DUEL = RaceOptions(max_racers=2, min_racers=2, countdown=0, public=False)


async def open_duel(url: str) -> tuple[WireClient, WireClient, str]:
    ann = await WireClient.connect(url, "ann")
    bob = await WireClient.connect(url, "bob", bot=True)
    await ann.send(CreateRace(options=DUEL, id=ann.next_id()))
    race = (await ann.expect(RaceSnapshot)).race
    await bob.send(JoinRace(race=race, id=bob.next_id()))
    return ann, bob, race


async def play_first_targets(racer: WireClient, race: str, count: int) -> list[tuple[int, int]]:
    """Play ``count`` moves, each on the first legal target; return them once acknowledged."""
    played = []
    for _ in range(count):
        card = await racer.expect(CardToPlace)
        row, col = card.targets[0]
        await racer.send(Place(race=race, move=card.move, row=row, col=col, id=racer.next_id()))
        placed = await racer.expect(MovePlaced)
        assert placed.move == card.move
        played.append((row, col))
    return played


async def move_after_dropping_its_table(db: Path, racer: WireClient, race: str) -> None:
    """Drop the journal's table of commands behind the server's back, then send a move
    (which the journal then cannot write)."""
    with sqlite3.connect(db) as connection:
        connection.execute("DROP TABLE race_commands")
    connection.close()
    card = await racer.expect(CardToPlace)
    row, col = card.targets[0]
    await racer.send(Place(race=race, move=card.move, row=row, col=col, id=racer.next_id()))


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> str | None:
    """The server's store: ``None`` for its journal file, or a PostgreSQL database."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_url")
    return url


async def test_a_server_killed_mid_race_comes_back_with_every_acknowledged_move(
    tmp_path: Path, store_url: str | None
) -> None:
    db = tmp_path / "journal.db"
    with run_server_process(db, db=store_url) as first:
        ann, bob, race = await open_duel(first.url)
        ann_moves = await play_first_targets(ann, race, 5)
        bob_moves = await play_first_targets(bob, race, 2)
        first.kill()
    tokens = {ann.racer_id: ann.welcome.resume, bob.racer_id: bob.welcome.resume}

    with run_server_process(db, db=store_url) as second:
        back = {}
        for racer_id, token in tokens.items():
            client = await WireClient.connect(second.url, "again", resume=token)
            assert client.welcome.resumed and client.racer_id == racer_id
            back[racer_id] = client
        ann2, bob2 = back[ann.racer_id], back[bob.racer_id]
        snapshot = await ann2.expect(RaceSnapshot)
        assert snapshot.state is RaceState.RUNNING and snapshot.race == race
        assert {e.racer: e.cards_played for e in snapshot.progress} == {
            ann.racer_id: 5,
            bob.racer_id: 2,
        }
        own = await ann2.expect(Boards)
        assert own.boards[0].shown == 5
        assert (await bob2.expect(CardToPlace)).move == 3
        # The game goes on from where it was.
        ann_moves += await play_first_targets(ann2, race, 2)
        for client in (ann2, bob2):
            await client.send(Resign(race=race, id=client.next_id()))
        finished = await ann2.expect(RaceFinished)
        moves = {s.racer: list(s.moves) for s in finished.standings}
        assert moves == {ann.racer_id: ann_moves, bob.racer_id: bob_moves}
        assert verify_result(finished.to_result()).ok
        for client in (ann, bob, ann2, bob2):
            client.assert_nothing_undrawn(deal(finished.seed))
        for client in (ann, bob, ann2, bob2):
            await client.close()


async def test_sigterm_closes_connections_with_going_away_and_keeps_the_race(
    tmp_path: Path,
) -> None:
    db = tmp_path / "journal.db"
    with run_server_process(db) as server:
        ann, bob, race = await open_duel(server.url)
        await play_first_targets(ann, race, 3)
        status = await asyncio.to_thread(server.terminate)
        assert status == 0
        for client in (ann, bob):
            try:
                while True:
                    await client.receive()
            except ConnectionClosed:
                pass
            assert client.connection.close_code == CloseCode.GOING_AWAY
    with run_server_process(db) as again:
        back = await WireClient.connect(again.url, "ann", resume=ann.welcome.resume)
        snapshot = await back.expect(RaceSnapshot)
        assert {e.racer: e.cards_played for e in snapshot.progress}[ann.racer_id] == 3
        await back.close()


async def test_a_journal_that_cannot_write_stops_the_server_before_any_answer(
    live_server: LiveServer,
) -> None:
    ann, _, race = await open_duel(live_server.url)
    await play_first_targets(ann, race, 1)
    await move_after_dropping_its_table(live_server.db_path, ann, race)
    with pytest.raises(ConnectionClosed):
        while True:
            message = await ann.receive()
            assert not isinstance(message, MovePlaced), "a move that is not on disk was answered"
    assert ann.connection.close_code == CloseCode.GOING_AWAY
    assert live_server.server is not None and live_server.server.failed
    failure = live_server.server.failure_sentence
    assert failure is not None
    assert failure.startswith(f"the journal {live_server.db_path} failed while the server ran")
    assert "no such table: race_commands" in failure and "start it again" in failure


async def test_a_race_on_postgresql_ends_and_the_commands_read_its_result(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`foursquare serve --db postgresql://...` plays a race to its end; `foursquare
    result` reads the stored record from the database, and `foursquare verify` accepts it."""
    with run_server_process(tmp_path / "server.db", db=postgres_url) as server:
        ann, bob, race = await open_duel(server.url)
        ann_moves = await play_first_targets(ann, race, 4)
        bob_moves = await play_first_targets(bob, race, 3)
        for client in (bob, ann):
            await client.send(Resign(race=race, id=client.next_id()))
        finished = await ann.expect(RaceFinished)
        assert {s.racer: list(s.moves) for s in finished.standings} == {
            ann.racer_id: ann_moves, bob.racer_id: bob_moves,
        }
        for client in (ann, bob):
            await client.close()
        assert await asyncio.to_thread(server.terminate) == 0
    capsys.readouterr()
    assert await asyncio.to_thread(foursquare, ["result", race, "--db", postgres_url]) == 0
    stored = tmp_path / "result.json"
    stored.write_text(capsys.readouterr().out)
    record, told = RaceResult.from_json(stored.read_text()), finished.to_result()
    assert (record.race_id, record.seed) == (told.race_id, told.seed)
    assert [(r.racer_id, r.outcome, r.moves) for r in record.racers] == [
        (r.racer_id, r.outcome, r.moves) for r in told.racers
    ]
    assert await asyncio.to_thread(foursquare, ["verify", str(stored)]) == 0
    assert "verified" in capsys.readouterr().out
    assert await asyncio.to_thread(foursquare, ["result", "NOSUCHRACE", "--db", postgres_url]) == 1
    assert f"has no result in {postgres_url}" in capsys.readouterr().err


async def moves_then_stop(
    live: LiveServer, ann: WireClient, race: str, cut: Callable[[], Awaitable[object]]
) -> str:
    """Ann's next move after ``cut`` must not be answered: the server stops first. Its
    failure sentence."""
    await cut()
    card = await ann.expect(CardToPlace)
    row, col = card.targets[0]
    await ann.send(Place(race=race, move=card.move, row=row, col=col, id=ann.next_id()))
    with pytest.raises(ConnectionClosed):
        while True:
            message = await ann.receive()
            assert not isinstance(message, MovePlaced), "a move that is not stored was answered"
    assert ann.connection.close_code == CloseCode.GOING_AWAY
    assert live.server is not None and live.server.failure_sentence is not None
    return live.server.failure_sentence


@pytest.fixture
def on_postgresql(tmp_path: Path, postgres_url: str) -> ServerConfig:
    """A test server's config with its store in a PostgreSQL database of the test's own."""
    return dataclasses.replace(fast_config(tmp_path / "unused.db"), db=postgres_url)


async def test_postgresql_lost_while_the_server_runs_stops_it_before_any_answer(
    on_postgresql: ServerConfig, postgres_url: str
) -> None:
    async with start_live_server(on_postgresql) as live:
        ann, bob, race = await open_duel(live.url)
        await play_first_targets(ann, race, 1)
        failure = await moves_then_stop(
            live, ann, race, lambda: terminate_backends(postgres_url)
        )
        assert failure.startswith(f"the journal {postgres_url} failed while the server ran")
        assert "cannot be reached" in failure and "start it again" in failure
        await bob.close()


async def test_a_second_server_on_the_database_takes_it_over_and_the_first_stops(
    on_postgresql: ServerConfig,
) -> None:
    async with start_live_server(on_postgresql) as first:
        ann, bob, race = await open_duel(first.url)
        played = await play_first_targets(ann, race, 2)
        async with start_live_server(on_postgresql) as second:
            failure = await moves_then_stop(first, ann, race, lambda: asyncio.sleep(0))
            assert "the lease of * is held by another node now" in failure
            back = await WireClient.connect(second.url, "ann", resume=ann.welcome.resume)
            snapshot = await back.expect(RaceSnapshot)
            assert {e.racer: e.cards_played for e in snapshot.progress}[ann.racer_id] == 2
            assert (await back.expect(Boards)).boards[0].shown == len(played)
            await back.close()
        await bob.close()
