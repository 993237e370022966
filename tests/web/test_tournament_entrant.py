"""A person enters a tournament from the page and races it to the end against bots: the
lobby's form, the standings while waiting, each round's race in the page (by clicks, then
by keys), back to the standings between rounds, and the final standings."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from playwright.async_api import Dialog, Page, expect

from client.tournament_bot import run_tournament_bots
from protocol.tournament import HostAction, TournamentFormat, TournamentState, TournamentStatus
from tests.conftest import LiveServer
from tests.tournament.players import Host, round_over
from tests.web.conftest import Screenshot
from tests.web.racing import wait_for
from tests.web.test_play import play_to_the_end

ROWS = "#tournament-standings tbody tr"


async def standings_in_page(page: Page) -> list[tuple[str, str, str, str]]:
    """The standings as the page shows them: place, name, points, games."""
    rows = []
    for row in await page.locator(ROWS).all():
        cells = [await cell.inner_text() for cell in await row.locator("td").all()]
        name = cells[1].replace(" [bot]", "").replace(" (you)", "")
        rows.append((cells[0], name, cells[2], cells[5]))
    return rows


def standings_of(state: TournamentState) -> list[tuple[str, str, str, str]]:
    """The same four columns from the server's state."""
    return [
        (f"{'=' if line.tied else ''}{line.place}", line.name, str(line.points), str(line.games))
        for line in state.standings
    ]


async def race_a_round(
    page: Page, place: str, at_move: dict[int, Callable[[], Awaitable[object]]] | None = None
) -> int:
    """Race the round's race in the page once it is dealt; returns the moves made."""
    await expect(page.locator("#in-hand .card")).to_be_visible(timeout=30_000)
    moves = await play_to_the_end(page, place, at_move)
    await expect(page.locator(".verify")).to_contain_text("✓ verified", timeout=60_000)
    await expect(page.locator(".standings tr.you td").nth(3)).to_have_text(str(moves))
    return moves


async def test_a_person_enters_a_tournament_from_the_lobby_and_races_it_to_the_end(
    page: Page, live_server: LiveServer, screenshot: Screenshot
) -> None:
    host = await Host.start(live_server.url)
    code = await host.create(name="Club night", rounds=2, race_size=4, time_limit=300)
    await host.control(HostAction.OPEN)
    await host.until(lambda s: s.status is TournamentStatus.OPEN)

    async def accept(dialog: Dialog) -> None:
        await dialog.accept()

    page.on("dialog", accept)  # "Leave the tournament?"
    await page.goto(live_server.http_url + "/")
    await page.fill("#name", "Dee")
    await page.fill("#entry-code", code.lower())
    await page.click("#enter-tournament")
    await page.wait_for_url(f"**/t/{code}/play")
    line = page.locator("#entrant-line")
    await expect(line).to_contain_text("You are in")
    await expect(page.locator(f"{ROWS}.you")).to_contain_text("Dee (you)")
    # Leaving keeps the entrant in the standings, as "left"; entering again makes it active.
    await page.click("#leave-tournament")
    await expect(line).to_contain_text("You have left")
    await expect(page.locator(f"{ROWS}.you")).to_contain_text("(left)")
    await page.click("#enter-again")
    await expect(line).to_contain_text("You are in")

    bots = asyncio.create_task(run_tournament_bots(
        live_server.url, code, "greedy", count=2, pace=0.05))
    try:
        await expect(page.locator(ROWS)).to_have_count(3)
        await expect(page.locator("#phase")).to_contain_text("Registration is open · 3 entrants")
        await screenshot(page, "entrant-waiting")
        await host.until(lambda s: len(s.standings) == 3)

        await host.control(HostAction.START)
        await race_a_round(page, "click", {3: lambda: screenshot(page, "entrant-race")})
        await screenshot(page, "entrant-results")
        await page.click("#back-to-standings")
        await host.until(round_over(1))
        await expect(page.locator("#phase")).to_contain_text("Round 1 of 2 over")
        await expect(page.locator(f"{ROWS}.you td").nth(5)).to_have_text("1")
        await screenshot(page, "entrant-between-rounds")

        async def reload() -> None:
            # A new page: the session comes back from the tab's storage, and the race with
            # it, board and card, from the server.
            before = await page.locator("#my-board .card").count()
            await page.reload()
            await expect(page.locator("#in-hand .card")).to_be_visible()
            assert await page.locator("#my-board .card").count() == before

        await host.control(HostAction.START)
        # The page leaves the standings for the race itself.
        await race_a_round(page, "keys", {3: reload})
        await page.click("#back-to-standings")
        final = await host.until(lambda s: s.status is TournamentStatus.FINISHED)
        await expect(page.locator("#phase")).to_have_text("Finished · final standings.")
        await expect(line).to_contain_text("You finished")
        assert await standings_in_page(page) == standings_of(final)
        assert [row[3] for row in standings_of(final)] == ["2", "2", "2"]
        await screenshot(page, "entrant-final")
        # The last race's results stay a click away.
        await page.click("#last-race")
        await expect(page.locator(".verify")).to_contain_text("✓ verified")
    finally:
        bots.cancel()
        await host.close()


async def test_an_unknown_tournament_code_is_a_sentence(
    page: Page, live_server: LiveServer
) -> None:
    await page.goto(live_server.http_url + "/")
    await page.fill("#name", "Eve")
    await page.fill("#entry-code", "NOPE42")
    await page.click("#enter-tournament")
    await expect(page.locator("#refusal")).to_contain_text("NOPE42")


async def test_an_arena_entrant_takes_a_break_from_pairing_then_is_paired(
    page: Page, live_server: LiveServer
) -> None:
    server = live_server.server
    assert server is not None
    host = await Host.start(live_server.url)
    code = await host.create(name="Blitz", format=TournamentFormat.ARENA, race_size=2,
                             arena_duration=600)
    await host.control(HostAction.OPEN)
    await host.control(HostAction.START)
    await host.until(lambda s: s.status is TournamentStatus.RUNNING)

    await page.goto(f"{live_server.http_url}/t/{code}/play")  # the address itself asks a name
    await page.fill("#name", "Fay")
    await page.click("#name-form button")
    line = page.locator("#entrant-line")
    await expect(line).to_contain_text("Waiting to be paired")
    you = await page.locator(f"{ROWS}.you").get_attribute("data-entrant")
    assert you is not None
    entrants = server.race_tier.tournaments.tournaments[code].entrants

    await page.click("#arena-available")
    await expect(line).to_contain_text("You are taking a break")
    await wait_for(lambda: not entrants[you].available, "the server to leave Fay out of pairing")
    await page.click("#arena-available")
    await expect(line).to_contain_text("Waiting to be paired")
    await wait_for(lambda: entrants[you].available, "the server to pair Fay again")

    # A bot enters: the two are paired, and the page opens the race.
    bot = asyncio.create_task(run_tournament_bots(live_server.url, code, "greedy", pace=0.2))
    try:
        await expect(page.locator("#in-hand .card")).to_be_visible(timeout=30_000)
        await expect(page.locator("#leaderboard")).to_contain_text("bot-1")
    finally:
        bot.cancel()
        await host.close()


async def test_a_person_early_for_registration_is_entered_when_it_opens(
    page: Page, live_server: LiveServer
) -> None:
    host = await Host.start(live_server.url)
    code = await host.create(name="Club night", rounds=1, race_size=4)
    await page.goto(live_server.http_url + "/")
    await page.fill("#name", "Gus")
    await page.fill("#entry-code", code)
    await page.click("#enter-tournament")
    await expect(page.locator("#phase")).to_contain_text("Not open yet")
    await expect(page.locator(ROWS)).to_have_count(0)
    await host.control(HostAction.OPEN)
    await expect(page.locator("#entrant-line")).to_contain_text("You are in")
    await expect(page.locator(f"{ROWS}.you")).to_contain_text("Gus (you)")
    await host.close()
