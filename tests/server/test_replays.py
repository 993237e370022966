"""``spectate`` of a race the server no longer keeps: its stored result, to replay, on
both stores; never anything of a race still running."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from protocol import (
    Boards,
    CardToPlace,
    CreateRace,
    Error,
    ErrorCode,
    JoinRace,
    LeaveRace,
    Place,
    RaceFinished,
    RaceOptions,
    RaceSnapshot,
    RaceState,
    Resign,
    Role,
    ServerMessage,
    Spectate,
)
from protocol.result import verify_result
from server.config import ServerConfig
from tests.conftest import fast_config, start_live_server
from tests.server.wire_client import WireClient

#: Seconds a finished race stays in memory in these tests, before only its result is left.
LINGER = 0.1


@pytest.fixture(params=["sqlite", "postgresql"])
def config(request: pytest.FixtureRequest, tmp_path: Path) -> ServerConfig:
    """A server that forgets finished races at once, on a journal file or PostgreSQL."""
    config = dataclasses.replace(fast_config(tmp_path / "journal.db"), finished_linger=LINGER)
    if request.param == "postgresql":
        config = dataclasses.replace(config, db=request.getfixturevalue("postgres_url"))
    return config


async def raced(url: str, options: RaceOptions) -> tuple[str, RaceFinished]:
    """Ann and Bob race: Ann places three cards, then both resign. The race and its
    result."""
    ann = await WireClient.connect(url, "ann")
    bob = await WireClient.connect(url, "bob", bot=True)
    await ann.send(CreateRace(options=options, id=ann.next_id()))
    race = (await ann.expect(RaceSnapshot)).race
    await bob.send(JoinRace(race=race, id=bob.next_id()))
    for _ in range(3):
        card = await ann.expect(CardToPlace)
        row, col = card.targets[0]
        await ann.send(Place(race=race, move=card.move, row=row, col=col, id=ann.next_id()))
    await ann.send(Resign(race=race, id=ann.next_id()))
    await bob.send(Resign(race=race, id=bob.next_id()))
    finished = await ann.expect(RaceFinished)
    await ann.close()
    await bob.close()
    return race, finished


async def first_answer(eve: WireClient, race: str) -> ServerMessage:
    """What answers Eve's ``spectate`` first (it carries the request's id)."""
    request = eve.next_id()
    await eve.send(Spectate(race=race, id=request))
    while True:
        message = await eve.receive()
        if getattr(message, "reply_to", None) == request:
            return message


async def once_forgotten(eve: WireClient, race: str) -> ServerMessage:
    """The answer to ``spectate`` once the server no longer keeps the finished race."""
    while isinstance(answer := await first_answer(eve, race), RaceSnapshot):
        assert answer.state is RaceState.FINISHED
        await eve.send(LeaveRace(race=race, id=eve.next_id()))
        await asyncio.sleep(LINGER)  # ask again once the server may have forgotten it
    return answer


async def test_a_race_no_longer_kept_is_answered_with_its_result(config: ServerConfig) -> None:
    async with start_live_server(config) as live:
        race, finished = await raced(live.url, RaceOptions(max_racers=2, countdown=0,
                                                           public=False))
        eve = await WireClient.connect(live.url, "eve", role=Role.SPECTATOR)
        answer = await once_forgotten(eve, race)
        assert isinstance(answer, RaceFinished)
        assert dataclasses.replace(answer, reply_to=None) == finished
        ann = next(s for s in answer.standings if s.name == "ann")
        assert ann.move_ms is not None and len(ann.move_ms) == len(ann.moves) == 3
        assert verify_result(answer.to_result()).ok
        # Nothing more comes of it: the session does not watch a race that is over.
        after = len(eve.received)
        await eve.send(Spectate(race="NOSUCHRACE", id=eve.next_id()))
        refusal = await eve.expect(Error)
        assert refusal.code is ErrorCode.RACE_NOT_FOUND
        assert eve.received[after:] == [refusal]
        await eve.close()


async def test_a_race_without_spectators_is_not_shown_after_it_either(
    config: ServerConfig,
) -> None:
    async with start_live_server(config) as live:
        options = RaceOptions(max_racers=2, countdown=0, public=False, spectators=False)
        race, _ = await raced(live.url, options)
        eve = await WireClient.connect(live.url, "eve", role=Role.SPECTATOR)
        answer = await first_answer(eve, race)
        assert isinstance(answer, Error) and answer.code is ErrorCode.SPECTATORS_NOT_ALLOWED
        await eve.close()


async def test_a_race_still_running_is_watched_live_never_replayed(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "journal.db"), finished_linger=LINGER)
    async with start_live_server(config) as live:
        ann = await WireClient.connect(live.url, "ann")
        bob = await WireClient.connect(live.url, "bob", bot=True)
        await ann.send(CreateRace(options=RaceOptions(max_racers=2, countdown=0, public=False),
                                  id=ann.next_id()))
        race = (await ann.expect(RaceSnapshot)).race
        await bob.send(JoinRace(race=race, id=bob.next_id()))
        for _ in range(3):  # Ann three cards ahead of Bob, who has drawn one
            card = await ann.expect(CardToPlace)
            row, col = card.targets[0]
            await ann.send(Place(race=race, move=card.move, row=row, col=col, id=ann.next_id()))
        await ann.expect(CardToPlace)
        eve = await WireClient.connect(live.url, "eve", role=Role.SPECTATOR)
        answer = await first_answer(eve, race)
        assert isinstance(answer, RaceSnapshot) and answer.state is RaceState.RUNNING
        boards = await eve.expect(Boards)
        assert boards.fog_line == 1 and all(board.shown <= 1 for board in boards.boards)
        assert not any(isinstance(m, RaceFinished) for m in eve.received)
        for client in (ann, bob, eve):
            await client.close()
