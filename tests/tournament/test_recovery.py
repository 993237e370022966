"""A server that stopped while dealing a round deals it on restart (real server, real file)."""

from __future__ import annotations

from pathlib import Path

from server import race as core
from server.journal import CommandRecord, Journal, RaceOpened
from server.tournament import (
    Join,
    Open,
    RaceOrdered,
    StartNext,
    Tournament,
    TournamentSettings,
    hash_token,
)
from server.tournament_store import TournamentOpened, TournamentStore
from tests.conftest import fast_config, start_live_server

HOST = "host-token-0123456789"


def journal_a_round_just_ordered(path: Path) -> tuple[Journal, RaceOrdered, TournamentSettings]:
    """A tournament whose round 1 is ordered in the journal, its race not yet journaled."""
    journal = Journal(path)
    store = TournamentStore(journal)
    settings = TournamentSettings("interrupted cup", rounds=2)
    tournament = Tournament("CUP123", "CUP123", hash_token(HOST), settings, 0.0, lambda: "seed")
    store.write_now(TournamentOpened.of(tournament))
    for command in (Open(HOST), Join("a", "ann", False), Join("b", "bea", True), StartNext(HOST)):
        store.write_now(*store.events_of("CUP123", tournament.apply(command, 1.0), 1.0))
    (order,) = tournament.races_in_progress()
    return journal, RaceOrdered(order.race_id, 1, order.seed, order.entrants), settings


async def test_a_race_ordered_but_never_journaled_is_held_on_restart(tmp_path: Path) -> None:
    path = tmp_path / "foursquare.db"
    journal, order, _ = journal_a_round_just_ordered(path)
    journal.close()
    async with start_live_server(fast_config(path)) as live:
        assert live.server is not None
        race = live.server.race_tier.hosts[order.race_id].race
        assert race.phase in (core.Phase.COUNTDOWN, core.Phase.RUNNING)  # dealt, counting down
        assert (race.seed, race.racer_ids) == ("seed", ["a", "b"])


async def test_a_race_half_seated_when_the_server_stopped_is_seated_and_started(
    tmp_path: Path,
) -> None:
    path = tmp_path / "foursquare.db"
    journal, order, settings = journal_a_round_just_ordered(path)
    options = settings.race_options(2)
    journal.write_now(
        RaceOpened(order.race_id, order.seed, options, None, 2.0, "CUP123"),
        CommandRecord(order.race_id, core.Join("a", "ann", False), 2.0),
    )
    journal.close()
    async with start_live_server(fast_config(path)) as live:
        assert live.server is not None
        race = live.server.race_tier.hosts[order.race_id].race
        assert race.phase is core.Phase.RUNNING
        assert race.racer_ids == ["a", "b"]
