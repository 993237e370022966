"""``foursquare tournament``: create, host and export through the command line, then verify."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import re
from pathlib import Path

from cli.main import main
from protocol.tournament import TournamentStatus
from tests.conftest import LiveServer
from tests.tournament.players import BotPlayer, Player, round_over, wait_all


async def foursquare(*argv: str) -> tuple[int, str]:
    """Run the command line in a thread (it runs its own event loop); status and output."""

    def run() -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = main(list(argv))
        return status, out.getvalue()

    return await asyncio.to_thread(run)


async def test_a_tournament_hosted_from_the_command_line_exports_a_verifiable_record(
    live_server: LiveServer, tmp_path: Path
) -> None:
    url = live_server.url
    status, out = await foursquare(
        "tournament",
        "create",
        "--server",
        url,
        "--name",
        "cli cup",
        "--rounds",
        "2",
        "--race-size",
        "2",
    )
    assert status == 0
    code = re.search(r"join code:\s+(\S+)", out)[1]  # type: ignore[index]
    token = re.search(r"host token:\s+(\S+)", out)[1]  # type: ignore[index]

    status, _ = await foursquare(
        "tournament", "open", code, "--server", url, "--token", "wrong-token-123456"
    )
    assert status == 1, "a wrong token is refused"
    assert (await foursquare("tournament", "open", code, "--server", url, "--token", token))[0] == 0

    bots = [await BotPlayer.enter(url, f"bot{n}", code, "random", seed=n) for n in range(3)]
    done = lambda s: s.status is TournamentStatus.FINISHED  # noqa: E731
    playing = [asyncio.create_task(bot.play(done)) for bot in bots]
    watcher = await Player.connect(url, "watcher", bot=False)
    await watcher.watch(code)
    for number in (1, 2):
        status, out = await foursquare(
            "tournament", "start-round", code, "--server", url, "--token", token
        )
        assert status == 0 and f"round {number} of 2" in out
        await watcher.until(round_over(number))
    await wait_all(*playing)

    status, out = await foursquare("tournament", "standings", code, "--server", url)
    assert status == 0 and "finished" in out and out.count("points") == 3

    exported = tmp_path / "cup.json"
    games = tmp_path / "games"
    status, _ = await foursquare(
        "tournament",
        "export",
        code,
        "--server",
        url,
        "-o",
        str(exported),
        "--games-dir",
        str(games),
    )
    assert status == 0
    record = json.loads(exported.read_text())
    assert len(record["games"]) == 4 and len(record["standings"]) == 3
    for game in sorted(games.iterdir()):
        status, out = await foursquare("verify", str(game))
        assert status == 0, out
    status, out = await foursquare("tournament", "verify", str(exported))
    assert status == 0, out

    from_db = tmp_path / "from-db.json"
    status, _ = await foursquare(
        "tournament", "export", code, "--db", str(live_server.db_path), "-o", str(from_db)
    )
    assert status == 0
    assert json.loads(from_db.read_text())["standings"] == record["standings"]

    csv_file = tmp_path / "cup.csv"
    status, _ = await foursquare(
        "tournament", "export", code, "--server", url, "--format", "csv", "-o", str(csv_file)
    )
    rows = csv_file.read_text().splitlines()
    assert status == 0 and len(rows) == 1 + 3 + 2 * (2 + 1), (
        "a header, the standings, one row per racer per game"
    )

    record["standings"][0]["points"] += 1
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(record))
    status, out = await foursquare("tournament", "verify", str(tampered))
    assert status == 1 and "REFUTED" in out
    for bot in bots:
        await bot.close()
    await watcher.close()
