"""The lobby over the wire: quick races, private races, readiness, the clock, sessions."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from engine import deal
from engine.solver import solve
from protocol import (
    CardToPlace,
    ClientMessage,
    CloseCode,
    CreateRace,
    Error,
    ErrorCode,
    JoinRace,
    LeaveRace,
    ListRaces,
    MovePlaced,
    Ok,
    Place,
    QuickRace,
    RaceFinished,
    RaceList,
    RaceOptions,
    RacerStatus,
    RaceSnapshot,
    RaceState,
    Ready,
    Resign,
    Role,
    SeedPolicy,
)
from server.config import ServerConfig
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.server.wire_client import TIMEOUT, WireClient


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    # A countdown long enough never to end in a test: races here start by other means.
    return dataclasses.replace(
        fast_config(tmp_path / "db"), quick_countdown=60.0, quick_max_racers=3
    )


async def racers(live: LiveServer, *names: str) -> list[WireClient]:
    return [await WireClient.connect(live.url, name, bot=name.endswith("bot")) for name in names]


async def test_a_quick_race_starts_at_once_when_full(live_server: LiveServer) -> None:
    clients = await racers(live_server, "ann", "bob", "cy-bot")
    for client in clients:
        await client.send(QuickRace(id=client.next_id()))
    for client in clients:
        running = await client.expect(RaceSnapshot, state=RaceState.RUNNING)
        assert [r.bot for r in running.racers] == [False, False, True]
        assert (await client.expect(CardToPlace)).move == 1
    # A fourth racer gets a fresh race.
    (dan,) = await racers(live_server, "dan")
    await dan.send(QuickRace(id=1))
    fresh = await dan.expect(RaceSnapshot)
    assert fresh.race != running.race and fresh.state is RaceState.LOBBY


async def test_a_private_race_starts_when_everyone_is_ready(live_server: LiveServer) -> None:
    ann, bob = await racers(live_server, "ann", "bob")
    options = RaceOptions(max_racers=4, min_racers=2, auto_start=False, public=False, countdown=0)
    await ann.send(CreateRace(options=options, id=1))
    code = (await ann.expect(RaceSnapshot)).code
    assert code is not None
    await bob.send(JoinRace(race=code, id=1))
    await bob.expect(RaceSnapshot)
    await ann.send(Ready(race=code, ready=True, id=2))
    await ann.expect(Ok, in_reply_to="ready")
    await ann.expect(RaceSnapshot, state=RaceState.LOBBY)
    await bob.send(Ready(race=code, ready=True, id=2))
    await bob.expect(RaceSnapshot, state=RaceState.RUNNING)
    assert (await ann.expect(CardToPlace)).move == 1


async def test_open_public_races_are_listed_and_private_ones_are_not(
    live_server: LiveServer,
) -> None:
    ann, bob, cy = await racers(live_server, "ann", "bob", "cy")
    await ann.send(QuickRace(id=1))
    public = (await ann.expect(RaceSnapshot)).race
    await bob.send(CreateRace(options=RaceOptions(public=False), id=1))
    await bob.expect(RaceSnapshot)
    await cy.send(ListRaces(id=7))
    listing = await cy.expect(RaceList)
    assert [(r.race, r.racers, r.state) for r in listing.races] == [(public, 1, RaceState.LOBBY)]
    assert listing.reply_to == 7


async def seats_taken(lister: WireClient, race: str) -> int:
    await lister.send(ListRaces(id=lister.next_id()))
    listing = await lister.expect(RaceList)
    return next(r.racers for r in listing.races if r.race == race)


async def test_leaving_or_dropping_out_of_a_lobby_frees_the_seat(live_server: LiveServer) -> None:
    ann, bob, cy = await racers(live_server, "ann", "bob", "cy")
    await ann.send(QuickRace(id=1))
    race = (await ann.expect(RaceSnapshot)).race
    await bob.send(JoinRace(race=race, id=1))
    await bob.expect(RaceSnapshot)
    assert await seats_taken(cy, race) == 2
    await bob.send(LeaveRace(race=race, id=2))
    await bob.expect(Ok, in_reply_to="leave_race")
    assert await seats_taken(cy, race) == 1
    await bob.send(JoinRace(race=race, id=3))
    await bob.expect(RaceSnapshot, reply_to=3)
    assert await seats_taken(cy, race) == 2
    await bob.close()
    # The server notices the closed connection on its own time: ask until it has.
    async with asyncio.timeout(TIMEOUT):
        while await seats_taken(cy, race) != 1:
            await asyncio.sleep(0.02)


async def test_leaving_a_lobby_one_was_alone_in_is_answered(live_server: LiveServer) -> None:
    (ann,) = await racers(live_server, "ann")
    await ann.send(CreateRace(options=RaceOptions(public=False), id=1))
    race = (await ann.expect(RaceSnapshot)).race
    await ann.send(LeaveRace(race=race, id=2))
    await ann.expect(Ok, in_reply_to="leave_race", reply_to=2)  # the race closed with it
    await ann.send(JoinRace(race=race, id=3))
    await ann.expect(Error, code=ErrorCode.RACE_NOT_FOUND)


async def test_requests_out_of_place_are_refused_with_their_codes(live_server: LiveServer) -> None:
    ann, bob = await racers(live_server, "ann", "bob")
    watcher = await WireClient.connect(live_server.url, "watcher", role=Role.SPECTATOR)
    await ann.send(CreateRace(options=RaceOptions(max_racers=1, min_racers=1, spectators=False),
                              id=1))
    race = (await ann.expect(RaceSnapshot)).race
    refusals: list[tuple[WireClient, ClientMessage, ErrorCode]] = [
        (ann, QuickRace(id=2), ErrorCode.ALREADY_JOINED),
        (bob, JoinRace(race=race, id=2), ErrorCode.RACE_STARTED),
        (bob, JoinRace(race="NOPE", id=3), ErrorCode.RACE_NOT_FOUND),
        (bob, Ready(race=race, id=4), ErrorCode.NOT_A_RACER),
        (watcher, QuickRace(id=2), ErrorCode.WRONG_ROLE),
    ]
    for client, request, code in refusals:
        await client.send(request)
        error = await client.expect(Error)
        assert (error.code, error.reply_to) == (code, request.id)


async def test_the_time_limit_ends_the_race_and_times_out_whoever_still_plays(
    live_server: LiveServer,
) -> None:
    (ann,) = await racers(live_server, "ann")
    await ann.send(CreateRace(options=RaceOptions(max_racers=1, min_racers=1, time_limit=1), id=1))
    finished = await ann.expect(RaceFinished)
    assert [s.status for s in finished.standings] == [RacerStatus.TIMED_OUT]


async def test_resuming_elsewhere_closes_the_old_connection(live_server: LiveServer) -> None:
    (ann,) = await racers(live_server, "ann")
    again = await WireClient.connect(live_server.url, "ann", resume=ann.welcome.resume)
    with pytest.raises(ConnectionClosed):
        while True:
            await ann.receive()
    assert ann.connection.close_code == CloseCode.REPLACED
    assert again.welcome.session == ann.racer_id
    await again.close()


async def test_an_idle_connection_is_closed(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "db"), idle_timeout=0.3)
    async with start_live_server(config) as live:
        idle = await WireClient.connect(live.url, "idle")
        with pytest.raises(ConnectionClosed):
            while True:
                await idle.receive()
        assert idle.connection.close_code == CloseCode.IDLE_TIMEOUT


async def test_a_race_asked_for_a_winnable_deal_gets_one(live_server: LiveServer) -> None:
    (ann,) = await racers(live_server, "ann")
    options = RaceOptions(max_racers=1, min_racers=1, seed_policy=SeedPolicy.WINNABLE)
    await ann.send(CreateRace(options=options, id=1))
    race = (await ann.expect(RaceSnapshot)).race
    await ann.send(Resign(race=race, id=2))
    finished = await ann.expect(RaceFinished)
    assert solve(deal(finished.seed), budget=10.0, prove=False).score is not None


async def test_a_racer_whose_game_is_over_may_race_again_while_others_play_on(
    live_server: LiveServer,
) -> None:
    ann, bob = await racers(live_server, "ann", "bob")
    await ann.send(CreateRace(options=RaceOptions(max_racers=2, countdown=0), id=1))
    race = (await ann.expect(RaceSnapshot)).race
    await bob.send(JoinRace(race=race, id=1))
    await ann.expect(CardToPlace)
    await ann.send(QuickRace(id=2))
    assert (await ann.expect(Error)).code is ErrorCode.ALREADY_JOINED
    await ann.send(Resign(race=race, id=3))
    await ann.expect(Ok, in_reply_to="resign")
    await ann.send(QuickRace(id=4))
    fresh = await ann.expect(RaceSnapshot, reply_to=4)
    assert fresh.race != race and fresh.you == ann.racer_id


async def test_a_spectator_is_still_a_spectator_after_a_restart(tmp_path: Path) -> None:
    config = fast_config(tmp_path / "db")
    async with start_live_server(config) as live:
        eve = await WireClient.connect(live.url, "eve", role=Role.SPECTATOR)
        token = eve.welcome.resume
        await eve.close()
    async with start_live_server(config) as live:
        back = await WireClient.connect(live.url, "eve", resume=token)
        assert back.welcome.resumed and back.welcome.role is Role.SPECTATOR
        await back.send(QuickRace(id=2))
        refusal = await back.expect(Error, reply_to=2)
        assert refusal.code is ErrorCode.WRONG_ROLE
        await back.close()


async def test_without_a_journal_races_run_and_nothing_is_written(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "db"), journal=False)
    async with start_live_server(config) as live:
        ann, bob = await racers(live, "ann", "bob")
        for racer in (ann, bob):
            await racer.send(QuickRace(id=5))
        for racer in (ann, bob):
            card = await racer.expect(CardToPlace)
            row, col = card.targets[0]
            await racer.send(Place(race=card.race, move=1, row=row, col=col, id=6))
            await racer.expect(MovePlaced, reply_to=6)
            await racer.close()
    assert not (tmp_path / "db").exists()
