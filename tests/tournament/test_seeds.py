"""Seeds for tournaments: the core never waits for one, and the desk searches for winnable
seeds only when a tournament deals, never in a thread of the server."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

from engine import Game, Ruleset, deal
from engine.solver import solve
from protocol import CardToPlace, SeedPolicy
from protocol.tournament import HostAction, TournamentFormat, TournamentStatus
from server.config import ServerConfig
from server.tournament import (
    ArenaStarted,
    Join,
    Open,
    RaceOrdered,
    StartNext,
    Tick,
    Tournament,
    TournamentError,
    TournamentErrorCode,
    TournamentSettings,
    hash_token,
)
from tests.conftest import fast_config, start_live_server
from tests.server.known_games import hopeless_rules
from tests.server.wire_client import read_metric
from tests.tournament.players import BotPlayer, Host

HOST = "host-token-0123456789"


class SeedsWhenReady:
    """A seed source as the desk gives one: it answers at once, ``None`` until a test puts
    a seed in."""

    def __init__(self) -> None:
        self.ready: list[str] = []

    def __call__(self) -> str | None:
        return self.ready.pop(0) if self.ready else None


def tournament_with(seeds: SeedsWhenReady, *names: str, **settings: object) -> Tournament:
    options = TournamentSettings("seedless", **settings)  # type: ignore[arg-type]
    tournament = Tournament("T1", "SEEDS1", hash_token(HOST), options, 0.0, seeds)
    tournament.apply(Open(HOST), 0.0)
    for name in names:
        tournament.apply(Join(name, name, bot=False), 1.0)
    return tournament


def test_a_round_with_no_seed_ready_is_refused_and_changes_nothing() -> None:
    seeds = SeedsWhenReady()
    tournament = tournament_with(seeds, "a", "b")
    try:
        tournament.apply(StartNext(HOST), 2.0)
    except TournamentError as refusal:
        assert refusal.code is TournamentErrorCode.NO_SEED_READY
    else:
        raise AssertionError("a round started without a seed")
    assert (tournament.round, tournament.races) == (0, {})
    seeds.ready.append("found")
    events = tournament.apply(StartNext(HOST), 3.0)
    assert {e.seed for e in events if isinstance(e, RaceOrdered)} == {"found"}


def test_an_arena_short_of_seeds_pairs_later_and_its_clock_waits_for_the_seed() -> None:
    seeds = SeedsWhenReady()
    tournament = tournament_with(
        seeds, "a", "b", "c", "d",
        format=TournamentFormat.ARENA, race_size=2, arena_duration=300.0, pairing_delay=5.0,
    )
    seeds.ready.append("only-one")
    events = tournament.apply(StartNext(HOST), 10.0)
    assert events[0] == ArenaStarted(310.0)
    dealt = [e for e in events if isinstance(e, RaceOrdered)]
    assert [race.seed for race in dealt] == ["only-one"]
    assert tournament.waiting_for_seed
    # Pairing has no deadline while no seed is ready (the clock would spin): only the close.
    assert tournament.next_deadline() == 310.0
    assert not [e for e in tournament.apply(Tick(), 20.0) if isinstance(e, RaceOrdered)]
    seeds.ready.append("found-later")
    later = [e for e in tournament.apply(Tick(), 21.0) if isinstance(e, RaceOrdered)]
    assert [race.seed for race in later] == ["found-later"]
    assert not tournament.waiting_for_seed


def live_config(tmp_path: Path, **changes: object) -> ServerConfig:
    config = dataclasses.replace(
        fast_config(tmp_path / "foursquare.db"), rate_per_second=1000.0, rate_burst=1000
    )
    return dataclasses.replace(config, **changes)  # type: ignore[arg-type]


async def test_hopeless_winnable_tournaments_search_nothing_even_after_a_restart(
    tmp_path: Path,
) -> None:
    config = live_config(tmp_path)
    threads = {thread.ident for thread in threading.enumerate()}

    async def nothing_searched(http_url: str) -> None:
        started = {t.name for t in threading.enumerate() if t.ident not in threads}
        assert not {name for name in started if "winnable" in name or "seed" in name}, started
        assert await read_metric(http_url, "foursquare_winnable_searches_total") == 0
        assert await read_metric(http_url, "foursquare_winnable_requests") == 0

    async with start_live_server(config) as live:
        host = await Host.start(live.url)
        for capacity in (2, 3, 4):
            await host.create(
                name=f"hopeless {capacity}",
                format=TournamentFormat.ARENA,
                seed_policy=SeedPolicy.WINNABLE,
                ruleset=hopeless_rules(capacity),
            )
            await host.control(HostAction.OPEN)
        await nothing_searched(live.http_url)
        await host.close()
    async with start_live_server(config) as live:
        assert len(live.server.race_tier.tournaments.tournaments if live.server else ()) == 3
        await nothing_searched(live.http_url)


async def test_a_winnable_round_waits_for_its_seed_then_starts(tmp_path: Path) -> None:
    async with start_live_server(live_config(tmp_path)) as live:
        host = await Host.start(live.url)
        code = await host.create(name="winnable cup", rounds=1, seed_policy=SeedPolicy.WINNABLE)
        await host.control(HostAction.OPEN)
        bots = [await BotPlayer.enter(live.url, f"bot{n}", code) for n in range(2)]
        await host.control(HostAction.START)  # no seed ready: found first, then started
        state = await host.until(lambda s: s.round == 1 and bool(s.races))
        assert state.status is TournamentStatus.RUNNING and not host.errors
        card = await bots[0].client.expect(CardToPlace)
        assert card.race == state.races[0].race
        seed = live.server.race_tier.hosts[card.race].race.seed if live.server else ""
        game = Game.new(seed)
        for move in solve(deal(seed), budget=10.0, prove=False).moves:
            game.play(move)
        assert game.status.value == "won"
        for player in (host, *bots):
            await player.close()


async def test_an_arena_with_no_seed_ready_pairs_once_the_desk_finds_one(tmp_path: Path) -> None:
    async with start_live_server(live_config(tmp_path)) as live:
        host = await Host.start(live.url)
        code = await host.create(
            name="winnable arena",
            format=TournamentFormat.ARENA,
            race_size=2,
            seed_policy=SeedPolicy.WINNABLE,
            ruleset=Ruleset(),
        )
        await host.control(HostAction.OPEN)
        bots = [await BotPlayer.enter(live.url, f"bot{n}", code) for n in range(2)]
        await host.control(HostAction.START)
        state = await host.until(lambda s: bool(s.races))
        assert set(state.races[0].racers) == {bot.player_id for bot in bots}
        for player in (host, *bots):
            await player.close()
