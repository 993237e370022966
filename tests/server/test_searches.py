"""No search can stall the server: winnable deals and pars are searched for in child
processes, each search is bounded, and hostile requests cost a bystander nothing."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path

from engine import Ruleset
from protocol import (
    CardToPlace,
    CreateRace,
    Error,
    ErrorCode,
    MovePlaced,
    Place,
    RaceFinished,
    RaceOptions,
    RacePar,
    RaceSnapshot,
    Resign,
    SeedPolicy,
)
from protocol.tournament import (
    CreateTournament,
    HostAction,
    JoinTournament,
    TournamentOptions,
)
from server.config import ServerConfig
from tests.conftest import fast_config, run_server_process, start_live_server
from tests.server.known_games import HOPELESS, hopeless_rules
from tests.server.wire_client import TIMEOUT, WireClient, http_get, read_metric
from tests.tournament.players import Host

#: Rules whose par search takes its whole budget (no deal can be won, and it is not proven
#: quickly): a par worker is still busy well after the race is over.
SLOW_PAR = hopeless_rules(pile_capacity=10, grid_size=6)


def solo(rules: Ruleset = Ruleset(), seed_policy: SeedPolicy = SeedPolicy.RANDOM) -> RaceOptions:
    """A race for one racer that starts as soon as it has joined."""
    return RaceOptions(
        max_racers=1, min_racers=1, countdown=0, ruleset=rules, seed_policy=seed_policy
    )


def winnable(rules: Ruleset = Ruleset()) -> RaceOptions:
    return solo(rules, SeedPolicy.WINNABLE)


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    """Poll ``check`` until it holds; fail the test if it does not within the timeout."""
    async with asyncio.timeout(TIMEOUT * 2):
        while not await check():
            await asyncio.sleep(0.02)


def metric_is(
    http_url: str, name: str, test: Callable[[float], bool]
) -> Callable[[], Awaitable[bool]]:
    """A check for :func:`until`: whether metric ``name`` passes ``test`` now."""

    async def check() -> bool:
        return test(await read_metric(http_url, name))

    return check


async def race_once(url: str, name: str, rules: Ruleset = Ruleset()) -> WireClient:
    """Create a race, make one move, resign, see the result; returns the racer."""
    racer = await WireClient.connect(url, name)
    await racer.send(CreateRace(options=solo(rules), id=racer.next_id()))
    race = (await racer.expect(RaceSnapshot)).race
    card = await racer.expect(CardToPlace)
    row, col = card.targets[0]
    await racer.send(Place(race=race, move=card.move, row=row, col=col, id=racer.next_id()))
    await racer.expect(MovePlaced)
    await racer.send(Resign(race=race, id=racer.next_id()))
    await racer.expect(RaceFinished)
    return racer


def config(tmp_path: Path, **changes: object) -> ServerConfig:
    return dataclasses.replace(fast_config(tmp_path / "foursquare.db"), **changes)  # type: ignore[arg-type]


async def test_a_round_of_a_hopeless_winnable_tournament_freezes_nothing(tmp_path: Path) -> None:
    # The attack: four messages, and the server searched for a seed on its event loop for ever.
    with run_server_process(tmp_path / "foursquare.db") as server:
        attacker = await Host.start(server.url, "attacker")
        code = await attacker.create(
            name="freeze", seed_policy=SeedPolicy.WINNABLE, ruleset=HOPELESS
        )
        await attacker.control(HostAction.OPEN)
        await attacker.send(JoinTournament(tournament=code, id=attacker.client.next_id()))
        await attacker.control(HostAction.START)
        status, _, body = await asyncio.to_thread(http_get, server.http_url + "/healthz")
        assert (status, body.strip()) == (200, "ok")
        bystander = await race_once(server.url, "bystander")
        refusal = await attacker.error()
        assert (refusal.code, refusal.in_reply_to) == (
            ErrorCode.NO_WINNABLE_DEAL, "tournament_control"
        )
        await bystander.close()
        await attacker.close()
        assert server.terminate() == 0


async def test_a_hopeless_winnable_race_is_refused_then_refused_up_front(tmp_path: Path) -> None:
    async with start_live_server(config(tmp_path, winnable_budget=1.0)) as live:
        ann = await WireClient.connect(live.url, "ann")
        await ann.send(CreateRace(options=winnable(HOPELESS), id=1))
        assert (await ann.expect(Error, reply_to=1)).code is ErrorCode.NO_WINNABLE_DEAL
        searches = "foursquare_winnable_searches_total"
        assert await read_metric(live.http_url, searches) == 1
        await ann.send(CreateRace(options=winnable(HOPELESS), id=2))
        assert (await ann.expect(Error, reply_to=2)).code is ErrorCode.NO_WINNABLE_DEAL
        host = await Host.start(live.url)
        options = TournamentOptions(
            name="again", seed_policy=SeedPolicy.WINNABLE, ruleset=HOPELESS
        )
        await host.send(CreateTournament(options=options, id=host.client.next_id()))
        assert (await host.error()).code is ErrorCode.NO_WINNABLE_DEAL
        assert await read_metric(live.http_url, searches) == 1, "searched nothing again"
        # Other rules are still searched for, and the search is in budget.
        await ann.send(CreateRace(options=winnable(), id=3))
        await ann.expect(RaceSnapshot, reply_to=3)
        for client in (ann, host.client):
            await client.close()


async def test_searches_beyond_the_bound_are_refused_at_once(tmp_path: Path) -> None:
    settings = config(tmp_path, winnable_budget=2.0, winnable_searches=2)
    async with start_live_server(settings) as live:
        clients = [await WireClient.connect(live.url, f"p{n}") for n in range(3)]
        for n, client in enumerate(clients[:2]):
            await client.send(CreateRace(options=winnable(hopeless_rules(2 + n)), id=1))
        waiting = "foursquare_winnable_requests"
        await until(metric_is(live.http_url, waiting, lambda n: n == 2))
        await clients[2].send(CreateRace(options=winnable(hopeless_rules(4)), id=1))
        assert (await clients[2].expect(Error, reply_to=1)).code is ErrorCode.SERVER_BUSY
        for client in clients[:2]:
            assert (await client.expect(Error, reply_to=1)).code is ErrorCode.NO_WINNABLE_DEAL
        for client in clients:
            await client.close()


async def test_a_session_has_one_search_at_a_time(tmp_path: Path) -> None:
    async with start_live_server(config(tmp_path, winnable_budget=2.0)) as live:
        ann = await WireClient.connect(live.url, "ann")
        await ann.send(CreateRace(options=winnable(HOPELESS), id=1))
        waiting = "foursquare_winnable_requests"
        await until(metric_is(live.http_url, waiting, lambda n: n == 1))
        # The same session on a second connection (the first is closed by the resume).
        again = await WireClient.connect(live.url, "ann", resume=ann.welcome.resume)
        await again.send(CreateRace(options=winnable(hopeless_rules(3)), id=2))
        refusal = await again.expect(Error, reply_to=2)
        assert refusal.code is ErrorCode.SERVER_BUSY
        await again.close()


async def test_a_bystander_is_served_from_the_stock_while_hostile_searches_wait(
    tmp_path: Path,
) -> None:
    settings = config(tmp_path, winnable_stock=2, winnable_searches=8, winnable_budget=3.0)
    async with start_live_server(settings) as live:
        await until(metric_is(live.http_url, "foursquare_winnable_stock", lambda n: n == 2))
        hostile = [await WireClient.connect(live.url, f"hostile{n}") for n in range(8)]
        for n, client in enumerate(hostile):
            await client.send(CreateRace(options=winnable(hopeless_rules(2 + n)), id=1))
        waiting = "foursquare_winnable_requests"
        await until(metric_is(live.http_url, waiting, lambda n: n == 8))
        bystander = await WireClient.connect(live.url, "bystander")
        await bystander.send(CreateRace(options=winnable(), id=1))
        await bystander.expect(RaceSnapshot, reply_to=1)
        # Answered while the hostile searches still wait: it did not queue behind them.
        assert await read_metric(live.http_url, waiting) >= 7
        for client in [*hostile, bystander]:
            await client.close()


async def test_the_par_queue_is_bounded_and_the_newest_race_gets_its_par(
    tmp_path: Path,
) -> None:
    async with start_live_server(config(tmp_path, par_queue_limit=1)) as live:
        racers = [await race_once(live.url, f"r{n}", SLOW_PAR) for n in range(4)]
        # The first deal is being searched; of the three after it, one fits in the queue.
        dropped = "foursquare_par_searches_dropped_total"
        await until(metric_is(live.http_url, dropped, lambda n: n >= 1))
        assert await read_metric(live.http_url, "foursquare_par_queue") <= 1
        newest = racers[-1]
        await newest.expect(RacePar)
        assert await read_metric(live.http_url, "foursquare_par_searches_total") >= 1
        for racer in racers:
            await racer.close()


async def test_a_par_nobody_can_see_any_more_is_not_searched(tmp_path: Path) -> None:
    async with start_live_server(config(tmp_path, finished_linger=0.1)) as live:
        for n in range(4):
            racer = await race_once(live.url, f"r{n}", SLOW_PAR)
            await racer.close()
        done, dropped = "foursquare_par_searches_total", "foursquare_par_searches_dropped_total"

        async def all_settled() -> bool:
            return await read_metric(live.http_url, done) + await read_metric(
                live.http_url, dropped
            ) == 4

        await until(all_settled)
        # The races were forgotten while the first deal was searched: the rest were dropped.
        assert await read_metric(live.http_url, dropped) >= 1
        assert await read_metric(live.http_url, "foursquare_par_queue") == 0


def children_of(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` now (from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # it ended while we looked
            parent = int(stat.rpartition(")")[2].split()[1])
            if parent == pid:
                found.add(int(entry.name))
    return found


def has_exited(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")  # a zombie has exited: its new parent has yet to reap it


async def test_a_search_worker_whose_server_was_killed_exits_quietly(tmp_path: Path) -> None:
    db = tmp_path / "foursquare.db"
    log = db.with_suffix(".log")
    with run_server_process(db) as server:
        pid = server.process.pid
        before = children_of(pid)  # the stock's search worker, if it has started
        racer = await race_once(server.url, "ann", SLOW_PAR)
        par_worker: set[int] = set()

        async def par_worker_started() -> bool:
            par_worker.update(children_of(pid) - before)
            return bool(par_worker)

        await until(par_worker_started)
        await asyncio.sleep(0.3)  # let it read its request: it searches for two seconds
        workers = children_of(pid)
        printed = log.stat().st_size
        server.kill()
        await racer.close()

        async def all_exited() -> bool:
            return all(map(has_exited, workers))

        await until(all_exited)
        assert log.read_text()[printed:] == ""
