"""The lobby core without sockets: matching, race ids, listing and seating."""

from __future__ import annotations

import itertools
from collections.abc import Container

from server.lobby import (
    CreateRace,
    DailyRace,
    JoinRace,
    JoinRefused,
    Listing,
    Lobby,
    NodesLoaded,
    QuickRace,
    RaceClosed,
    RaceGone,
    RaceToOpen,
    RaceToPlace,
    RaceUpdated,
    SeatChanged,
    Seated,
    Unseated,
)
from server.race import Phase, RaceOptions

QUICK = RaceOptions(max_racers=4, min_racers=2)


def counting_ids() -> Lobby:
    """A lobby whose race ids are R1, R2, ... (skipping any taken)."""
    numbers = itertools.count(1)

    def new_id(taken: Container[str]) -> str:
        while (race_id := f"R{next(numbers)}") in taken:
            pass
        return race_id

    return Lobby(QUICK, new_id=new_id, listed=3)


def seat(lobby: Lobby, session_id: str, race_id: str, racers: int, options: RaceOptions = QUICK,
         phase: Phase = Phase.LOBBY) -> None:
    """The race took ``session_id``: seated, and the race now has ``racers``."""
    lobby.apply(Seated(session_id, race_id))
    open_ = phase is Phase.LOBBY and racers < options.max_racers
    lobby.apply(RaceUpdated(Listing(race_id, options, phase, racers, open_)))


def test_a_quick_race_opens_a_race_when_none_is_open_and_then_fills_it() -> None:
    lobby = counting_ids()
    assert lobby.apply(QuickRace("ann")) == [RaceToOpen("R1", QUICK), JoinRace("ann", "R1")]
    seat(lobby, "ann", "R1", racers=1)
    assert lobby.apply(QuickRace("bob")) == [JoinRace("bob", "R1")]


def test_a_quick_race_skips_full_started_and_other_races() -> None:
    lobby = counting_ids()
    other = RaceOptions(max_racers=2, min_racers=2)
    lobby.apply(CreateRace("ann", other))
    seat(lobby, "ann", "R1", racers=1, options=other)  # open, but not a quick race
    lobby.apply(QuickRace("bob"))
    seat(lobby, "bob", "R2", racers=4)  # full
    lobby.apply(QuickRace("cat"))
    seat(lobby, "cat", "R3", racers=2, phase=Phase.RUNNING)  # started
    assert lobby.apply(QuickRace("dan")) == [RaceToOpen("R4", QUICK), JoinRace("dan", "R4")]


def test_new_race_ids_are_never_ids_the_lobby_holds() -> None:
    taken_seen: list[set[str]] = []

    def new_id(taken: Container[str]) -> str:
        assert isinstance(taken, dict)
        taken_seen.append(set(taken))
        return "AAAA" if "AAAA" not in taken else "BBBB"

    lobby = Lobby(QUICK, new_id=new_id)
    first = lobby.apply(CreateRace("ann", QUICK))[0]
    second = lobby.apply(CreateRace("bob", QUICK))[0]
    assert isinstance(first, RaceToOpen) and isinstance(second, RaceToOpen)
    assert (first.race_id, second.race_id) == ("AAAA", "BBBB")
    assert taken_seen == [set(), {"AAAA"}]


def test_the_listing_shows_open_public_races_oldest_first_and_at_most_a_page() -> None:
    lobby = counting_ids()
    private = RaceOptions(max_racers=4, min_racers=2, public=False)
    for name in ("a", "b", "c", "d", "e"):
        lobby.apply(CreateRace(name, private if name == "b" else QUICK))
    for number, name in enumerate(("a", "b", "c", "d", "e"), start=1):
        seat(lobby, name, f"R{number}", racers=1, options=private if name == "b" else QUICK)
    seat(lobby, "x", "R3", racers=4)  # full now
    assert [listing.race_id for listing in lobby.open_races()] == ["R1", "R4", "R5"]


def test_seating_moves_a_session_from_race_to_race() -> None:
    lobby = counting_ids()
    assert lobby.apply(Seated("ann", "R1")) == [SeatChanged("ann", None, "R1")]
    assert lobby.apply(Seated("ann", "R1")) == []
    assert lobby.apply(Seated("ann", "R2")) == [SeatChanged("ann", "R1", "R2")]
    assert lobby.seat_of("ann") == "R2"
    assert lobby.apply(Unseated("ann", "R1")) == []  # not there any more
    assert lobby.apply(Unseated("ann", "R2")) == [SeatChanged("ann", "R2", None)]
    assert lobby.seat_of("ann") is None


def test_a_lobby_everyone_left_is_closed_and_its_seats_freed() -> None:
    lobby = counting_ids()
    lobby.apply(QuickRace("ann"))
    seat(lobby, "ann", "R1", racers=1)
    lobby.apply(Unseated("ann", "R1"))
    closed = lobby.apply(RaceUpdated(Listing("R1", QUICK, Phase.LOBBY, 0, True)))
    assert closed == [RaceClosed("R1")]
    assert "R1" not in lobby and lobby.open_races() == []


def test_a_race_opened_for_a_refused_join_is_closed_but_a_peopled_one_is_not() -> None:
    lobby = counting_ids()
    lobby.apply(CreateRace("ann", QUICK))
    assert lobby.apply(JoinRefused("ann", "R1")) == [RaceClosed("R1")]
    lobby.apply(QuickRace("bob"))
    seat(lobby, "bob", "R2", racers=1)
    assert lobby.apply(JoinRefused("cat", "R2")) == []


def test_a_finished_race_gone_frees_its_seats() -> None:
    lobby = counting_ids()
    lobby.apply(QuickRace("ann"))
    seat(lobby, "ann", "R1", racers=1, phase=Phase.FINISHED)
    assert lobby.apply(RaceGone("R1")) == []
    assert lobby.seat_of("ann") is None and "R1" not in lobby


def start(lobby: Lobby, race_id: str, racers: list[str], options: RaceOptions = QUICK) -> list[
        object]:
    """``racers`` seated in ``race_id``, which then starts: what the lobby says to that."""
    for count, racer in enumerate(racers, 1):
        seat(lobby, racer, race_id, racers=count, options=options)
    listing = Listing(race_id, options, Phase.RUNNING, len(racers), False)
    return list(lobby.apply(RaceUpdated(listing)))


def test_without_a_load_map_a_started_race_stays_where_it_is() -> None:
    lobby = counting_ids()
    lobby.apply(QuickRace("ann"))
    assert start(lobby, "R1", ["ann", "bob"]) == []
    assert lobby.seat_of("ann") == "R1" and "R1" in lobby


def test_started_quick_races_go_to_the_least_loaded_nodes_in_turn() -> None:
    lobby = counting_ids()
    lobby.apply(NodesLoaded("n1", {"n1": 0, "n2": 2, "n3": 0}))
    placed = []
    for number in range(1, 6):
        lobby.apply(QuickRace(f"a{number}"))
        placed.append(start(lobby, f"R{number}", [f"a{number}", f"b{number}"]))
    # n3 first (as idle as n1, which runs the lobby), then n1 keeps one, and so on by
    # load, each placed race counted at once.
    assert placed == [[RaceToPlace("R1", "n3")], [], [RaceToPlace("R3", "n3")], [],
                      [RaceToPlace("R5", "n2")]]
    # A race placed elsewhere is forgotten here with its seats; one kept here is not.
    assert "R1" not in lobby and lobby.seat_of("a1") is None
    assert lobby.seat_of("a2") == "R2"


def test_a_daily_room_is_placed_once_started_as_a_quick_race_is() -> None:
    lobby = counting_ids()
    lobby.apply(NodesLoaded("n1", {"n1": 0, "n2": 0}))
    day = RaceOptions(max_racers=4, min_racers=1, public=False, daily="2026-12-01")
    assert lobby.apply(DailyRace("ann", day)) == [RaceToOpen("R1", day), JoinRace("ann", "R1")]
    assert start(lobby, "R1", ["ann"], options=day) == [RaceToPlace("R1", "n2")]


def test_private_and_tournament_races_stay_and_a_race_is_placed_once_started() -> None:
    lobby = counting_ids()
    lobby.apply(NodesLoaded("n1", {"n1": 5, "n2": 0}))
    private = RaceOptions(max_racers=4, min_racers=2, public=False)
    lobby.apply(CreateRace("ann", private))
    assert start(lobby, "R1", ["ann", "bob"], options=private) == []
    assert start(lobby, "T9", ["cat", "dan"]) == []  # a tournament's race: not the lobby's
    lobby.apply(QuickRace("eve"))
    seat(lobby, "eve", "R2", racers=1)
    countdown = Listing("R2", QUICK, Phase.COUNTDOWN, 2, True)
    assert lobby.apply(RaceUpdated(countdown)) == []  # still open: still the lobby's
    assert lobby.apply(RaceUpdated(Listing("R2", QUICK, Phase.RUNNING, 2, False))) == [
        RaceToPlace("R2", "n2")
    ]


def test_a_load_map_emptied_places_nothing_more() -> None:
    lobby = counting_ids()
    lobby.apply(NodesLoaded("n1", {"n1": 5, "n2": 0}))
    lobby.apply(NodesLoaded("n1", {}))  # (the node stepped down)
    lobby.apply(QuickRace("ann"))
    assert start(lobby, "R1", ["ann", "bob"]) == []
