"""What a spectator watches outlives its connection and the server: a resume after a
restart sends the race again, or its result if it finished meanwhile."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from protocol import (
    Boards,
    CreateRace,
    Error,
    ErrorCode,
    JoinRace,
    LeaveRace,
    Ok,
    Progress,
    RaceFinished,
    RaceOptions,
    RaceSnapshot,
    RaceState,
    Resign,
    Role,
    Spectate,
)
from protocol.result import verify_result
from server.config import ServerConfig
from tests.conftest import fast_config, start_live_server
from tests.server.test_durability import DUEL, open_duel, play_first_targets
from tests.server.wire_client import WireClient


async def duel(url: str, number: int) -> tuple[WireClient, WireClient, str]:
    """Two racers, named after ``number``, in a private race that has started."""
    ann = await WireClient.connect(url, f"ann{number}")
    bob = await WireClient.connect(url, f"bob{number}")
    await ann.send(CreateRace(options=DUEL, id=ann.next_id()))
    race = (await ann.expect(RaceSnapshot)).race
    await bob.send(JoinRace(race=race, id=bob.next_id()))
    await bob.expect(RaceSnapshot, race=race, state=RaceState.RUNNING)
    return ann, bob, race


async def watch(url: str, race: str) -> WireClient:
    """A spectator session watching ``race``, its first state received."""
    eve = await WireClient.connect(url, "eve", role=Role.SPECTATOR)
    await eve.send(Spectate(race=race, id=eve.next_id()))
    await eve.expect(RaceSnapshot, race=race)
    return eve


async def watched_duel(url: str) -> tuple[WireClient, WireClient, str, WireClient]:
    """Ann and Bob racing, and Eve watching them."""
    ann, bob, race = await open_duel(url)
    return ann, bob, race, await watch(url, race)


async def cards_played_seen(spectator: WireClient, race: str, racer: str, count: int) -> None:
    """Read ``spectator``'s messages until one shows ``racer`` with ``count`` cards played
    (a snapshot's progress, or a progress update)."""
    while True:
        message = await spectator.receive()
        if isinstance(message, RaceSnapshot | Progress) and message.race == race:
            lines = message.progress if isinstance(message, RaceSnapshot) else message.racers
            if any(line.racer == racer and line.cards_played == count for line in lines):
                return


async def resumed(url: str, spectator: WireClient) -> WireClient:
    """``spectator``'s session, resumed on a new connection to ``url``."""
    return await WireClient.connect(
        url, spectator.welcome.name, role=Role.SPECTATOR, resume=spectator.welcome.resume
    )


async def resign_both(url: str, *racers: WireClient) -> None:
    """Resume each racer on ``url`` and resign it (the last resignation ends the race)."""
    for racer in racers:
        back = await WireClient.connect(url, racer.welcome.name, resume=racer.welcome.resume)
        race = (await back.expect(RaceSnapshot)).race
        await back.send(Resign(race=race, id=back.next_id()))
        await back.expect(Ok, in_reply_to="resign")
        await back.close()


async def test_a_spectator_resumed_after_a_restart_watches_its_race_again(
    server_config: ServerConfig,
) -> None:
    config = server_config  # the same journal for every server of the test
    async with start_live_server(config) as first:
        ann, bob, race, eve = await watched_duel(first.url)
    async with start_live_server(config) as second:
        eve = await resumed(second.url, eve)
        snapshot = await eve.expect(RaceSnapshot, race=race)
        assert snapshot.state is RaceState.RUNNING and snapshot.you is None
        await eve.expect(Boards, race=race)
        await resign_both(second.url, ann, bob)
        finished = await eve.expect(RaceFinished, race=race)
        assert verify_result(finished.to_result()).ok
        await eve.close()


async def test_a_race_that_finished_while_its_spectator_was_away_is_sent_as_its_result(
    server_config: ServerConfig,
) -> None:
    config = server_config  # the same journal for every server of the test
    async with start_live_server(config) as first:
        ann, bob, race, eve = await watched_duel(first.url)
        await eve.close()
        await resign_both(first.url, ann, bob)
        # A lobby eve watched, that its only racer left: gone, and no result.
        host = await WireClient.connect(first.url, "host")
        await host.send(CreateRace(options=RaceOptions(public=False), id=host.next_id()))
        lobby = (await host.expect(RaceSnapshot)).race
        eve = await resumed(first.url, eve)
        await eve.send(Spectate(race=lobby, id=eve.next_id()))
        await eve.expect(RaceSnapshot, race=lobby)
        await eve.close()
        await host.send(LeaveRace(race=lobby, id=host.next_id()))
        await host.expect(Ok, in_reply_to="leave_race")
    async with start_live_server(config) as second:  # the duel is over: not recovered
        eve = await resumed(second.url, eve)
        finished = await eve.expect(RaceFinished, race=race)
        assert {line.racer for line in finished.standings} == {ann.racer_id, bob.racer_id}
        assert verify_result(finished.to_result()).ok
        gone = await eve.expect(Error)
        assert (gone.code, gone.in_reply_to) == (ErrorCode.RACE_NOT_FOUND, "spectate")
        assert lobby in gone.message
        await eve.close()
    async with start_live_server(config) as third:  # told once: then no longer watched
        eve = await resumed(third.url, eve)
        await eve.send(Spectate(race="NOSUCHRACE", id=eve.next_id()))
        refused = await eve.expect(Error)
        assert refused.reply_to is not None and refused.code is ErrorCode.RACE_NOT_FOUND
        assert len(eve.received) == 2  # the welcome, and that answer: nothing else
        await eve.close()


async def test_a_session_watches_a_bounded_number_of_races_still_on(tmp_path: Path) -> None:
    """Past ``watched_races``, a finished race makes room; races still on do not."""
    config: ServerConfig = dataclasses.replace(
        fast_config(tmp_path / "journal.db"), watched_races=2
    )
    async with start_live_server(config) as live:
        duels = [await duel(live.url, number) for number in range(3)]
        eve = await watch(live.url, duels[0][2])
        await eve.send(Spectate(race=duels[1][2], id=eve.next_id()))
        await eve.expect(RaceSnapshot, race=duels[1][2])
        await eve.send(Spectate(race=duels[2][2], id=eve.next_id()))
        refused = await eve.expect(Error)
        assert refused.code is ErrorCode.SERVER_BUSY and refused.in_reply_to == "spectate"
        for racer in duels[0][:2]:
            await racer.send(Resign(race=duels[0][2], id=racer.next_id()))
        await eve.expect(RaceFinished, race=duels[0][2])
        await eve.send(Spectate(race=duels[2][2], id=eve.next_id()))
        await eve.expect(RaceSnapshot, race=duels[2][2])
        await eve.close()


async def test_spectators_who_start_watching_together_get_the_same_view_and_miss_no_move(
    server_config: ServerConfig,
) -> None:
    # The view a new spectator gets is built once for those who start watching within a
    # moment of each other (here: a second); whoever starts after a move must see it.
    config = dataclasses.replace(server_config, spectator_view_interval=1.0)
    async with start_live_server(config) as server:
        ann, bob, race = await open_duel(server.url)
        await bob.expect(RaceSnapshot, race=race, state=RaceState.RUNNING)
        eves = [await WireClient.connect(server.url, f"eve{i}", role=Role.SPECTATOR)
                for i in range(3)]
        asked = [eve.next_id() for eve in eves]
        for eve, request in zip(eves, asked, strict=True):
            await eve.send(Spectate(race=race, id=request))
        views = []
        for eve, request in zip(eves, asked, strict=True):
            snapshot = await eve.expect(RaceSnapshot, race=race)
            assert snapshot.reply_to == request and snapshot.you is None
            progress = await eve.expect(Progress, race=race)
            boards = await eve.expect(Boards, race=race)
            views.append((snapshot.racers, snapshot.progress, progress.racers, boards.boards))
        assert views[0] == views[1] == views[2]
        await play_first_targets(ann, race, 1)
        for eve in eves:  # the update showing the move has gone out
            await cards_played_seen(eve, race, ann.racer_id, 1)
        late = await WireClient.connect(server.url, "eve-late", role=Role.SPECTATOR)
        await late.send(Spectate(race=race, id=late.next_id()))
        await cards_played_seen(late, race, ann.racer_id, 1)
        for client in (ann, bob, late, *eves):
            await client.close()
