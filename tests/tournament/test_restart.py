"""A tournament survives SIGKILL: between rounds and during one, standings come back intact."""

from __future__ import annotations

import asyncio
from pathlib import Path

from protocol.result import verify_result
from protocol.tournament import HostAction, TournamentState, TournamentStatus
from server.tournament_export import document_from, verify_document
from tests.conftest import run_server_process
from tests.tournament.players import BotPlayer, Host, round_over, wait_all

#: Under the server's default rate limit of 20 messages a second.
PACE = 0.06


def totals(state: TournamentState) -> list[tuple[str, int, int, int, int]]:
    return [(s.entrant, s.place, s.points, s.stock_left, s.games) for s in state.standings]


def finished(state: TournamentState) -> bool:
    return state.status is TournamentStatus.FINISHED


async def test_a_tournament_killed_between_and_during_rounds_goes_on(tmp_path: Path) -> None:
    db = tmp_path / "foursquare.db"
    with run_server_process(db) as server:
        host = await Host.start(server.url)
        code = await host.create(name="durable cup", rounds=3, race_size=2, time_limit=300)
        await host.control(HostAction.OPEN)
        bots = [
            await BotPlayer.enter(server.url, f"bot{n}", code, "random", seed=n, pace=PACE)
            for n in range(4)
        ]
        playing = [asyncio.create_task(bot.play(finished)) for bot in bots]
        await host.control(HostAction.START)
        after_round_one = await host.until(round_over(1))
        round_one = (await host.export()).games
        token = host.token
        server.kill()  # between rounds
        await wait_all(*playing)

    with run_server_process(db) as server:
        host = await Host.start(server.url, "host-again")
        host.code, host.token = code, token
        state = await host.watch(code)
        assert totals(state) == totals(after_round_one)
        for bot in bots:
            await bot.reconnect(server.url)
        playing = [asyncio.create_task(bot.play(finished)) for bot in bots]
        await host.control(HostAction.START)
        await host.until(lambda s: s.round == 2 and bool(s.races))
        sent = sum(bot.moves_sent for bot in bots)
        while sum(bot.moves_sent for bot in bots) < sent + 12:
            await asyncio.sleep(0.05)
        server.kill()  # during round two
        await wait_all(*playing)

    with run_server_process(db) as server:
        host = await Host.start(server.url, "host-third")
        host.code, host.token = code, token
        state = await host.watch(code)
        assert state.round == 2 and state.races, "round two is still being raced"
        assert [games for *_, games in totals(state)] == [1, 1, 1, 1]
        for bot in bots:
            await bot.reconnect(server.url)
        playing = [asyncio.create_task(bot.play(finished)) for bot in bots]
        await host.until(round_over(2))
        await host.control(HostAction.START)
        final = await host.until(finished)
        await wait_all(*playing)
        assert [s.games for s in final.standings] == [3, 3, 3, 3]
        export = await host.export()
        assert len(export.games) == 6
        assert all(verify_result(game.to_result()).ok for game in export.games)
        assert verify_document(document_from(export)) == []
        assert export.games[:2] == round_one, "round one's records came through untouched"
        for bot in bots:
            await bot.close()
        await host.close()
