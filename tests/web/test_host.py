"""The host's console in the page runs a two-round tournament of bots, while a spectator
of the terminal client's kind watches the same tournament over the wire."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from playwright.async_api import Page, expect

from client.tournament_bot import run_tournament_bots
from protocol import Role
from protocol.tournament import (
    TournamentState,
    TournamentStatus,
    WatchTournament,
    encode_tournament,
)
from tests.conftest import LiveServer
from tests.server.wire_client import WireClient
from tests.web.conftest import Screenshot
from tests.web.racing import wait_for


async def test_a_host_runs_a_two_round_tournament_from_the_console(
    page: Page, live_server: LiveServer, screenshot: Screenshot, tmp_path: Path
) -> None:
    await page.goto(live_server.http_url + "/")
    await expect(page.locator("#open-races")).to_contain_text("None right now")
    await screenshot(page, "home")
    await page.fill("#tournament-name", "Club night")
    await page.fill("#tournament-rounds", "2")
    await page.fill("#tournament-time-limit", "120")
    await page.click("#host")
    await page.wait_for_url("**/host/*")
    code = page.url.split("/host/")[1].split("#")[0]
    assert len(page.url.split("#")[1]) >= 16  # the token, in the fragment only
    await expect(page.locator("#phase")).to_contain_text("Not open yet")

    watcher = await WireClient.connect(live_server.url, "terminal", role=Role.SPECTATOR)
    await watcher.connection.send(encode_tournament(WatchTournament(tournament=code)))
    seen: list[TournamentState] = []

    async def watch() -> None:
        while True:
            decoded = await watcher.receive()
            if isinstance(decoded, TournamentState):
                seen.append(decoded)

    watching = asyncio.create_task(watch())
    bots: asyncio.Task[object] | None = None
    try:
        await page.click("#open")
        await expect(page.locator("#phase")).to_contain_text("Registration is open")
        bots = asyncio.create_task(run_tournament_bots(
            live_server.url, code, "greedy", count=3, pace=0.03))
        await expect(page.locator("#tournament-standings tbody tr")).to_have_count(3)

        await page.click("#start")
        await expect(page.locator("#phase")).to_contain_text("Round 1 of 2")
        await expect(page.locator("#tournament-races a.watch-race")).to_have_count(1)
        await screenshot(page, "host")
        # A spectator's page of the tournament: the race in progress, a click away.
        spectator = await page.context.new_page()
        await spectator.goto(f"{live_server.http_url}/t/{code}")
        await expect(spectator.locator("#phase")).to_contain_text("Round 1 of 2")
        await screenshot(spectator, "tournament")
        await spectator.locator("#tournament-races a.watch-race").click()
        await expect(spectator.locator(".tile")).to_have_count(3)
        await spectator.close()
        await expect(page.locator("#phase")).to_contain_text("Round 1 of 2 over")
        games = page.locator("#tournament-standings tbody td:nth-child(6)")
        await expect(games.first).to_have_text("1")

        await page.fill("#remove-name", "bot-3")
        await page.click("#remove")
        # A removed entrant is left out of the standings.
        await expect(page.locator("#tournament-standings")).not_to_contain_text("bot-3")
        await expect(page.locator("#console-log li").first).to_have_text(
            re.compile(r"remove bot-3 \(p-\S+\): done"))
        await page.click("#pause")
        await expect(page.locator("#phase")).to_contain_text("paused by the host")
        await page.click("#resume")
        await expect(page.locator("#phase")).not_to_contain_text("paused")

        await page.click("#start")
        await expect(page.locator("#phase")).to_contain_text("Finished", timeout=60_000)
        await expect(page.locator("#console-log li.failed")).to_have_count(0)

        async with page.expect_download() as download_info:
            await page.click("#export")
        download = await download_info.value
        saved = tmp_path / "export.json"
        await download.save_as(saved)
        export = json.loads(saved.read_text())
        assert export["state"]["status"] == "finished"
        assert sorted(game["race"].split("-R")[1][0] for game in export["games"]) == ["1", "2"]
        await expect(page.locator("#export-verify")).to_contain_text("✓ all 2 games verified")
        await screenshot(page, "host-finished")

        # The terminal's spectator saw the same tournament to the same end.
        await wait_for(lambda: bool(seen) and seen[-1].status is TournamentStatus.FINISHED,
                       "the spectator to see the end")
        final = seen[-1]
        assert [s.name for s in final.standings] == [
            (await row.locator("td").nth(1).inner_text()).split(" [bot]")[0]
            for row in await page.locator("#tournament-standings tbody tr").all()
        ]
        assert any(state.paused for state in seen)
    finally:
        watching.cancel()
        if bots is not None:
            bots.cancel()
        await watcher.close()
