"""The pure tournament core: rounds, arenas, standings, host control. No event loop."""

from __future__ import annotations

import itertools

import pytest

from protocol.tournament import EntrantState, TournamentFormat, TournamentStatus
from server.tournament import (
    ArenaStarted,
    End,
    Ending,
    EntrantRemoved,
    Event,
    Expire,
    Finished,
    Join,
    Leave,
    Open,
    Pause,
    RaceOrdered,
    RecordResult,
    Remove,
    Resume,
    SetAvailable,
    StartNext,
    Tick,
    Tournament,
    TournamentError,
    TournamentErrorCode,
    TournamentSettings,
    hash_token,
    split_evenly,
)
from tests.tournament.racing import RecordedTournament, lost, no_show, play_order, result_of, won

HOST = "host-token-0123456789"


def new_tournament(**settings: object) -> Tournament:
    seeds = (f"seed-{n}" for n in itertools.count(1))
    options = TournamentSettings("club night", **settings)  # type: ignore[arg-type]
    tournament = Tournament("T1", "CLUB42", hash_token(HOST), options, 0.0, lambda: next(seeds))
    tournament.apply(Open(HOST), 0.0)
    return tournament


def with_entrants(tournament: Tournament, *names: str) -> Tournament:
    for name in names:
        tournament.apply(Join(name, name, bot=False), 1.0)
    return tournament


def orders(events: list[Event]) -> list[RaceOrdered]:
    return [event for event in events if isinstance(event, RaceOrdered)]


def points(tournament: Tournament) -> dict[str, int]:
    return {line.entrant_id: line.points for line in tournament.standings()}


# ------------------------------------------------------------------- rounds


def test_a_round_deals_every_entrant_the_same_seed_in_races_of_at_most_k() -> None:
    tournament = with_entrants(new_tournament(race_size=4), *"abcdef")
    races = orders(tournament.apply(StartNext(HOST), 10.0))
    assert [len(race.entrants) for race in races] == [3, 3]
    assert {race.seed for race in races} == {"seed-1"}
    assert sorted(e for race in races for e in race.entrants) == list("abcdef")
    assert tournament.round == 1 and tournament.status is TournamentStatus.RUNNING


def test_round_points_come_from_the_global_placement_across_races() -> None:
    tournament = with_entrants(new_tournament(race_size=2), "a", "b", "c", "d")
    first, second = orders(tournament.apply(StartNext(HOST), 10.0))
    a, b = first.entrants
    c, d = second.entrants
    tournament.apply(RecordResult(result_of(first, won(a, 5, 30.0), lost(b, 10))), 40.0)
    assert points(tournament) == dict.fromkeys("abcd", 0), "scored only when the round is over"
    tournament.apply(RecordResult(result_of(second, won(c, 5, 20.0), lost(d, 12))), 50.0)
    # c beat a on time; d had more face up than b.
    assert points(tournament) == {c: 3, a: 2, d: 1, b: 0}
    assert [line.entrant_id for line in tournament.standings()] == [c, a, d, b]


def test_three_rounds_with_real_races_finish_with_standings() -> None:
    tournament = with_entrants(new_tournament(race_size=4), *"abcdef")
    now = 10.0
    for number in (1, 2, 3):
        for order in orders(tournament.apply(StartNext(HOST), now)):
            tournament.apply(RecordResult(play_order(order, tournament.settings, now)), now + 5)
        now += 60
        assert tournament.round == number
    assert tournament.status is TournamentStatus.FINISHED
    standings = tournament.standings()
    assert [line.games for line in standings] == [3] * 6
    assert sum(line.points for line in standings) > 0
    keys = [(-s.points, -s.stock_left, s.time) for s in standings]
    assert keys == sorted(keys)
    with pytest.raises(TournamentError) as refused:
        tournament.apply(StartNext(HOST), now)
    assert refused.value.code is TournamentErrorCode.BAD_STATE
    # One clause, no parenthesis: clients show it inside their own sentences.
    assert str(refused.value) == "not now: it is not open; the tournament is finished"


def test_equal_totals_share_a_place_and_are_marked_tied() -> None:
    tournament = with_entrants(new_tournament(race_size=4), "a", "b", "c")
    (race,) = orders(tournament.apply(StartNext(HOST), 10.0))
    tournament.apply(
        RecordResult(result_of(race, won("a", 3, 9.0), lost("b", 8, 20), lost("c", 8, 20))), 30.0
    )
    lines = {line.entrant_id: line for line in tournament.standings()}
    assert (lines["a"].place, lines["a"].tied) == (1, False)
    assert (lines["b"].place, lines["b"].tied) == (2, True)
    assert (lines["c"].place, lines["c"].tied) == (2, True)


def test_a_no_show_scores_nothing_and_does_not_count_for_the_others() -> None:
    tournament = with_entrants(new_tournament(race_size=8), "a", "b", "c", "away")
    (race,) = orders(tournament.apply(StartNext(HOST, frozenset("abc")), 10.0))
    assert "away" not in race.entrants
    tournament.apply(
        RecordResult(result_of(race, won("a", 3, 9.0), lost("b", 8), no_show("c"))), 30.0
    )
    assert points(tournament) == {"a": 1, "b": 0, "c": 0, "away": 0}
    outcomes = {e.entrant_id: [g.outcome for g in e.games] for e in tournament.entrants.values()}
    assert outcomes == {"a": ["won"], "b": ["lost"], "c": ["no_show"], "away": ["no_show"]}


def test_a_late_joiner_plays_from_the_next_round() -> None:
    tournament = with_entrants(new_tournament(), "a", "b")
    (race,) = orders(tournament.apply(StartNext(HOST), 10.0))
    tournament.apply(Join("late", "late", bot=False), 11.0)
    assert "late" not in race.entrants
    tournament.apply(RecordResult(result_of(race, won("a", 1, 9.0), lost("b", 3))), 30.0)
    (second,) = orders(tournament.apply(StartNext(HOST), 40.0))
    assert set(second.entrants) == {"a", "b", "late"}


def test_a_round_cannot_start_while_the_last_one_runs() -> None:
    tournament = with_entrants(new_tournament(), "a", "b")
    tournament.apply(StartNext(HOST), 10.0)
    with pytest.raises(TournamentError) as refused:
        tournament.apply(StartNext(HOST), 11.0)
    assert refused.value.code is TournamentErrorCode.BAD_STATE
    assert tournament.round == 1


def test_an_entrant_who_left_keeps_its_points_and_is_not_dealt_again() -> None:
    tournament = with_entrants(new_tournament(), "a", "b", "c")
    (race,) = orders(tournament.apply(StartNext(HOST), 10.0))
    tournament.apply(
        RecordResult(result_of(race, won("a", 1, 9.0), lost("b", 3), lost("c", 2))), 30.0
    )
    tournament.apply(Leave("a"), 31.0)
    (second,) = orders(tournament.apply(StartNext(HOST), 40.0))
    assert "a" not in second.entrants
    assert points(tournament)["a"] == 2
    assert tournament.entrants["a"].state is EntrantState.LEFT


# --------------------------------------------------------------- host only


@pytest.mark.parametrize(
    "command",
    [
        Open("wrong-token-000000"),
        StartNext("x" * 20),
        Remove("x" * 20, "a"),
        Pause("nope"),
        Resume("nope"),
        End(""),
    ],
)
def test_host_commands_are_refused_without_the_host_token(command: object) -> None:
    tournament = Tournament(
        "T1", "CLUB42", hash_token(HOST), TournamentSettings("n"), 0.0, lambda: "s"
    )
    with pytest.raises(TournamentError) as refused:
        tournament.apply(command, 1.0)  # type: ignore[arg-type]
    assert refused.value.code is TournamentErrorCode.NOT_HOST
    assert tournament.status is TournamentStatus.CREATED
    assert not tournament.is_host(HOST + "x") and tournament.is_host(HOST)


def test_removing_an_entrant_resigns_it_and_drops_it_from_the_standings() -> None:
    tournament = with_entrants(new_tournament(), "a", "b", "c")
    (race,) = orders(tournament.apply(StartNext(HOST), 10.0))
    events = tournament.apply(Remove(HOST, "c"), 12.0)
    assert events == [EntrantRemoved("c", race.race_id)]
    assert [line.entrant_id for line in tournament.standings()] == ["a", "b"]
    with pytest.raises(TournamentError) as refused:
        tournament.apply(Join("c", "c", bot=False), 13.0)
    assert refused.value.code is TournamentErrorCode.NOT_AN_ENTRANT


def test_nothing_starts_while_paused() -> None:
    tournament = with_entrants(new_tournament(), "a", "b")
    tournament.apply(Pause(HOST), 5.0)
    with pytest.raises(TournamentError):
        tournament.apply(StartNext(HOST), 6.0)
    tournament.apply(Resume(HOST), 7.0)
    assert orders(tournament.apply(StartNext(HOST), 8.0))


def test_ending_lets_the_race_in_progress_finish_and_count() -> None:
    tournament = with_entrants(new_tournament(rounds=5), "a", "b")
    (race,) = orders(tournament.apply(StartNext(HOST), 10.0))
    tournament.apply(End(HOST), 11.0)
    assert tournament.status is TournamentStatus.RUNNING and tournament.ending
    events = tournament.apply(RecordResult(result_of(race, won("a", 1, 9.0), lost("b", 3))), 30.0)
    assert events[-1] == Finished()
    assert points(tournament) == {"a": 1, "b": 0}


def test_a_result_for_a_race_it_did_not_order_is_refused() -> None:
    tournament = with_entrants(new_tournament(), "a", "b")
    (race,) = orders(tournament.apply(StartNext(HOST), 10.0))
    stray = RaceOrdered("other", 1, race.seed, race.entrants)
    with pytest.raises(TournamentError) as refused:
        tournament.apply(RecordResult(result_of(stray, won("a", 1, 9.0), lost("b", 3))), 30.0)
    assert refused.value.code is TournamentErrorCode.UNKNOWN_RACE


def test_joining_twice_or_before_opening_is_refused() -> None:
    closed = Tournament("T1", "CLUB42", hash_token(HOST), TournamentSettings("n"))
    with pytest.raises(TournamentError):
        closed.apply(Join("a", "a", bot=False), 0.0)
    tournament = with_entrants(new_tournament(), "a")
    with pytest.raises(TournamentError) as refused:
        tournament.apply(Join("a", "a", bot=False), 2.0)
    assert refused.value.code is TournamentErrorCode.ALREADY_ENTERED


# -------------------------------------------------------------------- arena


def arena(**settings: object) -> Tournament:
    options = {
        "format": TournamentFormat.ARENA,
        "arena_duration": 300.0,
        "race_size": 3,
        "pairing_delay": 5.0,
        **settings,
    }
    return new_tournament(**options)


def test_an_arena_pairs_free_entrants_as_they_become_free() -> None:
    tournament = with_entrants(arena(), "a", "b", "c", "d")
    events = tournament.apply(StartNext(HOST), 10.0)
    assert events[0] == ArenaStarted(310.0)
    first = orders(events)
    assert [len(race.entrants) for race in first] == [2, 2]
    assert len({race.seed for race in first}) == 2, "every arena race has its own seed"
    # Two come back: they wait for a fuller race until the pairing delay passes.
    race = first[0]
    tournament.apply(
        RecordResult(result_of(race, won(race.entrants[0], 2, 5.0), lost(race.entrants[1], 4))),
        20.0,
    )
    assert not orders(tournament.apply(Tick(), 21.0))
    assert tournament.next_deadline() == 25.0
    again = orders(tournament.apply(Tick(), 25.0))
    assert [set(r.entrants) for r in again] == [set(race.entrants)]


def test_an_arena_of_a_few_minutes_closes_its_window_and_counts_the_last_races() -> None:
    tournament = with_entrants(arena(arena_duration=180.0), *"abcdef")
    now = 0.0
    pending = orders(tournament.apply(StartNext(HOST), now))
    played = 0
    while tournament.status is not TournamentStatus.FINISHED:
        now += 30.0
        finishing, pending = pending, []
        for order in finishing:
            result = play_order(order, tournament.settings, now)
            pending += orders(tournament.apply(RecordResult(result), now))
            played += 1
        pending += orders(tournament.apply(Tick(), now))
        assert not pending or now < 180.0, "no race forms after the window closes"
        assert now < 1000
    assert played >= 6
    assert sum(line.games for line in tournament.standings()) == 3 * played
    assert all(race.result is not None for race in tournament.races.values())


def test_a_race_running_when_the_window_closes_still_counts() -> None:
    tournament = with_entrants(arena(arena_duration=60.0), "a", "b")
    (race,) = orders(tournament.apply(StartNext(HOST), 0.0))
    tournament.apply(Tick(), 61.0)
    assert tournament.ending and tournament.status is TournamentStatus.RUNNING
    events = tournament.apply(RecordResult(result_of(race, won("a", 2, 5.0), lost("b", 3))), 70.0)
    assert events[-1] == Finished()
    assert points(tournament) == {"a": 1, "b": 0}


def test_pausing_an_arena_stops_its_clock() -> None:
    tournament = with_entrants(arena(arena_duration=100.0), "a")
    tournament.apply(StartNext(HOST), 0.0)
    tournament.apply(Pause(HOST), 40.0)
    tournament.apply(Tick(), 120.0)
    assert not tournament.ending
    tournament.apply(Resume(HOST), 70.0 + 40.0)
    assert tournament.ends_at == 170.0


def test_an_arena_no_show_is_taken_out_of_pairing_until_available_again() -> None:
    tournament = with_entrants(arena(race_size=2), "a", "b", "c")
    (race,) = orders(tournament.apply(StartNext(HOST), 0.0))
    present, absent = race.entrants
    tournament.apply(RecordResult(result_of(race, won(present, 2, 5.0), no_show(absent))), 50.0)
    paired = orders(tournament.apply(Tick(), 60.0))
    assert all(absent not in r.entrants for r in paired)
    tournament.apply(SetAvailable(absent, True), 61.0)
    assert not tournament.entrants[absent].race_id
    assert tournament.entrants[absent].available


def test_an_arena_pairs_only_entrants_who_are_present() -> None:
    tournament = with_entrants(arena(race_size=2), "a", "b", "gone")
    tournament.is_present = lambda entrant_id: entrant_id != "gone"
    (race,) = orders(tournament.apply(StartNext(HOST), 0.0))
    assert set(race.entrants) == {"a", "b"}
    tournament.is_present = lambda entrant_id: True
    tournament.apply(RecordResult(result_of(race, won("a", 2, 5.0), lost("b", 3))), 10.0)
    assert "gone" in {e for r in tournament.races_in_progress() for e in r.entrants}


# ----------------------------------------------------------------- replay


def test_replaying_the_events_rebuilds_the_same_tournament() -> None:
    settings = TournamentSettings("club night", race_size=2)
    recorded = RecordedTournament("CLUB42", settings, HOST)
    tournament, run = recorded.tournament, recorded.run

    run(Open(HOST), 0.0)
    for name in "abc":
        run(Join(name, name, bot=False), 1.0)
    run(Pause(HOST), 2.0)
    run(Resume(HOST), 3.0)
    for order in orders(run(StartNext(HOST), 10.0)):
        run(RecordResult(play_order(order, settings, 10.0)), 20.0)
    run(Remove(HOST, "c"), 21.0)
    rebuilt = recorded.rebuilt()
    assert rebuilt.standings() == tournament.standings()
    assert (rebuilt.round, rebuilt.status) == (tournament.round, tournament.status)
    assert rebuilt.races == tournament.races


# ---------------------------------------------------------------- abandoned


IDLE = 3600.0


def test_a_tournament_idle_for_its_time_ends_with_the_events_an_end_makes() -> None:
    expired = with_entrants(new_tournament(), "a", "b")  # its last event at 1.0
    ended = with_entrants(new_tournament(), "a", "b")
    assert expired.idle_deadline(IDLE) == 1.0 + IDLE
    assert expired.apply(Expire(IDLE), IDLE) == [], "not idle long enough yet"
    statuses = [expired.status]
    events = expired.apply(Expire(IDLE), 1.0 + IDLE)
    assert events == ended.apply(End(HOST), 1.0 + IDLE) == [Ending(), Finished()]
    statuses.append(expired.status)
    assert statuses == [TournamentStatus.OPEN, TournamentStatus.FINISHED]
    assert expired.idle_deadline(IDLE) is None and expired.apply(Expire(IDLE), 1e9) == []


def test_every_event_starts_the_idle_time_again_and_a_refusal_does_not() -> None:
    tournament = with_entrants(new_tournament(), "a", "b")
    tournament.apply(Join("c", "c", bot=False), 500.0)
    with pytest.raises(TournamentError):
        tournament.apply(Join("c", "c", bot=False), 900.0)  # refused: nothing happened
    assert tournament.idle_deadline(IDLE) == 500.0 + IDLE
    assert tournament.apply(Expire(IDLE), 499.0 + IDLE) == []
    assert tournament.apply(Expire(IDLE), 500.0 + IDLE)[-1] == Finished()


def test_a_tournament_with_a_race_in_progress_is_never_idle() -> None:
    tournament = with_entrants(new_tournament(rounds=2), "a", "b")
    (race,) = orders(tournament.apply(StartNext(HOST), 10.0))
    assert tournament.idle_deadline(IDLE) is None
    assert tournament.apply(Expire(IDLE), 10.0 + 10 * IDLE) == []
    tournament.apply(RecordResult(result_of(race, won("a", 1, 9.0), lost("b", 3))), 20.0)
    assert tournament.idle_deadline(IDLE) == 20.0 + IDLE


def test_a_tournament_never_opened_expires_and_its_host_may_end_it() -> None:
    never_opened = Tournament(
        "T1", "CLUB42", hash_token(HOST), TournamentSettings("n"), 5.0, lambda: "s"
    )
    assert never_opened.idle_deadline(IDLE) == 5.0 + IDLE
    assert never_opened.idle_deadline(0.0) is None, "0: never"
    assert never_opened.apply(Expire(IDLE), 5.0 + IDLE) == [Ending(), Finished()]
    ended = Tournament("T2", "CLUB43", hash_token(HOST), TournamentSettings("n"), 5.0)
    assert ended.apply(End(HOST), 6.0) == [Ending(), Finished()]
    with pytest.raises(TournamentError) as refused:
        ended.apply(End(HOST), 7.0)
    assert refused.value.code is TournamentErrorCode.BAD_STATE


def test_a_restored_tournament_is_idle_from_its_last_stored_event() -> None:
    settings = TournamentSettings("club night")
    recorded = RecordedTournament("CLUB42", settings, HOST)
    recorded.run(Open(HOST), 0.0)
    recorded.run(Join("a", "a", bot=False), 40.0)
    assert recorded.rebuilt().idle_deadline(IDLE) == 40.0 + IDLE
    recorded.run(Expire(IDLE), 40.0 + IDLE)
    rebuilt = recorded.rebuilt()
    assert rebuilt.status is TournamentStatus.FINISHED and rebuilt.last_event_at == 40.0 + IDLE


def test_split_evenly_keeps_groups_within_one_of_each_other() -> None:
    for count in range(1, 40):
        for most in range(2, 10):
            groups = split_evenly([str(n) for n in range(count)], most, pairs=False)
            sizes = [len(group) for group in groups]
            assert sum(sizes) == count and max(sizes) <= most
            assert max(sizes) - min(sizes) <= 1
            paired = split_evenly([str(n) for n in range(count)], most, pairs=True)
            assert all(2 <= len(group) <= most for group in paired)
            assert sum(map(len, paired)) >= count - 1
