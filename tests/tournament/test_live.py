"""Tournaments end to end: the real server on a free port, bots on real websocket clients."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from protocol import CardToPlace, CloseCode, ErrorCode, RaceSnapshot, RaceState
from protocol.result import verify_result
from protocol.tournament import (
    HostAction,
    JoinTournament,
    TournamentFormat,
    TournamentState,
    TournamentStatus,
)
from server.tournament_export import document_from, verify_document
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.tournament.players import BotPlayer, FakeClock, Host, Player, round_over, wait_all


async def test_three_rounds_with_six_bots_from_creation_to_final_standings(
    live_server: LiveServer,
) -> None:
    host = await Host.start(live_server.url)
    code = await host.create(name="club night", rounds=3, race_size=4, time_limit=120)
    await host.control(HostAction.OPEN)
    await host.until(lambda s: s.status is TournamentStatus.OPEN)
    bots = [
        await BotPlayer.enter(
            live_server.url, f"bot{n}", code, "greedy" if n % 2 else "random", seed=n
        )
        for n in range(6)
    ]
    await host.until(lambda s: len(s.standings) == 6)
    finished = lambda s: s.status is TournamentStatus.FINISHED  # noqa: E731
    players = [asyncio.create_task(bot.play(finished)) for bot in bots]
    for number in (1, 2, 3):
        await host.control(HostAction.START)
        state = await host.until(round_over(number))
    await wait_all(*players)
    assert state.status is TournamentStatus.FINISHED
    assert [line.games for line in state.standings] == [3] * 6
    keys = [(-line.points, -line.stock_left, line.time_ms) for line in state.standings]
    assert keys == sorted(keys)
    assert state.standings[0].place == 1

    export = await host.export()
    assert len(export.games) == 6, "two races of three in each of three rounds"
    for game in export.games:
        assert verify_result(game.to_result()).ok
    assert verify_document(document_from(export)) == []
    seeds = {game.race.rsplit("-", 1)[0]: game.seed for game in export.games}
    for game in export.games:
        assert game.seed == seeds[game.race.rsplit("-", 1)[0]], "a round's races share a seed"
    for bot in bots:
        await bot.close()
    await host.close()


async def test_a_host_command_is_refused_without_the_host_token(live_server: LiveServer) -> None:
    host = await Host.start(live_server.url)
    code = await host.create(name="cup")
    intruder = await Host.start(live_server.url, "intruder")
    intruder.code = code
    for action in (HostAction.OPEN, HostAction.START, HostAction.END):
        await intruder.control(action, token="not-the-host-token-at-all")
        error = await intruder.error()
        assert error.code is ErrorCode.NOT_HOST
    state = await intruder.watch(code)
    assert state.status is TournamentStatus.CREATED
    await host.control(HostAction.OPEN)
    await host.until(lambda s: s.status is TournamentStatus.OPEN)
    await intruder.close()
    await host.close()


async def test_an_arena_of_three_minutes_on_an_injected_clock(tmp_path: Path) -> None:
    clock = FakeClock()
    config = dataclasses.replace(
        fast_config(tmp_path / "foursquare.db"),
        rate_per_second=1000.0,
        rate_burst=1000,
        clock=clock,
        quick_countdown=0.0,  # the clock stands still: no countdown would ever end
    )
    async with start_live_server(config) as live:
        assert live.server is not None
        host = await Host.start(live.url)
        code = await host.create(
            name="blitz arena",
            format=TournamentFormat.ARENA,
            arena_duration=180,
            race_size=3,
            time_limit=60,
        )
        await host.control(HostAction.OPEN)
        bots = [
            await BotPlayer.enter(live.url, f"bot{n}", code, "random", seed=n) for n in range(6)
        ]
        finished = lambda s: s.status is TournamentStatus.FINISHED  # noqa: E731
        players = [asyncio.create_task(bot.play(finished)) for bot in bots]
        await host.control(HostAction.START)
        state = await host.until(lambda s: s.ends_at is not None)
        ends_at = state.ends_at
        games_seen = 0
        while state.status is not TournamentStatus.FINISHED:
            state = await host.until(lambda s: True)
            games = sum(line.games for line in state.standings)
            if games > games_seen:
                # A race was counted: let twenty seconds pass on the server's clock.
                games_seen = games
                clock.now += 20.0
                live.server.race_tier.tournaments.wake()
        await wait_all(*players)
        export = await host.export()
        assert len(export.games) >= 4, "races kept forming while the window was open"
        assert all(len(game.standings) <= 3 for game in export.games)
        assert all(verify_result(game.to_result()).ok for game in export.games)
        assert verify_document(document_from(export)) == [], "the games give the standings"
        assert ends_at is not None
        assert all(game.started_at <= ends_at for game in export.games)
        assert sum(line.games for line in state.standings) == sum(
            len(game.standings) for game in export.games
        )
        for bot in bots:
            await bot.close()
        await host.close()


async def test_the_host_removes_an_entrant_mid_round_and_the_round_still_ends(
    live_server: LiveServer,
) -> None:
    host = await Host.start(live_server.url)
    code = await host.create(name="strict cup", rounds=1, race_size=4, time_limit=600)
    await host.control(HostAction.OPEN)
    stays = [await BotPlayer.enter(live_server.url, f"bot{n}", code, seed=n) for n in range(2)]
    # This entrant never moves: only its removal lets the round end before the time limit.
    idle = await Player.connect(live_server.url, "idle")
    await idle.send(JoinTournament(tournament=code, id=1))
    await idle.until(lambda s: s.you == idle.player_id)
    done = lambda s: s.status is TournamentStatus.FINISHED  # noqa: E731
    playing = [asyncio.create_task(bot.play(done)) for bot in stays]
    await host.control(HostAction.START)
    await host.until(lambda s: bool(s.races))
    await host.control(HostAction.REMOVE, entrant=idle.player_id)
    final = await host.until(done)
    await wait_all(*playing)
    assert len(final.standings) == 2
    assert idle.player_id not in {line.entrant for line in final.standings}
    (game,) = (await host.export()).games
    assert {s.racer: s.status.value for s in game.standings}[idle.player_id] == "resigned"
    for player in (*stays, idle, host):
        await player.close()


async def test_a_tournament_race_counts_down_before_its_first_card(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "foursquare.db"), quick_countdown=1.0)
    async with start_live_server(config) as live:
        host = await Host.start(live.url)
        code = await host.create(name="countdown cup", rounds=1, race_size=2, time_limit=60)
        await host.control(HostAction.OPEN)
        players = [await Player.connect(live.url, name) for name in ("ann", "bob")]
        for player in players:
            await player.send(JoinTournament(tournament=code, id=1))
            await player.until(lambda s, p=player: s.you == p.player_id)  # type: ignore[misc]
        await host.control(HostAction.START)
        for player in players:
            dealt = await player.client.expect(RaceSnapshot)
            assert dealt.state is RaceState.COUNTDOWN and dealt.starts_at is not None
            assert dealt.options.countdown == 1  # the same countdown as any race
            assert 0 < dealt.starts_at - dealt.server_time <= 1000
            started = await player.client.expect(RaceSnapshot, state=RaceState.RUNNING)
            assert started.started_at is not None and started.started_at >= dealt.starts_at
            card = await player.client.expect(CardToPlace)
            assert card.move == 1
            kinds = [type(m) for m in player.client.received]
            assert kinds.index(CardToPlace) > kinds.index(RaceSnapshot)
        for player in (*players, host):
            await player.close()


async def test_every_tournament_state_to_an_entrant_names_it(live_server: LiveServer) -> None:
    """An entrant's ``tournament`` messages, answers and broadcasts alike, carry its ``you``;
    a watcher's carry none."""
    host = await Host.start(live_server.url)
    code = await host.create(name="you", rounds=1, race_size=2)
    await host.control(HostAction.OPEN)
    watcher = await Player.connect(live_server.url, "watcher")
    await watcher.watch(code)
    entrants = [await BotPlayer.enter(live_server.url, f"bot{n}", code) for n in range(2)]
    for entrant in entrants:
        await entrant.until(lambda state: len(state.standings) == 2)
    await watcher.until(lambda state: len(state.standings) == 2)
    await host.control(HostAction.START)
    for entrant in entrants:
        await entrant.until(lambda state: bool(state.races))
    def states(player: Player) -> list[TournamentState]:
        received: list[object] = list(player.client.received)
        return [m for m in received if isinstance(m, TournamentState)]

    for entrant in entrants:
        assert len(states(entrant)) >= 3
        assert {s.you for s in states(entrant)} == {entrant.player_id}
    assert {s.you for s in states(watcher)} == {None}
    for player in (host, watcher, *entrants):
        await player.close()


async def test_a_tournament_journal_write_that_fails_stops_the_server_unanswered(
    live_server: LiveServer,
) -> None:
    # One journal-failure policy for races and tournaments alike: what could not be
    # stored is never announced, and the server stops (a restart recovers what is stored).
    host = await Host.start(live_server.url)
    code = await host.create(name="club night", rounds=1, race_size=2, time_limit=120)
    await host.control(HostAction.OPEN)
    await host.until(lambda s: s.status is TournamentStatus.OPEN)
    with sqlite3.connect(live_server.db_path) as connection:
        connection.execute("DROP TABLE tournament_events")
    connection.close()
    entrant = await Player.connect(live_server.url, "ann")
    await entrant.send(JoinTournament(tournament=code, id=entrant.client.next_id()))
    with pytest.raises(ConnectionClosed):
        while True:
            message = await entrant.receive()
            assert not isinstance(message, TournamentState), "a join not stored was answered"
    assert entrant.client.connection.close_code == CloseCode.GOING_AWAY
    assert live_server.server is not None and live_server.server.failed
    failure = live_server.server.failure_sentence
    assert failure is not None and "no such table: tournament_events" in failure
