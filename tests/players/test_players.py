"""Claimed names and player keys, on both stores (a real SQLite file and a PostgreSQL
database of the test's own): the store's jobs, and the real server over websockets."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from protocol import ErrorCode, Hello, Role, Welcome
from protocol.messages import Error
from protocol.players import ClaimName, PlayerKey
from server.config import ServerConfig
from server.journal import PlayerRecord
from server.player_store import (
    ClaimedPlayer,
    claim_name,
    find_player,
    key_digest,
    name_claimed,
    new_player_key,
)
from server.postgres import PostgresStore
from server.store import Store
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.server.wire_client import WireClient


async def claim(store: Store, session: str, name: str, key: str) -> ClaimedPlayer | None:
    await store.write(PlayerRecord(session, session.encode(), name, False, 0.0))
    job = functools.partial(claim_name, session, name, False, key_digest(key), 1.0)
    claimed: ClaimedPlayer | None = await store.run(job, writes=True)
    return claimed


# ------------------------------------------------------------------ the store


async def test_a_claimed_name_is_found_by_its_key_and_no_other(store: Store) -> None:
    key = new_player_key()
    ann = await claim(store, "p-1", "Ann", key)
    assert ann is not None and ann.name == "Ann" and not ann.bot
    found = await store.run(functools.partial(find_player, key_digest(key)), writes=False)
    assert found == ann
    wrong = new_player_key()
    assert await store.run(functools.partial(find_player, key_digest(wrong)), writes=False) is None
    # The session row now says which player it plays as, for a restart to know.
    recovered = await store.recover()
    assert [p.claimed_by for p in recovered.players] == [ann.player_id]


@pytest.mark.parametrize("other", ["ann", "ANN", "\u0410nn", "AnN"])
async def test_a_name_that_looks_the_same_cannot_be_claimed_again(
    store: Store, other: str
) -> None:
    assert await claim(store, "p-1", "Ann", new_player_key()) is not None
    assert await claim(store, "p-2", other, new_player_key()) is None
    assert await store.run(functools.partial(name_claimed, other), writes=False)
    assert not await store.run(functools.partial(name_claimed, "Bob"), writes=False)


async def test_the_store_keeps_only_the_keys_digest(store: Store, db: str) -> None:
    key = new_player_key()
    await claim(store, "p-1", "Ann", key)
    rows = await store.run(_all_claimed_rows, writes=False)
    text = repr(rows)
    assert key not in text and key_digest(key) in [row[1] for row in rows]


def _all_claimed_rows():  # type: ignore[no-untyped-def]
    rows = yield ("SELECT player_id, key_hash, name FROM claimed_players", ())
    return [(row[0], bytes(row[1]), row[2]) for row in rows]


# ------------------------------------------------------------ the live server


@pytest.fixture
async def live(db: str, tmp_path: Path) -> AsyncIterator[LiveServer]:
    config: ServerConfig = dataclasses.replace(fast_config(tmp_path / "journal.db"), db=db)
    async with start_live_server(config) as server:
        yield server


async def hello(url: str, **fields: object) -> tuple[WireClient | None, Error | None]:
    """Say hello with ``fields``: the client welcomed, or the error that refused it."""
    from websockets.asyncio.client import connect

    from protocol import decode_server, encode

    connection = await connect(url, compression=None, max_size=None)
    values: dict[str, object] = {"name": "Ann", "bot": False, "id": 1, **fields}
    await connection.send(encode(Hello(**values)))  # type: ignore[arg-type]
    answer = decode_server(await asyncio.wait_for(connection.recv(), 10))
    if isinstance(answer, Welcome):
        return WireClient(connection, answer), None
    assert isinstance(answer, Error), answer
    await connection.close()
    return None, answer


async def claimed_key(url: str, name: str) -> tuple[WireClient, PlayerKey]:
    client = await WireClient.connect(url, name)
    await client.send(ClaimName(id=5))
    key = await client.expect(PlayerKey)
    return client, key


async def test_a_player_who_claims_its_name_comes_back_with_its_key(live: LiveServer) -> None:
    ann, key = await claimed_key(live.url, "Ann")
    assert key.name == "Ann" and key.reply_to == 5
    await ann.close()
    again, refused = await hello(live.url, name="whatever", player_key=key.key)
    assert refused is None and again is not None
    assert again.welcome.name == "Ann" and again.welcome.player == key.player
    await again.close()


async def test_a_key_survives_a_restart_of_the_server(db: str, tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "journal.db"), db=db)
    async with start_live_server(config) as first:
        ann, key = await claimed_key(first.url, "Ann")
        await ann.close()
    async with start_live_server(config) as second:
        again, _ = await hello(second.url, name="x", player_key=key.key)
        assert again is not None and again.welcome.player == key.player
        await again.close()


async def test_a_wrong_key_is_refused_and_the_connection_may_say_hello_again(
    live: LiveServer,
) -> None:
    from websockets.asyncio.client import connect

    from protocol import decode_server, encode

    ann, _ = await claimed_key(live.url, "Ann")
    await ann.close()
    stolen_guess = new_player_key()
    connection = await connect(live.url, compression=None)
    await connection.send(encode(Hello(name="Ann", bot=False, player_key=stolen_guess, id=1)))
    error = decode_server(await asyncio.wait_for(connection.recv(), 10))
    assert isinstance(error, Error) and error.code is ErrorCode.UNKNOWN_PLAYER_KEY
    assert stolen_guess not in error.message and stolen_guess[:7] not in error.message
    await connection.send(encode(Hello(name="Bob", bot=False, id=2)))
    welcome = decode_server(await asyncio.wait_for(connection.recv(), 10))
    assert isinstance(welcome, Welcome) and welcome.player is None
    await connection.close()


@pytest.mark.parametrize("guest", ["ann", "\u0410NN"])
async def test_a_guest_cannot_take_a_claimed_name(live: LiveServer, guest: str) -> None:
    ann, _ = await claimed_key(live.url, "Ann")
    await ann.close()  # not connected: the name is still the player's
    client, refused = await hello(live.url, name=guest)
    assert client is None and refused is not None
    assert refused.code is ErrorCode.NAME_TAKEN and "claimed" in refused.message
    # A bot or a spectator is not a guest racer: its name shows as a bot's, or not at all.
    bot, _ = await hello(live.url, name=guest, bot=True)
    assert bot is not None
    await bot.close()


async def test_the_player_cannot_play_from_two_sessions_at_once(live: LiveServer) -> None:
    ann, key = await claimed_key(live.url, "Ann")
    twin, refused = await hello(live.url, name="x", player_key=key.key)
    assert twin is None and refused is not None and refused.code is ErrorCode.NAME_TAKEN
    await ann.close()


async def test_claims_a_session_may_not_make(live: LiveServer) -> None:
    ann, _ = await claimed_key(live.url, "Ann")
    await ann.send(ClaimName(id=6))
    again = await ann.expect(Error)
    assert again.code is ErrorCode.ALREADY_CLAIMED and again.in_reply_to == "claim_name"
    watcher = await WireClient.connect(live.url, "Eve", role=Role.SPECTATOR)
    await watcher.send(ClaimName(id=7))
    assert (await watcher.expect(Error)).code is ErrorCode.WRONG_ROLE
    for client in (ann, watcher):
        await client.close()


async def test_a_key_in_the_wrong_shape_is_refused_without_being_repeated(
    live: LiveServer,
) -> None:
    bad = new_player_key() + "="
    client, refused = await hello(live.url, player_key=bad)
    assert client is None and refused is not None and refused.code is ErrorCode.BAD_MESSAGE
    assert "hello.player_key is not a token" in refused.message
    assert bad[:7] not in refused.message


async def test_a_version_1_postgresql_database_gains_claimed_players(postgres_url: str) -> None:
    import psycopg

    first = await PostgresStore.open(postgres_url)
    await first.aclose()
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as admin:
        await admin.execute(
            "ALTER TABLE players DROP COLUMN claimed_by; DROP TABLE claimed_players;"
            " DROP TABLE claimed_names; UPDATE schema_version SET version = 1;"
        )
    store = await PostgresStore.open(postgres_url)
    try:
        assert await claim(store, "p-1", "Ann", new_player_key()) is not None
        (player,) = (await store.recover()).players
        assert player.claimed_by is not None
    finally:
        await store.aclose()
