"""A tournament's rounds placed across a cluster: the tournament's node opens a round's
races (its entrants seated), then hands the whole round, whose races share a deal, to the
node running the fewest races, under leases of the races' own; the tournament counts the
results as they are stored.

Three real node processes on one PostgreSQL database and one Redis; the entrants are the
real client's tournament bots, spread over the nodes. Each test checks where the round
ran (the store's leases, the nodes' logs), that its races were always run together by
one node, and that the tournament's export verifies game by game: when nothing fails,
when the tournament's node is killed during the placed round, and when the round's node
is.
"""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass
from pathlib import Path

from client.connection import Connection
from client.tournament_bot import TournamentBot, TournamentBotResult
from protocol import RaceSnapshot
from server.lobby import least_loaded
from tests.cluster.harness import (
    BACKOFF,
    PATIENCE,
    Cluster,
    Spectator,
    running_cluster,
)
from tests.cluster.test_tournament import (
    host,
    new_owner,
    round_over,
    until_state,
    verified_export,
)

#: Entrants: two races of two in each round, so that a round's races share a deal.
ENTRANTS = 4


@dataclass
class Placed:
    """A tournament made on ``owner`` whose first round was handed to ``chosen``."""

    code: str
    token: str
    owner: str
    chosen: str
    races: list[str]
    bots: list[TournamentBot]
    playing: list[asyncio.Task[TournamentBotResult]]


async def first_round_placed(cluster: Cluster, rounds: int) -> Placed:
    """A tournament of ``rounds`` rounds made on a node other than the leader, its
    entrants on every node, its first round started and placed: on the node with no race
    (all have none), other than the tournament's."""
    leader = await cluster.wait_for_leader()
    await cluster.wait_for_every_node_live()
    names = list(cluster.nodes)
    owner = next(name for name in names if name != leader)
    out = await host(cluster, owner, "tournament", "create", "--name", "spread cup",
                     "--rounds", str(rounds), "--race-size", "2")
    code = re.search(r"join code:\s+(\S+)", out)[1]  # type: ignore[index]
    token = re.search(r"host token:\s+(\S+)", out)[1]  # type: ignore[index]
    assert cluster.owner(code) == owner
    await host(cluster, leader, "tournament", "open", code, "--token", token)
    bots = [
        TournamentBot(
            Connection(cluster.addresses(names[index % len(names)]), f"bot-{index}", bot=True,
                       backoff=BACKOFF),
            code, "greedy", pace=0.15,
        )
        for index in range(ENTRANTS)
    ]
    playing = [asyncio.create_task(bot.play()) for bot in bots]
    await until_state(bots, lambda s: len(s.standings) == ENTRANTS)
    chosen = least_loaded(dict.fromkeys(cluster.nodes, 0), here=owner)
    await host(cluster, leader, "tournament", "start-round", code, "--token", token)
    await until_state(bots, lambda s: s.round == 1 and len(s.races) == ENTRANTS // 2)
    deadline = time.monotonic() + PATIENCE
    while not (placed := cluster.logged(owner, "round_placed")):
        assert time.monotonic() < deadline, "the round was not placed"
        await asyncio.sleep(0.05)
    (line,) = placed
    assert line["tournament"] == code and line["node"] == chosen != owner
    races = race_ids(line["races"])
    assert len(races) == ENTRANTS // 2
    for race in races:
        assert await cluster.wait_for_owner(race) == chosen
    return Placed(code, token, owner, chosen, races, bots, playing)


async def moving(bots: list[TournamentBot], moves: int) -> None:
    """Wait until some bot has ``moves`` moves of its current race acknowledged."""
    deadline = time.monotonic() + PATIENCE
    while not any(bot.tracker.mirror and len(bot.tracker.mirror.moves) >= moves for bot in bots):
        assert time.monotonic() < deadline, "nobody is moving"
        await asyncio.sleep(0.02)


async def finished(game: Placed, games: int) -> None:
    """Wait for every bot's tournament to end; each played ``games`` games."""
    async with asyncio.timeout(PATIENCE * 2):
        results = await asyncio.gather(*game.playing)
    assert all(result.standing is not None for result in results), results
    assert all(result.standing.games == games for result in results if result.standing)


async def export_verifies(cluster: Cluster, code: str, tmp_path: Path, games: int) -> None:
    """The tournament's export, from the store, verifies, and so does each of its
    ``games`` games."""
    record, written = await verified_export(cluster.db, code, tmp_path)
    assert written == len(record["games"]) == games
    assert len(record["standings"]) == ENTRANTS


def race_ids(logged: object) -> list[str]:
    """The race ids a log line lists."""
    assert isinstance(logged, list)
    return [str(race) for race in logged]


def taken_together(cluster: Cluster, node: str, races: list[str]) -> bool:
    """Whether node ``node`` rebuilt ``races`` together, in one takeover."""
    return any(sorted(race_ids(line["races"])) == sorted(races)
               for line in cluster.logged(node, "races_taken_over"))


async def test_a_round_runs_on_another_node_than_its_tournament_and_the_export_verifies(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        game = await first_round_placed(cluster, rounds=2)
        # Watched from the tournament's node, which no longer runs the race.
        spectator = Spectator(cluster.addresses(game.owner), game.races[0])
        watched = await asyncio.wait_for(spectator.run(), PATIENCE)
        assert watched.race == game.races[0]
        assert any(isinstance(message, RaceSnapshot) for message in spectator.seen)
        await until_state(game.bots, round_over(1))
        # Run where it was placed, all of it: rebuilt there once, together, and nowhere else.
        assert taken_together(cluster, game.chosen, game.races)
        others = set(cluster.nodes) - {game.chosen}
        assert not set(cluster.recovered(others)) & set(game.races)
        assert cluster.owner(game.code) == game.owner  # the tournament never moved
        await host(cluster, game.owner, "tournament", "start-round", game.code,
                   "--token", game.token)
        await finished(game, games=2)
        await export_verifies(cluster, game.code, tmp_path, games=2 * ENTRANTS // 2)
        # The second round was placed too (by the load map then), from the same node.
        assert len(cluster.logged(game.owner, "round_placed")) == 2


async def test_a_tournament_whose_node_is_killed_during_a_placed_round_counts_its_results(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        game = await first_round_placed(cluster, rounds=1)
        await moving(game.bots, 2)
        cluster.nodes[game.owner].kill()
        successor = await new_owner(cluster, game.code, other_than=game.owner)
        await finished(game, games=1)
        # The round ran on its node to the end: nobody else rebuilt its races.
        assert taken_together(cluster, game.chosen, game.races)
        others = set(cluster.nodes) - {game.chosen, game.owner}
        assert not set(cluster.recovered(others)) & set(game.races)
        assert successor != game.owner
        await export_verifies(cluster, game.code, tmp_path, games=ENTRANTS // 2)


async def test_a_round_whose_node_is_killed_is_taken_over_whole_and_finishes(
    tmp_path: Path, postgres_url: str, redis_url: str, cluster_prefix: str
) -> None:
    with running_cluster(tmp_path, postgres_url, redis_url, cluster_prefix) as cluster:
        game = await first_round_placed(cluster, rounds=1)
        await moving(game.bots, 2)
        cluster.nodes[game.chosen].kill()
        successor = await cluster.wait_for_owner(game.races[0], other_than=game.chosen)
        for race in game.races[1:]:
            assert await cluster.wait_for_owner(race, other_than=game.chosen) == successor
        await finished(game, games=1)
        # Taken over whole, by one node, once; the tournament stayed where it was.
        assert taken_together(cluster, successor, game.races)
        others = set(cluster.nodes) - {game.chosen, successor}
        assert not set(cluster.recovered(others)) & set(game.races)
        assert cluster.owner(game.code) == game.owner
        await export_verifies(cluster, game.code, tmp_path, games=ENTRANTS // 2)
