"""The tournament tracker on its own: what it says, which races it follows; and the
commands' refusal of a code the protocol would refuse."""

from __future__ import annotations

import dataclasses

import pytest

from cli.main import main
from client.race_state import RaceTracker
from client.tournament_state import FOLLOWED_RACES, TournamentTracker
from protocol import CardToPlace, Progress, RaceFinished, RacerStatus, RaceSnapshot, RaceState
from protocol.examples import EXAMPLES
from protocol.tournament import (
    TOURNAMENT_EXAMPLES,
    EntrantState,
    TournamentFormat,
    TournamentRaceInfo,
    TournamentState,
    TournamentStatus,
)


def _example() -> TournamentState:
    example = TOURNAMENT_EXAMPLES["tournament"]
    assert isinstance(example, TournamentState)
    return example


EXAMPLE = _example()
ANN = "p-3f9a01c2de"


def state(**changes: object) -> TournamentState:
    """The protocol's example state (round 2 of 3, Ann racing), with ``changes``."""
    return dataclasses.replace(EXAMPLE, **changes)  # type: ignore[arg-type]  # any field


def race(race_id: str, *racers: str) -> TournamentRaceInfo:
    return TournamentRaceInfo(race=race_id, round=1, racers=racers, finished=False)


def test_the_phase_line_says_where_the_tournament_stands() -> None:
    tracker = TournamentTracker("CLUB42")
    assert tracker.phase_line(0.0) == "Looking for tournament CLUB42…"
    tracker.apply_state(state(status=TournamentStatus.OPEN, races=()), 0.0)
    assert tracker.phase_line(0.0).startswith("Registration is open · 2 entrants")
    tracker.apply_state(state(), 0.0)
    assert tracker.phase_line(0.0) == "Round 2 of 3"
    tracker.apply_state(state(races=(), paused=True), 0.0)
    assert tracker.phase_line(0.0) == (
        "Round 2 of 3 over · the host starts the next · paused by the host"
    )
    tracker.apply_state(state(status=TournamentStatus.FINISHED), 0.0)
    assert tracker.phase_line(0.0) == "Finished · final standings."


def test_an_arena_counts_its_window_down_on_the_local_clock_unless_paused() -> None:
    tracker = TournamentTracker("CLUB42")
    arena = state(format=TournamentFormat.ARENA, ends_at=EXAMPLE.server_time + 125_000)
    tracker.apply_state(arena, 100.0)
    assert tracker.phase_line(100.0) == "Arena · 2:05 left"
    assert tracker.phase_line(160.0) == "Arena · 1:05 left"
    assert tracker.phase_line(300.0).startswith("Arena · the window has closed")
    tracker.apply_state(dataclasses.replace(arena, paused=True), 100.0)
    assert tracker.phase_line(160.0) == "Arena · 2:05 left · paused by the host"


def test_the_entrant_line_follows_the_entrant() -> None:
    tracker = TournamentTracker("CLUB42")
    tracker.apply_state(state(), 0.0)
    assert tracker.you == ANN
    assert tracker.entrant_line() == "Your race is on."
    tracker.apply_state(state(races=(), format=TournamentFormat.ARENA, you=None), 0.0)
    assert tracker.you == ANN, "broadcast states do not name us; the first one did"
    assert tracker.entrant_line().startswith("Waiting to be paired")
    tracker.available = False
    assert tracker.entrant_line().startswith("You are taking a break")
    left = tuple(
        dataclasses.replace(line, state=EntrantState.LEFT) if line.entrant == ANN else line
        for line in EXAMPLE.standings
    )
    tracker.apply_state(state(standings=left), 0.0)
    assert tracker.entrant_line().startswith("You have left")


def test_an_arena_race_without_a_move_takes_the_entrant_out_of_pairing() -> None:
    tracker = TournamentTracker("CLUB42")
    tracker.apply_state(state(format=TournamentFormat.ARENA), 0.0)
    finished = EXAMPLES["finished"]
    assert isinstance(finished, RaceFinished)
    idle = tuple(dataclasses.replace(line, racer=ANN, moves=()) for line in finished.standings)
    tracker.own_race_finished(finished)
    assert tracker.available
    tracker.own_race_finished(dataclasses.replace(finished, standings=idle[:1]))
    assert not tracker.available


def test_races_are_followed_up_to_a_limit_but_never_our_own() -> None:
    tracker = TournamentTracker("CLUB42")
    races = tuple(race(f"R{n:02d}", f"p-{n}") for n in range(FOLLOWED_RACES + 3))
    new = tracker.apply_state(state(races=(race("MINE", ANN), *races)), 0.0)
    assert new == [r.race for r in races[:FOLLOWED_RACES]]
    assert "MINE" not in tracker.races
    progress = Progress(race="R00", racers=(), server_time=0)
    assert tracker.follows(progress)
    assert not tracker.follows(dataclasses.replace(progress, race="MINE"))
    # A race the state drops is forgotten once finished, or if watching it never began,
    # but kept while its last messages may still come.
    snapshot, finished = EXAMPLES["race"], EXAMPLES["finished"]
    assert isinstance(snapshot, RaceSnapshot) and isinstance(finished, RaceFinished)
    for race_id in ("R00", "R02"):
        tracker.races[race_id] = RaceTracker(snapshot=snapshot)
    tracker.races["R00"].finished = finished
    new = tracker.apply_state(state(races=races[3:]), 1.0)
    assert "R00" not in tracker.races and "R01" not in tracker.races
    assert "R02" in tracker.races
    assert new == [r.race for r in races[FOLLOWED_RACES : FOLLOWED_RACES + 2]], "two freed"
    # The server says a race we followed is gone: the unlisted ones are forgotten at once.
    tracker.forget_unlisted()
    assert "R02" not in tracker.races and set(tracker.races) <= {r.race for r in races[3:]}


def test_a_tournament_code_the_protocol_would_refuse_is_refused_before_connecting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for command in ("play", "watch", "bot"):
        with pytest.raises(SystemExit) as exit_:
            main([command, "--tournament", "no-such!", "--server", "ws://127.0.0.1:9"])
        assert exit_.value.code == 2
        assert "is not a tournament code" in capsys.readouterr().err


def test_a_resignation_ends_our_game_on_screen_though_no_placed_says_so() -> None:
    snapshot, progress = EXAMPLES["race"], EXAMPLES["progress"]
    assert isinstance(snapshot, RaceSnapshot) and isinstance(progress, Progress)
    tracker = RaceTracker()
    tracker.apply(dataclasses.replace(snapshot, state=RaceState.RUNNING, you=None))
    tracker.seat("p1")  # dealt in by a tournament: no join answer names us
    card = EXAMPLES["card"]
    assert isinstance(card, CardToPlace)
    tracker.apply(dataclasses.replace(card, move=1))
    mirror = tracker.mirror
    assert mirror is not None
    tracker.apply(progress)  # our line still racing, the bot's lost: nothing changes for us
    assert mirror.in_hand is not None
    resigned = tuple(
        dataclasses.replace(entry, status=RacerStatus.RESIGNED) if entry.racer == "p1" else entry
        for entry in progress.racers
    )
    tracker.apply(dataclasses.replace(progress, racers=resigned))
    assert mirror.status is RacerStatus.RESIGNED
    assert mirror.in_hand is None
