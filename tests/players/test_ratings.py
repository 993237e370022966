"""Ratings and leaderboards on both stores (a real SQLite file, a PostgreSQL database of
the test's own): a sequence of races rates the claimed players exactly as openskill's
Plackett-Luce model does by itself, leavers count last, leaderboards are ordered and
paged; and the real server rates a quick race and answers for it."""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from openskill.models import PlackettLuce

from engine import Ruleset
from protocol import (
    Error,
    ErrorCode,
    QuickRace,
    RaceFinished,
    RaceSnapshot,
    RaceState,
    Resign,
    Role,
)
from protocol.players import (
    Board,
    GetLeaderboard,
    GetProfile,
    Leaderboard,
    Profile,
    RatingChanged,
)
from protocol.result import RaceResult, RacerOutcome, RacerResult
from protocol.tournament import (
    CreateTournament,
    HostAction,
    JoinTournament,
    TournamentControl,
    TournamentCreated,
    TournamentOptions,
    TournamentState,
    encode_tournament,
)
from server.journal import PlayerRecord
from server.player_store import (
    BOARD_COLUMNS,
    BoardKey,
    claim_name,
    key_digest,
    leaderboard,
    new_player_key,
    profile,
    record_race,
)
from server.ratings import pool_of, shown
from server.store import Store
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.players.test_players import claimed_key
from tests.server.wire_client import WireClient

POOL = pool_of(Ruleset())
WON, LOST, RESIGNED = RacerOutcome.WON, RacerOutcome.LOST, RacerOutcome.RESIGNED


def line(racer: str, outcome: RacerOutcome, *, score: int | None = None, face_up: int = 0,
         played: int = 20, finish: float = 30.0) -> RacerResult:
    return RacerResult(racer, racer, False, outcome, score, finish, played, face_up, 0, ())


def race(race_id: str, *lines: RacerResult) -> RaceResult:
    return RaceResult.build(race_id, "seed", Ruleset(), lines)


async def claim_all(store: Store, names: list[str], bots: frozenset[str] = frozenset()) -> None:
    """Sessions s-NAME playing as claimed players named NAME."""
    for name in names:
        session = f"s-{name}"
        await store.write(PlayerRecord(session, session.encode(), name, name in bots, 0.0))
        job = functools.partial(claim_name, session, name, name in bots,
                                key_digest(new_player_key()), 0.0)
        assert await store.run(job, writes=True) is not None


async def test_ratings_after_a_sequence_of_races_are_the_librarys_own(store: Store) -> None:
    names = ["ann", "bob", "cid", "dee"]
    await claim_all(store, names)
    model = PlackettLuce()
    expected = {name: model.rating() for name in names}
    randomness = random.Random(7)
    for number in range(12):
        racing = randomness.sample(names, randomness.randint(2, 4))
        outcomes = [
            line(f"s-{name}", WON, score=randomness.randint(0, 5)) if randomness.random() < 0.3
            else line(f"s-{name}", RESIGNED if randomness.random() < 0.2 else LOST,
                      face_up=randomness.randint(0, 16))
            for name in racing
        ]
        result = race(f"R{number}", *outcomes)
        job = functools.partial(record_race, result, POOL, True, float(number))
        changes = await store.run(job, writes=True)
        assert {change.player_id for change in changes} == {await player(store, n)
                                                           for n in racing}
        # The library's own computation: each racer a team of one, ranked by the race's
        # standings, whoever resigned last (tied).
        ordered = [entry.racer_id.removeprefix("s-") for entry in result.racers]
        keys = [rank(entry) for entry in result.racers]
        places = {key: n for n, key in enumerate(sorted(set(keys)), start=1)}
        rated = model.rate([[expected[name]] for name in ordered],
                           ranks=[places[key] for key in keys])
        for name, (after,) in zip(ordered, rated, strict=True):
            expected[name] = after
    for name in names:
        (pool,) = (await read_profile(store, name)).pools
        assert pool.skill.mu == pytest.approx(expected[name].mu, abs=1e-9)
        assert pool.skill.sigma == pytest.approx(expected[name].sigma, abs=1e-9)


def rank(entry: RacerResult) -> tuple[object, ...]:
    from protocol.result import standing_key

    return (1,) if entry.outcome is RESIGNED else (0, *standing_key(entry))


async def player(store: Store, name: str) -> str:
    def find():  # type: ignore[no-untyped-def]
        rows = yield ("SELECT player_id FROM claimed_players WHERE name = ?", (name,))
        return rows[0][0]

    found: str = await store.run(find, writes=False)
    return found


async def read_profile(store: Store, name: str):  # type: ignore[no-untyped-def]
    job = functools.partial(profile, await player(store, name), 100, 20)
    return await store.run(job, writes=False)


async def test_a_racer_who_leaves_counts_last_whatever_its_cards(store: Store) -> None:
    await claim_all(store, ["ann", "bob", "cid"])
    result = race(
        "R1",
        line("s-ann", RESIGNED, face_up=16, played=39),  # best cards, but left
        line("s-bob", LOST, face_up=2),
        line("s-cid", LOST, face_up=9),
    )
    changes = await store.run(functools.partial(record_race, result, POOL, True, 1.0),
                              writes=True)
    after = {change.racer_id: change.after.ordinal for change in changes}
    assert after["s-cid"] > after["s-bob"] > after["s-ann"]


async def test_a_race_is_recorded_once_and_guests_and_unrated_races_move_no_rating(
    store: Store,
) -> None:
    await claim_all(store, ["ann", "bob"])
    result = race("R1", line("s-ann", WON, score=3), line("s-guest", LOST),
                  line("s-bob", LOST))
    first = await store.run(functools.partial(record_race, result, POOL, True, 1.0),
                            writes=True)
    assert len(first) == 2  # the guest is neither rated nor counted
    again = await store.run(functools.partial(record_race, result, POOL, True, 2.0),
                            writes=True)
    assert again == []
    unrated = race("R2", line("s-bob", WON, score=9), line("s-ann", LOST))
    assert await store.run(functools.partial(record_race, unrated, POOL, False, 3.0),
                           writes=True) == []
    ann = await read_profile(store, "ann")
    (pool,) = ann.pools
    assert (pool.games, pool.wins, pool.won_games, pool.best_score) == (1, 1, 1, 3)
    assert [(r.race_id, r.rated, r.place) for r in ann.recent] == [("R2", False, 2),
                                                                  ("R1", True, 1)]


async def test_leaderboards_are_ordered_paged_and_filter_bots(store: Store) -> None:
    names = [f"p{n:02}" for n in range(12)]
    await claim_all(store, names, bots=frozenset({"p00", "p05"}))
    for number in range(30):  # lower numbers win more often: a clear order
        pair = sorted(random.Random(number).sample(names, 2))
        result = race(f"R{number}", line(f"s-{pair[0]}", WON, score=number % 7),
                      line(f"s-{pair[1]}", LOST))
        await store.run(functools.partial(record_race, result, POOL, True, float(number)),
                        writes=True)

    async def board(name: str, bots: bool, offset: int, limit: int):  # type: ignore[no-untyped-def]
        return await store.run(
            functools.partial(leaderboard, POOL, name, bots, None, offset, limit), writes=False
        )

    total, everyone = await board("rating", True, 0, 100)
    assert total == len(everyone) == 12
    assert [x.ordinal for x in everyone] == sorted((x.ordinal for x in everyone), reverse=True)
    pages = [(await board("rating", True, offset, 5))[1] for offset in (0, 5, 10)]
    assert [x.player_id for page in pages for x in page] == [x.player_id for x in everyone]
    humans_total, humans = await board("rating", False, 0, 100)
    assert humans_total == 10 and not any(x.bot for x in humans)
    assert [x.player_id for x in humans] == [x.player_id for x in everyone if not x.bot]
    _, by_wins = await board("wins", True, 0, 100)
    assert [x.wins for x in by_wins] == sorted((x.wins for x in by_wins), reverse=True)
    _, by_score = await board("best_score", True, 0, 100)
    assert all(x.best_score is not None for x in by_score)
    assert [x.best_score for x in by_score] == sorted((x.best_score for x in by_score),
                                                      reverse=True)


async def test_pages_after_a_key_are_the_board_in_order_ties_included(store: Store) -> None:
    """Keyset paging: each page read after the previous page's last line's key, on every
    board, with bots and without, gives the whole board in order, once, ties (many
    players with the same wins or best score) split across pages included."""
    names = [f"k{n:02}" for n in range(14)]
    await claim_all(store, names, bots=frozenset({"k03", "k09"}))
    for number in range(40):
        pair = sorted(random.Random(100 + number).sample(names, 2))
        result = race(f"K{number}", line(f"s-{pair[0]}", WON, score=number % 3),
                      line(f"s-{pair[1]}", LOST))
        await store.run(functools.partial(record_race, result, POOL, True, float(number)),
                        writes=True)
    for board in BOARD_COLUMNS:
        for bots in (True, False):
            total, whole = await store.run(
                functools.partial(leaderboard, POOL, board, bots, None, 0, 100), writes=False
            )
            paged: list[str] = []
            after: BoardKey | None = None
            while True:
                count, page = await store.run(
                    functools.partial(leaderboard, POOL, board, bots, after, 0, 3),
                    writes=False,
                )
                assert count == total
                paged += [x.player_id for x in page]
                if len(page) < 3:
                    break
                after = BoardKey.of(board, page[-1])
            assert paged == [x.player_id for x in whole], (board, bots)
            # An offset counts from the key, as from the top.
            _, skipped = await store.run(
                functools.partial(leaderboard, POOL, board, bots,
                                  BoardKey.of(board, whole[1]), 2, 3), writes=False
            )
            assert [x.player_id for x in skipped] == [x.player_id for x in whole[4:7]]
    _, by_wins = await store.run(
        functools.partial(leaderboard, POOL, "wins", True, None, 0, 100), writes=False
    )
    wins = [x.wins for x in by_wins]
    assert len(set(wins)) < len(wins), "the boards must have ties for this test to mean it"


# ------------------------------------------------------------ the live server


@pytest.fixture
async def live(db: str, tmp_path: Path) -> AsyncIterator[LiveServer]:
    config = dataclasses.replace(fast_config(tmp_path / "journal.db"), db=db)
    async with start_live_server(config) as server:
        yield server


async def test_a_quick_race_rates_its_claimed_players_and_the_boards_show_them(
    live: LiveServer,
) -> None:
    ann, ann_key = await claimed_key(live.url, "Ann")
    bob, bob_key = await claimed_key(live.url, "Bob")
    guest = await WireClient.connect(live.url, "Cy")
    for client in (ann, bob, guest):
        await client.send(QuickRace(id=client.next_id()))
        snapshot = await client.expect(RaceSnapshot)
    race_id = snapshot.race
    await ann.expect(RaceSnapshot, state=RaceState.RUNNING)
    for client in (bob, guest, ann):  # all leave: tied last (the store tests rank them)
        await client.send(Resign(race=race_id, id=client.next_id()))
    await ann.expect(RaceFinished)
    ann_rating = await ann.expect(RatingChanged, race=race_id)
    bob_rating = await bob.expect(RatingChanged, race=race_id)
    assert ann_rating.provisional and ann_rating.games == 1
    # Tied, so the model only grows surer of both: the conservative rating rises alike.
    assert ann_rating.rating == bob_rating.rating > ann_rating.before == 0
    await ann.send(GetLeaderboard(board=Board.RATING, id=50))
    board = await ann.expect(Leaderboard, reply_to=50)
    assert [e.player for e in board.entries] == sorted([ann_key.player, bob_key.player])
    assert board.total == 2 and [e.rank for e in board.entries] == [1, 2]
    assert board.entries[0].rating == ann_rating.rating
    await guest.send(GetProfile(player=bob_key.player, id=51))
    bobs = await guest.expect(Profile, reply_to=51)
    assert bobs.name == "Bob" and bobs.pools[0].history == (bob_rating.rating,)
    assert [r.race for r in bobs.recent] == [race_id] and bobs.recent[0].rated
    await guest.send(GetProfile(player="u-nobody", id=52))
    missing = await guest.expect(Error, reply_to=52)
    assert missing.code is ErrorCode.PLAYER_NOT_FOUND
    # Page by page with the cursor: each page starts after the one before it.
    await guest.send(GetLeaderboard(board=Board.RATING, limit=1, id=53))
    first = await guest.expect(Leaderboard, reply_to=53)
    assert first.next is not None and [e.rank for e in first.entries] == [1]
    await guest.send(GetLeaderboard(board=Board.RATING, limit=1, after=first.next, id=54))
    second = await guest.expect(Leaderboard, reply_to=54)
    assert second.offset == 1 and [e.rank for e in second.entries] == [2]
    assert [e.player for e in (*first.entries, *second.entries)] == [
        e.player for e in board.entries]
    assert second.next is None  # the board ends there
    for bad_cursor in ("1_nan_u-x", "x", "0_1.5_u-x", "1_1.5_"):
        await guest.send(GetLeaderboard(after=bad_cursor, id=55))
        assert (await guest.expect(Error, reply_to=55)).code is ErrorCode.BAD_MESSAGE
    await guest.send(GetLeaderboard(board=Board.WINS, after=first.next, id=56))
    assert (await guest.expect(Error, reply_to=56)).code is ErrorCode.BAD_MESSAGE
    # A profile by name: matched as claims are, ignoring case.
    await guest.send(GetProfile(name="bOB", id=57))
    assert (await guest.expect(Profile, reply_to=57)).player == bob_key.player
    await guest.send(GetProfile(name="Nobody", id=58))
    assert (await guest.expect(Error, reply_to=58)).code is ErrorCode.PLAYER_NOT_FOUND
    for neither_or_both in (GetProfile(id=59), GetProfile(player=bob_key.player, name="Bob",
                                                          id=59)):
        await guest.send(neither_or_both)
        assert (await guest.expect(Error, reply_to=59)).code is ErrorCode.BAD_MESSAGE
    assert shown(0.0) == 0
    for client in (ann, bob, guest):
        await client.close()


async def _one_race_tournament(url: str, racers: list[WireClient], *, rated: bool) -> str:
    """A one-round tournament of ``racers`` in one race, which all of them resign: the
    race's id, once every racer has its ``finished``."""
    host = await WireClient.connect(url, "Host", role=Role.SPECTATOR)
    options = TournamentOptions(name="Club night", rounds=1, race_size=len(racers), rated=rated)
    await host.connection.send(encode_tournament(CreateTournament(options=options, id=1)))
    created = await host.expect(TournamentCreated, reply_to=1)

    async def control(action: HostAction, request: int) -> None:
        await host.connection.send(encode_tournament(TournamentControl(
            tournament=created.tournament, host_token=created.host_token, action=action,
            id=request)))
        await host.expect(TournamentState, reply_to=request)

    await control(HostAction.OPEN, 2)
    for racer in racers:
        request = racer.next_id()
        await racer.connection.send(encode_tournament(
            JoinTournament(tournament=created.tournament, id=request)))
        await racer.expect(TournamentState, reply_to=request)
    await control(HostAction.START, 3)
    for racer in racers:
        snapshot = await racer.expect(RaceSnapshot, state=RaceState.RUNNING)
        assert snapshot.options.rated is rated  # every race of it says so
        await racer.send(Resign(race=snapshot.race, id=racer.next_id()))
    for racer in racers:
        await racer.expect(RaceFinished, race=snapshot.race)
    await host.close()
    return snapshot.race


async def test_a_tournament_is_rated_only_when_its_host_asks(live: LiveServer) -> None:
    ann, ann_key = await claimed_key(live.url, "Ann")
    bob, _ = await claimed_key(live.url, "Bob")
    unrated = await _one_race_tournament(live.url, [ann, bob], rated=False)
    rated = await _one_race_tournament(live.url, [ann, bob], rated=True)
    # The first rating either of them is sent is the rated tournament's: the unrated one
    # moved no rating.
    first = await ann.expect(RatingChanged)
    assert first.race == rated and first.games == 1 and first.before == 0
    assert (await bob.expect(RatingChanged)).race == rated
    await ann.send(GetProfile(player=ann_key.player, id=90))
    profile = await ann.expect(Profile, reply_to=90)
    assert profile.pools[0].history == (first.rating,)
    assert {race.race: race.rated for race in profile.recent} == {rated: True, unrated: False}
    for client in (ann, bob):
        await client.close()
