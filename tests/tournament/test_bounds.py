"""What one client can make the server hold for tournaments is bounded: caps on creating
them, abandoned ones ended, finished ones forgotten (then read from the store), and a clock
whose work does not grow with the tournaments that wait. The real server on a free port,
real websocket clients; time on the server's injected clock."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from protocol import Error, ErrorCode
from protocol.tournament import (
    CreateTournament,
    HostAction,
    JoinTournament,
    TournamentCreated,
    TournamentOptions,
    TournamentStatus,
)
from server.config import ServerConfig
from server.tournament_export import document_from, verify_document
from server.tournament_host import TournamentDesk
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.server.test_event_loop import until
from tests.tournament.players import BotPlayer, FakeClock, Host, Player, wait_all
from tests.tournament.test_cli import export_and_verify

HOUR = 3600.0


def desk_of(live: LiveServer) -> TournamentDesk:
    assert live.server is not None
    return live.server.race_tier.tournaments


async def create_refused(player: Player) -> Error:
    """Ask for a tournament; the ``error`` that refuses it (failing if one is created)."""
    await player.send(CreateTournament(options=TournamentOptions(name="one more"), id=99))
    while True:
        message = await player.receive()
        assert not isinstance(message, TournamentCreated), "the tournament was created"
        if isinstance(message, Error):
            return message


async def test_past_either_cap_create_tournament_is_refused_with_server_busy(
    tmp_path: Path,
) -> None:
    config = dataclasses.replace(
        fast_config(tmp_path / "foursquare.db"), tournaments_per_session=2, max_open_tournaments=3
    )
    async with start_live_server(config) as live:
        ann = await Host.start(live.url, "ann")
        first = (await ann.create(name="first"), ann.token)
        await ann.create(name="second")
        refused = await create_refused(ann)
        assert refused.code is ErrorCode.SERVER_BUSY and refused.in_reply_to == "create_tournament"
        assert "as many as one session may" in refused.message

        bob = await Host.start(live.url, "bob")
        await bob.create(name="third")
        cid = await Host.start(live.url, "cid")
        refused = await create_refused(cid)
        assert refused.code is ErrorCode.SERVER_BUSY
        assert "3 tournaments, as many as it may" in refused.message

        # Ann ends her first one (never opened): the server has room for one more again,
        # but Ann's finished one still counts for her while it lingers in memory.
        ann.code, ann.token = first
        await ann.control(HostAction.END)
        await ann.until(lambda s: s.tournament == ann.code and s.status.value == "finished")
        assert (await create_refused(ann)).code is ErrorCode.SERVER_BUSY
        await cid.create(name="fourth")
        for player in (ann, bob, cid):
            await player.close()


def clocked(tmp_path: Path, clock: FakeClock, **limits: object) -> ServerConfig:
    """A server on ``clock``, with no rate limit in the bots' way and no countdown (the
    clock stands still: a countdown would never end)."""
    return dataclasses.replace(
        fast_config(tmp_path / "foursquare.db"),
        rate_per_second=1000.0,
        rate_burst=1000,
        clock=clock,
        quick_countdown=0.0,
        **limits,  # type: ignore[arg-type]
    )


async def test_an_abandoned_tournament_ends_after_its_idle_time_and_stays_ended(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    config = clocked(tmp_path, clock, tournament_idle_expiry=HOUR)
    async with start_live_server(config) as live:
        desk = desk_of(live)
        host = await Host.start(live.url)
        code = await host.create(name="forgotten cup")
        await host.control(HostAction.OPEN)
        await host.until(lambda s: s.status is TournamentStatus.OPEN)
        clock.now += HOUR - 1
        ann = await Player.connect(live.url, "ann")
        await ann.send(JoinTournament(tournament=code, id=1))
        await ann.until(lambda s: s.you == ann.player_id)  # an event: idle from now again
        clock.now += HOUR - 1
        desk.wake()
        await asyncio.sleep(0.05)
        assert (await host.watch(code)).status is TournamentStatus.OPEN
        clock.now += 1
        desk.wake()
        ended = await host.until(lambda s: s.status is TournamentStatus.FINISHED)
        assert ended.ending and [line.entrant for line in ended.standings] == [ann.player_id]
        for player in (host, ann):
            await player.close()

    async with start_live_server(config) as live:
        assert code not in desk_of(live).tournaments, "a finished tournament is not loaded"
        late = await Player.connect(live.url, "late")
        state = await late.watch(code)
        assert state.status is TournamentStatus.FINISHED and state.ending
        assert [line.entrant for line in state.standings] == [ann.player_id]
        await late.close()


async def test_a_finished_tournament_leaves_memory_after_its_linger_and_is_read_from_the_store(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    config = clocked(tmp_path, clock, finished_linger=60.0)
    async with start_live_server(config) as live:
        desk = desk_of(live)
        host = await Host.start(live.url, "organiser")  # the command line says hello as "host"
        code = await host.create(name="short cup", rounds=1, race_size=2, time_limit=60)
        await host.control(HostAction.OPEN)
        bots = [await BotPlayer.enter(live.url, f"bot{n}", code, seed=n) for n in range(2)]
        done = lambda s: s.status is TournamentStatus.FINISHED  # noqa: E731
        playing = [asyncio.create_task(bot.play(done)) for bot in bots]
        await host.control(HostAction.START)
        await host.until(done)
        await wait_all(*playing)
        in_memory = await host.export()
        clock.now += 59.0
        desk.wake()
        await asyncio.sleep(0.05)
        assert code in desk.tournaments, "it lingers"
        clock.now += 1.0
        desk.wake()
        await until(lambda: code not in desk.tournaments)

        from_store = await host.export()
        assert from_store.games == in_memory.games and len(from_store.games) == 1
        assert from_store.state.standings == in_memory.state.standings
        assert verify_document(document_from(from_store)) == []
        await export_and_verify(live.url, code, tmp_path / "cup.json")
        await bots[0].send(JoinTournament(tournament=code, id=5))
        assert (await bots[0].error()).code is ErrorCode.TOURNAMENT_NOT_FOUND
        for player in (*bots, host):
            await player.close()

    async with start_live_server(config) as live:
        assert code not in desk_of(live).tournaments, "a finished tournament is not loaded"
        late = await Player.connect(live.url, "late")
        state = await late.watch(code)
        assert state.status is TournamentStatus.FINISHED
        assert state.standings == in_memory.state.standings
        await late.send(JoinTournament(tournament="NOSUCH", id=2))
        assert (await late.error()).code is ErrorCode.TOURNAMENT_NOT_FOUND
        await late.close()


async def test_the_clock_looks_only_at_the_tournaments_that_are_due(tmp_path: Path) -> None:
    clock = FakeClock()
    config = clocked(tmp_path, clock, tournament_idle_expiry=1000.0, tournaments_per_session=0)
    async with start_live_server(config) as live:
        desk = desk_of(live)
        host = await Host.start(live.url)
        first = await host.create(name="first")
        idle_from = clock.now
        clock.now += 10.0
        waiting = [await host.create(name=f"waiting {n}") for n in range(30)]
        looked_at = desk.deadlines.looked_at
        for _ in range(5):
            clock.now += 1.0
            desk.wake()
            await asyncio.sleep(0.02)
        assert desk.deadlines.looked_at == looked_at, "nothing was due"
        clock.now = idle_from + 1000.0
        desk.wake()
        await until(lambda: desk.tournaments[first].status is TournamentStatus.FINISHED)
        assert desk.deadlines.looked_at == looked_at + 1, "the one due, none of those waiting"
        assert all(desk.tournaments[code].status is TournamentStatus.CREATED for code in waiting)
        await host.close()
