"""The host console exports a tournament of more games than one page holds: it asks for
every page and saves one record, each game checked in the page. A finished tournament in
the real server's store, read by the real page in Chromium."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.async_api import Page, expect

from protocol.tournament import EXPORT_PAGE_GAMES
from tests.conftest import fast_config, start_live_server
from tests.tournament.racing import HOST
from tests.tournament.test_export_pages import stored_tournament


async def test_the_console_joins_the_pages_of_an_export_into_one_record(
    page: Page, tmp_path: Path
) -> None:
    # Races of two in rounds of ten: more games than one page's count, in two pages.
    rounds = EXPORT_PAGE_GAMES // 10 + 1
    stored = stored_tournament(tmp_path / "foursquare.db", 20, 2, rounds)
    games = len(stored.export.games)
    async with start_live_server(fast_config(stored.path)) as live:
        await page.goto(f"{live.http_url}/host/{stored.code}#{HOST}")
        await expect(page.locator("#phase")).to_contain_text("Finished")
        async with page.expect_download() as download_info:
            await page.click("#export")
        saved = tmp_path / "export.json"
        await (await download_info.value).save_as(saved)
        export = json.loads(saved.read_text())
        assert "next" not in export and export["state"]["status"] == "finished"
        assert [game["race"] for game in export["games"]] == [
            game.race for game in stored.export.games
        ]
        await expect(page.locator("#export-verify")).to_contain_text(
            f"✓ all {games} games verified", timeout=60_000
        )
