"""The daily deal in the store, on both stores (a real SQLite file, a PostgreSQL database
of the test's own): a day's seed is drawn once and kept, an attempt is once per player
per day whichever store connection (node) takes it, results rank by the standings rule,
and the par is kept with the deal."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from engine import Ruleset, commitment
from protocol.result import RaceResult, RacerOutcome, RacerResult, standing_key
from server.daily_store import (
    ParFound,
    daily_board,
    deal_of_day,
    deal_wanting_par,
    keep_par,
    read_deal,
    record_room,
    release_attempt,
    take_attempt,
)
from server.journal import Journal
from server.postgres import PostgresStore
from server.store import Store, is_database_url

DAY = "2026-12-01"
WON, LOST, RESIGNED, TIMED_OUT = (
    RacerOutcome.WON, RacerOutcome.LOST, RacerOutcome.RESIGNED, RacerOutcome.TIMED_OUT
)


async def take(store: Store, entrant: str, session: str, *, day: str = DAY,
               player: str | None = None, bot: bool = False) -> bool:
    job = functools.partial(take_attempt, day, entrant, session, player, entrant, bot, 1.0)
    took: bool = await store.run(job, writes=True)
    return took


async def run(store: Store, job: Callable[[], Any], writes: bool = True) -> Any:
    return await store.run(job, writes=writes)


def line(session: str, outcome: RacerOutcome, *, score: int | None = None, face_up: int = 0,
         played: int = 20, finish: float | None = 30.0) -> RacerResult:
    return RacerResult(session, session, False, outcome, score, finish, played, face_up, 0, ())


async def test_the_days_seed_is_drawn_once_and_kept_with_its_commitment(store: Store) -> None:
    first = await run(store, functools.partial(deal_of_day, DAY, "seed-one", Ruleset(), 1.0))
    again = await run(store, functools.partial(deal_of_day, DAY, "seed-two", Ruleset(), 2.0))
    assert first == again and first.seed == "seed-one"
    assert first.commitment == commitment("seed-one") and first.par is None
    assert await run(store, functools.partial(read_deal, DAY), writes=False) == first
    assert await run(store, functools.partial(read_deal, "2026-12-02"), writes=False) is None
    other = await run(store, functools.partial(deal_of_day, "2026-12-02", "s3", Ruleset(), 3.0))
    assert other.seed == "s3"


async def test_an_attempt_is_once_a_day_per_player_and_once_per_session_for_a_guest(
    store: Store,
) -> None:
    assert await take(store, "u-ann", "s-1", player="u-ann")
    # Another session of the same player, the same day: refused by the key (day, entrant).
    assert not await take(store, "u-ann", "s-2", player="u-ann")
    assert await take(store, "u-ann", "s-2", player="u-ann", day="2026-12-02")
    assert await take(store, "guest:s-3", "s-3")
    assert not await take(store, "guest:s-3", "s-3")
    assert await take(store, "guest:s-4", "s-4")
    # A guest who raced, then claimed a name on the same session, has seen the deal.
    assert not await take(store, "u-cy", "s-4", player="u-cy")


async def test_the_store_itself_refuses_a_second_attempt(store: Store, db: str) -> None:
    """The once-a-day rule is the table's key, not a check in a job: a plain insert of a
    second row for the same day and player fails in the database."""
    assert await take(store, "u-ann", "s-1", player="u-ann")
    insert = (
        "INSERT INTO daily_attempts (day, entrant, session_id, player_id, name, bot, taken_at)"
        " VALUES ('2026-12-01', 'u-ann', 's-9', 'u-ann', 'Ann', 0, 2.0)"
    )
    if is_database_url(db):
        async with await psycopg.AsyncConnection.connect(db, autocommit=True) as connection:
            with pytest.raises(psycopg.errors.UniqueViolation):
                await connection.execute(insert)
    else:
        with (
            contextlib.closing(sqlite3.connect(db, isolation_level=None)) as connection,
            pytest.raises(sqlite3.IntegrityError),
        ):
            connection.execute(insert)


async def test_two_nodes_taking_the_same_attempt_at_once_get_one(
    store: Store, db: str
) -> None:
    """Two store connections (two nodes of a cluster, or two servers on one file) race to
    take the same player's attempt, many times over: exactly one wins each day."""
    other: Store
    if is_database_url(db):
        other = await PostgresStore.open(db)
    else:
        other = await asyncio.to_thread(Journal, db)
    try:
        for number in range(20):
            day = f"2026-11-{number + 1:02}"
            took = await asyncio.gather(
                take(store, "u-ann", "s-1", day=day, player="u-ann"),
                take(other, "u-ann", "s-2", day=day, player="u-ann"),
            )
            assert sorted(took) == [False, True], (day, took)
    finally:
        await other.aclose()


async def test_an_attempt_given_back_before_the_start_can_be_taken_again(
    store: Store,
) -> None:
    assert await take(store, "u-ann", "s-1", player="u-ann")
    await run(store, functools.partial(release_attempt, DAY, "s-1"))
    assert await take(store, "u-ann", "s-1", player="u-ann")
    result = RaceResult.build("D1", "seed", Ruleset(), [line("s-1", LOST)])
    assert await run(store, functools.partial(record_room, DAY, result)) == 1
    await run(store, functools.partial(release_attempt, DAY, "s-1"))  # raced: kept
    assert not await take(store, "u-ann", "s-1", player="u-ann")


async def test_the_board_ranks_results_by_the_standings_rule_and_pages(store: Store) -> None:
    players = {f"s-{n}": f"u-{n:02}" for n in range(8)}
    for session, player in players.items():
        assert await take(store, player, session, player=player, bot=session == "s-5")
    assert await take(store, "guest:s-g", "s-g")
    assert await take(store, "u-late", "s-late", player="u-late")  # raced, not finished
    rooms = [
        [line("s-0", WON, score=3, finish=80.0), line("s-1", LOST, face_up=9),
         line("s-g", WON, score=9, finish=10.0)],
        [line("s-2", WON, score=5, finish=120.0), line("s-3", RESIGNED, face_up=12),
         line("s-4", TIMED_OUT, face_up=9, finish=None)],
        [line("s-5", WON, score=5, finish=60.0), line("s-6", LOST, face_up=9, played=25),
         line("s-7", WON, score=3, finish=80.0)],
    ]
    for number, racers in enumerate(rooms):
        result = RaceResult.build(f"D{number}", "seed", Ruleset(), racers)
        assert await run(store, functools.partial(record_room, DAY, result)) == len(racers)
        # A second node recording the same room fills nothing more.
        assert await run(store, functools.partial(record_room, DAY, result)) == 0

    def board(bots: bool, offset: int, limit: int, you: str | None = None) -> Any:
        return run(store, functools.partial(daily_board, DAY, bots, offset, limit, you),
                   writes=False)

    total, lines, _ = await board(True, 0, 100)
    claimed = [r for room in rooms for r in room if r.racer_id in players]
    assert total == 8 and len(lines) == 8
    # The order of the standings rule over every room, ties by the player (entrant).
    expected = sorted(claimed, key=lambda r: (standing_key(r), players[r.racer_id]))
    assert [x.player_id for x in lines] == [players[r.racer_id] for r in expected]
    assert [x.place for x in lines] == list(range(1, 9))
    # Won by 5 (sooner first), then won by 3 and tied (by player id), then the rest.
    assert [x.player_id for x in lines][:4] == ["u-05", "u-02", "u-00", "u-07"]
    pages = [(await board(True, offset, 3))[1] for offset in (0, 3, 6)]
    assert [x.entrant for page in pages for x in page] == [x.entrant for x in lines]
    humans_total, humans, _ = await board(False, 0, 100)
    assert humans_total == 7 and "u-05" not in [x.player_id for x in humans]
    # Your own line: its place on the board, or, for a guest, unranked.
    _, _, mine = await board(True, 0, 1, "u-07")
    assert mine.place == [x.player_id for x in lines].index("u-07") + 1
    _, _, guest = await board(True, 0, 1, "guest:s-g")
    assert guest.place is None and guest.score == 9 and guest.player_id is None
    _, _, late = await board(True, 0, 1, "u-late")
    assert late is None


async def test_a_revealed_days_par_is_searched_for_once(store: Store) -> None:
    for day in ("2026-11-29", "2026-11-30", DAY):
        await run(store, functools.partial(deal_of_day, day, f"seed-{day}", Ruleset(), 1.0))
    wanting = await run(store, functools.partial(deal_wanting_par, "2026-11-30"), writes=False)
    assert wanting.day == "2026-11-30"  # the latest revealed day first, never one to come
    await run(store, functools.partial(keep_par, "2026-11-30", ParFound(7, True, 33, 7)))
    wanting = await run(store, functools.partial(deal_wanting_par, "2026-11-30"), writes=False)
    assert wanting.day == "2026-11-29"
    kept = await run(store, functools.partial(read_deal, "2026-11-30"), writes=False)
    assert kept.par == ParFound(7, True, 33, 7)
