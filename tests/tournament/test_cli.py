"""``foursquare tournament``: create, host and export through the command line, then verify."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import json
import re
from pathlib import Path

import pytest

from cli.main import main
from protocol.tournament import TournamentStatus
from server.config import ServerConfig
from tests.conftest import LiveServer, start_live_server
from tests.tournament.players import BotPlayer, Player, round_over, wait_all


async def foursquare(*argv: str) -> tuple[int, str]:
    """Run the command line in a thread (it runs its own event loop); status and output."""

    def run() -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            status = main(list(argv))
        return status, out.getvalue()

    return await asyncio.to_thread(run)


async def export_and_verify(url: str, code: str, exported: Path) -> str:
    """Export tournament ``code`` from the server at ``url`` to ``exported`` and verify the
    file with the command line, both succeeding; what ``verify`` printed."""
    status, _ = await foursquare("tournament", "export", code, "--server", url, "-o", str(exported))
    assert status == 0
    status, out = await foursquare("tournament", "verify", str(exported))
    assert status == 0, out
    return out


async def create_tournament(url: str, rounds: int) -> tuple[str, str]:
    """Create a tournament of races of two with the command line: its code and token."""
    status, out = await foursquare(
        "tournament", "create", "--server", url, "--name", "cli cup", "--rounds", str(rounds),
        "--race-size", "2",
    )
    assert status == 0
    code = re.search(r"join code:\s+(\S+)", out)[1]  # type: ignore[index]
    token = re.search(r"host token:\s+(\S+)", out)[1]  # type: ignore[index]
    return code, token


async def play_rounds(
    url: str, code: str, token: str, rounds: int, entrants: int
) -> tuple[list[BotPlayer], Player]:
    """Bots enter the open tournament and play every round, each started with the command
    line; the bots, and a player who watched it all."""
    bots = [
        await BotPlayer.enter(url, f"bot{n}", code, "random", seed=n) for n in range(entrants)
    ]
    done = lambda s: s.status is TournamentStatus.FINISHED  # noqa: E731
    playing = [asyncio.create_task(bot.play(done)) for bot in bots]
    watcher = await Player.connect(url, "watcher", bot=False)
    await watcher.watch(code)
    for number in range(1, rounds + 1):
        status, out = await foursquare(
            "tournament", "start-round", code, "--server", url, "--token", token
        )
        assert status == 0 and f"round {number} of {rounds}" in out
        await watcher.until(round_over(number))
    await wait_all(*playing)
    return bots, watcher


async def test_a_tournament_hosted_from_the_command_line_exports_a_verifiable_record(
    live_server: LiveServer, tmp_path: Path
) -> None:
    url = live_server.url
    code, token = await create_tournament(url, rounds=2)

    status, _ = await foursquare(
        "tournament", "open", code, "--server", url, "--token", "wrong-token-123456"
    )
    assert status == 1, "a wrong token is refused"
    assert (await foursquare("tournament", "open", code, "--server", url, "--token", token))[0] == 0

    bots, watcher = await play_rounds(url, code, token, rounds=2, entrants=3)

    status, out = await foursquare("tournament", "standings", code, "--server", url)
    assert status == 0 and "finished" in out and out.count(" point") == 3

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
    # A place that cannot be written: a sentence and exit code 2, not a traceback.
    for unwritable in (
        ("-o", str(tmp_path / "missing" / "cup.json")),
        ("--games-dir", str(exported)),  # a file, not a directory
    ):
        refused = io.StringIO()
        with contextlib.redirect_stderr(refused):
            status, _ = await foursquare("tournament", "export", code, "--server", url, *unwritable)
        # (The server in this process may log to the redirected stream meanwhile.)
        assert status == 2 and "\nerror: cannot write " in "\n" + refused.getvalue(), refused

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


async def foursquare_err(
    capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, str]:
    """Run the command line in a thread; its status and the ``error:`` lines it printed
    (the server in this process logs to the same stderr)."""
    capsys.readouterr()
    status = await asyncio.to_thread(main, list(argv))
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    return status, "\n".join(said)


async def test_the_host_commands_speak_in_words_and_remove_an_entrant_by_name(
    live_server: LiveServer, capsys: pytest.CaptureFixture[str]
) -> None:
    url = live_server.url
    status, out = await foursquare("tournament", "create", "--server", url, "--name", "words")
    code = re.search(r"join code:\s+(\S+)", out)[1]  # type: ignore[index]
    token = re.search(r"host token:\s+(\S+)", out)[1]  # type: ignore[index]
    host = ("--server", url, "--token", token)

    status, err = await foursquare_err(capsys, "tournament", "open", code, "--server", url,
                                       "--token", "short")
    assert status == 2 and err.startswith("error: that is not a host token")
    assert (await foursquare("tournament", "open", code, *host))[0] == 0
    status, err = await foursquare_err(capsys, "tournament", "open", code, *host)
    assert status == 1
    assert err == "error: Not now: it is already open; the tournament is open."

    ann = await BotPlayer.enter(url, "ann", code)
    twins = [await BotPlayer.enter(url, "twin", code, seed=n) for n in range(2)]
    status, err = await foursquare_err(capsys, "tournament", "remove", code, "TWIN", *host)
    assert status == 1 and err.startswith("error: 2 entrants are called 'TWIN' (")
    assert err.endswith("): give the id") and all(twin.player_id in err for twin in twins)
    status, err = await foursquare_err(capsys, "tournament", "remove", code, "bob", *host)
    assert status == 1 and f"no entrant of {code} is called 'bob'" in err
    status, out = await foursquare("tournament", "remove", code, "Ann", *host)
    assert status == 0 and "ann" not in out and out.count("twin") == 2
    status, out = await foursquare("tournament", "remove", code, twins[0].player_id, *host)
    assert status == 0 and out.count("twin") == 1
    assert "0 points" in out and "0 games" in out and "0 races running" in out
    for player in (ann, *twins):
        await player.close()


def test_a_host_command_to_a_server_that_is_not_there_says_so_in_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["tournament", "standings", "K7Q2MX", "--server", "ws://127.0.0.1:1"]) == 1
    assert capsys.readouterr().err == (
        "error: Cannot reach the server at ws://127.0.0.1:1: nothing answers there "
        "(is the server running?).\n"
    )



async def test_a_tournament_on_postgresql_exports_from_the_database(
    server_config: ServerConfig, postgres_url: str, tmp_path: Path
) -> None:
    config = dataclasses.replace(server_config, db=postgres_url)
    async with start_live_server(config) as live:
        code, token = await create_tournament(live.url, rounds=1)
        assert (await foursquare("tournament", "open", code, "--server", live.url,
                                 "--token", token))[0] == 0
        bots, watcher = await play_rounds(live.url, code, token, rounds=1, entrants=2)
        from_server, from_db = tmp_path / "server.json", tmp_path / "db.json"
        games = tmp_path / "games"
        assert (await foursquare("tournament", "export", code, "--server", live.url,
                                 "-o", str(from_server)))[0] == 0
        for player in (*bots, watcher):
            await player.close()
    # The server has stopped: the record comes from the database alone.
    status, _ = await foursquare("tournament", "export", code, "--db", postgres_url,
                                 "-o", str(from_db), "--games-dir", str(games))
    assert status == 0
    record = json.loads(from_db.read_text())
    assert record["standings"] == json.loads(from_server.read_text())["standings"]
    assert len(record["games"]) == 1
    assert (await foursquare("tournament", "verify", str(from_db)))[0] == 0
    (game,) = games.iterdir()
    assert (await foursquare("verify", str(game)))[0] == 0
    status, _ = await foursquare("tournament", "export", "NOSUCH", "--db", postgres_url)
    assert status == 1
