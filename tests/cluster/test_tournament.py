"""A tournament across three nodes, run by the node it was made on (the holder of its
lease), which is killed during a round, and its next owner between rounds: every race is
played, and the export verifies game by game."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from client.connection import Connection
from client.tournament_bot import TournamentBot
from protocol.tournament import TournamentState, TournamentStatus
from tests.cluster.harness import (
    BACKOFF,
    PATIENCE,
    Cluster,
    foursquare,
    running_cluster,
)


async def until_state(bots: list[TournamentBot], holds: Callable[[TournamentState], bool]) -> None:
    """Wait until a bot's latest tournament state satisfies ``holds``."""
    deadline = time.monotonic() + PATIENCE
    while not any(bot.state is not None and holds(bot.state) for bot in bots):
        assert time.monotonic() < deadline, [bot.state for bot in bots]
        await asyncio.sleep(0.05)


async def verified_export(db: str, code: str, tmp_path: Path) -> tuple[dict[str, Any], int]:
    """Tournament ``code``'s export from the store ``db``, once ``foursquare tournament
    verify`` has accepted it and ``foursquare verify`` each of its games; with the number of
    game files the export wrote."""
    exported, games = tmp_path / "cup.json", tmp_path / "games"
    status, out = await foursquare("tournament", "export", code, "--db", db,
                                   "-o", str(exported), "--games-dir", str(games))
    assert status == 0, out
    record: dict[str, Any] = json.loads(exported.read_text())
    status, out = await foursquare("tournament", "verify", str(exported))
    assert status == 0, out
    for game in sorted(games.iterdir()):
        status, out = await foursquare("verify", str(game))
        assert status == 0, out
    return record, len(list(games.iterdir()))


def round_over(number: int) -> Callable[[TournamentState], bool]:
    """Whether a state shows round ``number`` over (every entrant scored for it)."""
    return lambda s: s.round == number and not s.races and (
        s.status is TournamentStatus.FINISHED or all(line.games >= number for line in s.standings)
    )


async def host(cluster: Cluster, node: str, *argv: str) -> str:
    """A host's command to node ``node``; what it printed (it must succeed)."""
    status, out = await foursquare(*argv, "--server", cluster.nodes[node].url)
    assert status == 0, out
    return out


async def new_owner(cluster: Cluster, code: str, other_than: str) -> str:
    """The node that holds tournament ``code``'s lease, once another than ``other_than``
    does."""
    deadline = time.monotonic() + PATIENCE
    while (owner := cluster.owner(code)) in (None, other_than):
        assert time.monotonic() < deadline, "nobody took the tournament over"
        await asyncio.sleep(0.1)
    assert owner is not None
    return owner


async def test_a_tournament_survives_its_owner_killed_during_a_round_and_between_rounds(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        leader = await cluster.wait_for_leader()
        names = list(cluster.nodes)
        first = next(name for name in names if name != leader)
        out = await host(cluster, first, "tournament", "create", "--name", "cluster cup",
                         "--rounds", "2", "--race-size", "2")
        code = re.search(r"join code:\s+(\S+)", out)[1]  # type: ignore[index]
        token = re.search(r"host token:\s+(\S+)", out)[1]  # type: ignore[index]
        assert cluster.owner(code) == first  # made there, run there
        await host(cluster, leader, "tournament", "open", code, "--token", token)
        bots = [
            TournamentBot(
                Connection(cluster.addresses(name), f"bot-{name}", bot=True, backoff=BACKOFF),
                code, "random", pace=0.2,
            )
            for name in names
        ]
        playing = [asyncio.create_task(bot.play()) for bot in bots]
        await until_state(bots, lambda s: len(s.standings) == 3)

        await host(cluster, leader, "tournament", "start-round", code, "--token", token)
        await until_state(bots, lambda s: s.round == 1 and bool(s.races))
        deadline = time.monotonic() + PATIENCE
        while not any(bot.tracker.mirror and len(bot.tracker.mirror.moves) >= 2 for bot in bots):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.02)
        cluster.nodes[first].kill()  # during round 1
        second = await new_owner(cluster, code, other_than=first)
        await until_state(bots, round_over(1))

        cluster.nodes[second].kill()  # between the rounds
        last = next(name for name in names if name not in (first, second))
        assert await new_owner(cluster, code, other_than=second) == last
        await host(cluster, last, "tournament", "start-round", code, "--token", token)
        async with asyncio.timeout(PATIENCE * 2):
            results = await asyncio.gather(*playing)
        assert all(result.standing is not None for result in results), results
        assert all(result.standing.games == 2 for result in results if result.standing)

        record, games = await verified_export(postgres_url, code, tmp_path)
        assert games == len(record["games"]) >= 2  # both rounds
        assert len(record["standings"]) == 3
