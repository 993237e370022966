"""Session expiry: idle sessions are forgotten, in memory and in the journal, across restarts."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from protocol import (
    CloseCode,
    CreateRace,
    Error,
    ErrorCode,
    Hello,
    JoinRace,
    RaceOptions,
    RaceSnapshot,
    RaceState,
    Role,
    Welcome,
    decode_server,
    encode,
)
from server.config import ServerConfig
from server.expiry import SessionExpiry
from server.journal import DisabledJournal
from server.metrics import Metrics
from server.sessions import SessionRegistry
from tests.conftest import fast_config, start_live_server
from tests.server.exposition import exposition_samples
from tests.server.wire_client import TIMEOUT, WireClient


class Clock:
    """A wall clock the test moves by hand."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def resume_refused(url: str, token: str) -> bool:
    """Whether resuming with ``token`` gets ``invalid_token`` and close 4002 (else it
    must get a resumed welcome)."""
    async with connect(url) as socket:
        await socket.send(encode(Hello(name="back", bot=False, resume=token, id=1)))
        answer = decode_server(await asyncio.wait_for(socket.recv(), TIMEOUT))
        if isinstance(answer, Welcome):
            assert answer.resumed
            return False
        assert isinstance(answer, Error) and answer.code is ErrorCode.INVALID_TOKEN, answer
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(socket.recv(), TIMEOUT)
        assert socket.close_code == CloseCode.INVALID_TOKEN
        return True


def stored_players(db: Path) -> set[str]:
    with sqlite3.connect(db) as connection:
        return {row[0] for row in connection.execute("SELECT player_id FROM players")}


async def until(condition: object) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    while not condition() and loop.time() < deadline:  # type: ignore[operator]
        await asyncio.sleep(0.02)


def expiring_config(tmp_path: Path, clock: Clock, expiry: float = 100.0) -> ServerConfig:
    return dataclasses.replace(
        fast_config(tmp_path / "db"),
        session_idle_expiry=expiry,
        session_expiry_interval=0.05,
        clock=clock,
    )


async def test_an_idle_session_is_forgotten_unless_connected_or_racing(tmp_path: Path) -> None:
    clock = Clock()
    async with start_live_server(expiring_config(tmp_path, clock)) as live:
        assert live.server is not None
        idle = await WireClient.connect(live.url, "idle")
        connected = await WireClient.connect(live.url, "connected")
        racer = await WireClient.connect(live.url, "racer")
        rival = await WireClient.connect(live.url, "rival")
        await racer.send(CreateRace(options=RaceOptions(max_racers=2, countdown=0), id=1))
        race = (await racer.expect(RaceSnapshot)).race
        await rival.send(JoinRace(race=race, id=2))
        await racer.expect(RaceSnapshot, state=RaceState.RUNNING)
        for client in (idle, racer):
            await client.close()
        await until(lambda: len(live.server.socket_tier.sessions.connected()) == 2)
        clock.now += 101  # past the expiry for the two who left
        await until(lambda: live.server.metrics.sessions_expired_total >= 1)
        await asyncio.sleep(0.2)  # a few more looks: nobody else goes
        assert live.server.metrics.sessions_expired_total == 1
        assert idle.racer_id not in stored_players(live.db_path)
        assert await resume_refused(live.url, idle.welcome.resume)
        # Still racing (the race runs on), and still connected: both kept.
        assert not await resume_refused(live.url, racer.welcome.resume)
        await connected.send(Hello(name="x", bot=False, id=3))
        assert (await connected.expect(Error)).code is ErrorCode.ALREADY_WELCOMED
        await connected.close()
        await rival.close()


async def test_idle_time_counts_across_a_restart(tmp_path: Path) -> None:
    """A session left before a restart expires by the time it was left, not the restart's;
    one connected until the server stopped counts from the stop."""
    clock = Clock()
    config = expiring_config(tmp_path, clock)
    async with start_live_server(config) as live:
        left = await WireClient.connect(live.url, "left")
        stayed = await WireClient.connect(live.url, "stayed", role=Role.SPECTATOR)
        await left.close()
        assert live.server is not None
        sessions = live.server.socket_tier.sessions
        await until(lambda: len(sessions.connected()) == 1)
        clock.now += 50
    clock.now += 70  # 120 s since "left" left, 70 s since the server (and "stayed") stopped
    async with start_live_server(config) as live:
        assert live.server is not None
        await until(lambda: live.server.metrics.sessions_expired_total >= 1)
        assert stored_players(live.db_path) == {stayed.racer_id}
        assert await resume_refused(live.url, left.welcome.resume)
        assert not await resume_refused(live.url, stayed.welcome.resume)
    # The expired session is gone from the journal: the next start does not load it.
    async with start_live_server(config) as live:
        assert live.server is not None
        assert len(live.server.socket_tier.sessions) == 1


async def test_a_backlog_is_forgotten_in_bounded_batches() -> None:
    clock = Clock()
    config = dataclasses.replace(
        ServerConfig(), session_idle_expiry=10.0, session_expiry_batch=2, clock=clock
    )
    sessions = SessionRegistry()
    for n in range(5):
        sessions.create(f"p{n}", bot=False, role=Role.PLAYER, now=clock.now)
    metrics = Metrics()
    asked: list[tuple[str, ...]] = []  # the race tier's questions: nobody is held
    expiry = SessionExpiry(config, sessions, DisabledJournal(), metrics, ask=asked.append)
    clock.now += 11
    counts = []
    for _ in range(3):
        expiry.run()
        expiry.checked(keep=(), forget=asked.pop())
        counts.append(metrics.sessions_expired_total)
    expiry.stop()
    assert counts == [2, 4, 5]
    assert len(sessions) == 0


async def test_sessions_in_memory_and_expired_are_in_metrics(tmp_path: Path) -> None:
    clock = Clock()
    async with start_live_server(expiring_config(tmp_path, clock)) as live:
        assert live.server is not None
        metrics = exposition_samples(live.server.metrics.render().decode())
        assert metrics[("foursquare_sessions", ())] == 0
        assert metrics[("foursquare_limit", (("limit", "session_idle_expiry_seconds"),))] == 100
        assert metrics[("foursquare_sessions_expired_total", ())] == 0
