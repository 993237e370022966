"""Properties of whole tournaments: the published record always gives the standings back."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.tournament import EntrantState
from server.tournament import (
    Join,
    Leave,
    Open,
    RaceOrdered,
    RecordResult,
    Remove,
    StartNext,
    TournamentSettings,
)
from server.tournament_export import document_from, verify_document
from server.tournament_host import tournament_export
from tests.tournament.racing import RecordedTournament, play_order

HOST = "host-token-0123456789"
NAMES = [f"e{n}" for n in range(7)]


@dataclass(frozen=True)
class RoundPlan:
    """Who is absent when the round starts, who idles in it, who leaves or is removed after."""

    absent: frozenset[str]
    idle: frozenset[str]
    leaving: frozenset[str]
    removed: frozenset[str]


@dataclass(frozen=True)
class Plan:
    settings: TournamentSettings
    entrants: list[str]
    rounds: list[RoundPlan]


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    options = TournamentSettings(
        "drawn", rounds=draw(st.integers(1, 3)), race_size=draw(st.integers(2, 4))
    )
    entrants = NAMES[: draw(st.integers(2, 7))]
    names = st.frozensets(st.sampled_from(entrants), max_size=2)
    rounds = [
        RoundPlan(draw(names), draw(names), draw(names), draw(names)) for _ in range(options.rounds)
    ]
    return Plan(options, entrants, rounds)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_the_record_of_any_tournament_verifies_and_replays(plan: Plan) -> None:
    options = plan.settings
    recorded = RecordedTournament("CUP123", options, HOST)
    tournament, run = recorded.tournament, recorded.run

    run(Open(HOST), 0.0)
    for name in plan.entrants:
        run(Join(name, name, bot=True), 1.0)
    now = 10.0
    for step in plan.rounds:
        present = frozenset(tournament.entrants) - step.absent
        if not any(
            e.state is EntrantState.ACTIVE and e.entrant_id in present
            for e in tournament.entrants.values()
        ):
            break
        orders = [e for e in run(StartNext(HOST, present), now) if isinstance(e, RaceOrdered)]
        for order in orders:
            result = play_order(order, options, now, step.idle)
            run(RecordResult(result), now + options.time_limit)
        for name in step.leaving:
            if tournament.entrants[name].state is EntrantState.ACTIVE:
                run(Leave(name), now + 1)
        for name in step.removed:
            if tournament.entrants[name].state is not EntrantState.REMOVED:
                run(Remove(HOST, name), now + 2)
        now += 1000.0

    document = document_from(tournament_export(tournament, now))
    assert verify_document(document) == []
    rebuilt = recorded.rebuilt()
    assert rebuilt.standings() == tournament.standings()
