"""The host's console in the page runs a two-round tournament of bots, while the terminal
client's tournament app (``foursquare watch --tournament CODE``) watches it to the end."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from playwright.async_api import Page, expect

from client.connection import Connection
from client.screens.tournament import TournamentScreen
from client.tournament_app import TournamentApp
from client.tournament_bot import run_tournament_bots
from protocol import Role
from protocol.tournament import TournamentStatus
from tests.client.test_live import QUICK_RETRY, wait_until
from tests.conftest import LiveServer
from tests.web.conftest import Screenshot
from tests.web.test_tournament_entrant import standings_in_page


def terminal_text(app: TournamentApp, selector: str) -> str:
    """What a widget of the terminal app's screen shows."""
    return str(app.screen.query_one(selector).render())


def terminal_standings(app: TournamentApp) -> list[tuple[str, str, str, str]]:
    """The terminal's standings as it shows them: place, name, points, games."""
    screen = app.screen
    assert isinstance(screen, TournamentScreen)
    return [(row[0], row[1].removesuffix(" [bot]"), row[2], row[5])
            for row in screen.standings_text()]


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

    # The terminal client's spectator, as `foursquare watch --tournament CODE` runs it.
    watcher = TournamentApp(
        Connection(live_server.url, "terminal", role=Role.SPECTATOR, backoff=QUICK_RETRY),
        code, playing=False)
    bots: asyncio.Task[object] | None = None
    async with watcher.run_test(size=(120, 40)) as pilot:
        try:
            await wait_until(pilot, lambda: watcher.tournament.state is not None,
                             "the terminal to see the tournament")
            await page.click("#open")
            await expect(page.locator("#phase")).to_contain_text("Registration is open")
            bots = asyncio.create_task(run_tournament_bots(
                live_server.url, code, "greedy", count=3, pace=0.03))
            await expect(page.locator("#tournament-standings tbody tr")).to_have_count(3)
            await wait_until(pilot, lambda: len(terminal_standings(watcher)) == 3,
                             "the terminal to list three entrants")

            await page.click("#start")
            await expect(page.locator("#phase")).to_contain_text("Round 1 of 2")
            await expect(page.locator("#tournament-races a.watch-race")).to_have_count(1)
            await screenshot(page, "host")
            # A spectator's page of the tournament: the race in progress, a click away,
            # and a link for a player to enter the tournament.
            spectator = await page.context.new_page()
            await spectator.goto(f"{live_server.http_url}/t/{code}")
            await expect(spectator.locator("#phase")).to_contain_text("Round 1 of 2")
            await expect(spectator.locator("#enter")).to_have_attribute("href", f"/t/{code}/play")
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
            await wait_until(pilot, lambda: "paused" in terminal_text(watcher, "#phase"),
                             "the terminal to show the pause")
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
            rounds = sorted(game["race"].split("-R")[1][0] for game in export["games"])
            assert rounds == ["1", "2"]
            await expect(page.locator("#export-verify")).to_contain_text("✓ all 2 games verified")
            await screenshot(page, "host-finished")

            # The terminal's screen shows the same final standings as the console's.
            await wait_until(pilot, lambda: terminal_text(watcher, "#phase")
                             == "Finished · final standings.", "the terminal to show the end")
            await pilot.pause()
            shown = terminal_standings(watcher)
            assert len(shown) == 2
            assert shown == await standings_in_page(page)
            final = watcher.tournament.state
            assert final is not None and final.status is TournamentStatus.FINISHED
        finally:
            if bots is not None:
                bots.cancel()
