"""Races for tournament tests: real races played by bots, or results written by hand."""

from __future__ import annotations

import dataclasses
import itertools
import zlib
from collections.abc import Callable, Sequence

from client.bots import GreedyStrategy, RacerView, RandomStrategy, Strategy
from engine import Card, Position
from protocol.result import RaceResult, RacerOutcome, RacerResult
from server.race import CardToPlace, Join, Race, Start, Tick
from server.tournament import (
    Command,
    Event,
    Open,
    RaceOrdered,
    RecordResult,
    StartNext,
    Tournament,
    TournamentSettings,
    hash_token,
)
from server.tournament import Join as Enter

HOST = "host-token-0123456789"
"""The host token of the tournaments :func:`race_all` races."""


def play_order(
    order: RaceOrdered,
    settings: TournamentSettings,
    now: float,
    idle: frozenset[str] = frozenset(),
) -> RaceResult:
    """Hold the race ``order`` asks for, all at time ``now``, and return its result.

    Entrants play different games on the shared seed: one whose id's checksum is even is
    played by the greedy bot, the others by the random bot seeded with the checksum; each
    takes its own steady time per move. Entrants in ``idle`` never move: the race then
    ends at its time limit.
    """
    race = Race(order.race_id, order.seed, settings.race_options(len(order.entrants)))
    for entrant_id in order.entrants:
        race.apply(Join(entrant_id, entrant_id, bot=True), now)
    pending = [s.event for s in race.apply(Start(), now) if isinstance(s.event, CardToPlace)]
    cards: dict[str, list[Card]] = {entrant_id: [] for entrant_id in order.entrants}
    moves: dict[str, list[Position]] = {entrant_id: [] for entrant_id in order.entrants}
    checksums = {e: zlib.crc32(e.encode()) for e in order.entrants}
    bots: dict[str, Strategy] = {
        e: GreedyStrategy(seed=checksum) if checksum % 2 == 0 else RandomStrategy(seed=checksum)
        for e, checksum in checksums.items()
    }
    while pending:
        card = pending.pop()
        if card.racer_id in idle:
            continue
        cards[card.racer_id].append(card.card)
        view = RacerView(settings.ruleset, tuple(cards[card.racer_id]), tuple(moves[card.racer_id]))
        move = bots[card.racer_id].choose(view)
        moves[card.racer_id].append(move)
        pace = 1.0 + checksums[card.racer_id] % 7 / 10
        sends = race.place(card.racer_id, card.move_number, move, now + card.move_number * pace)
        pending.extend(s.event for s in sends if isinstance(s.event, CardToPlace))
    if race.result is None:
        race.apply(Tick(), now + settings.time_limit)
    assert race.result is not None
    return race.result


def relabelled(template: RaceResult, order: RaceOrdered) -> RaceResult:
    """``template`` (a race really played on the same seed) as the result of ``order``:
    its racers' games handed to ``order``'s entrants, so that it replays as it is."""
    racers = [
        dataclasses.replace(line, racer_id=entrant, name=entrant)
        for line, entrant in zip(template.racers, order.entrants, strict=True)
    ]
    return RaceResult.build(order.race_id, template.seed, template.ruleset, racers)


def race_all(run: Callable[[Command, float], Sequence[object]], settings: TournamentSettings,
             entrants: int) -> None:
    """Through ``run`` (a tournament's ``apply``, or a store's as well): open, enter
    ``entrants`` bots, and race every round, each race given the games of one race really
    played on the same seed (the tournament must deal one seed only). Entrants are
    ``e000``, ``e001``, ...; the host token is :data:`HOST`."""
    run(Open(HOST), 0.0)
    for n in range(entrants):
        run(Enter(f"e{n:03}", f"e{n:03}", bot=True), 1.0)
    template: RaceResult | None = None
    for number in range(settings.rounds):
        now = 10.0 + 1000.0 * number
        for order in run(StartNext(HOST), now):
            if isinstance(order, RaceOrdered):
                template = template or play_order(order, settings, now)
                run(RecordResult(relabelled(template, order)), now + 300)


def won(racer_id: str, score: int, time: float) -> RacerResult:
    """A hand-written line: ``racer_id`` won with ``score`` cards left after ``time`` s."""
    return RacerResult(
        racer_id, racer_id, False, RacerOutcome.WON, score, time, 40 - score, 16, 0, ()
    )


def lost(racer_id: str, face_up: int, played: int = 20) -> RacerResult:
    """A hand-written line: ``racer_id`` lost with ``face_up`` cards up after ``played``."""
    return RacerResult(
        racer_id, racer_id, False, RacerOutcome.LOST, None, 60.0, played, face_up, 5, ()
    )


def no_show(racer_id: str) -> RacerResult:
    """A hand-written line: ``racer_id`` made no move before the time limit."""
    return RacerResult(racer_id, racer_id, False, RacerOutcome.TIMED_OUT, None, None, 0, 0, 0, ())


def result_of(order: RaceOrdered, *lines: RacerResult) -> RaceResult:
    """The result of ``order``'s race with the given lines."""
    assert {line.racer_id for line in lines} == set(order.entrants)
    return RaceResult.build(order.race_id, order.seed, TournamentSettings("x").ruleset, lines)


class RecordedTournament:
    """A tournament (id ``T1``, seeds ``seed-1``, ``seed-2``, ...) that keeps every event
    it gives, with its time, so that a test can replay them into a new one."""

    def __init__(self, code: str, settings: TournamentSettings, host_token: str) -> None:
        seeds = (f"seed-{n}" for n in itertools.count(1))
        self._code, self._settings, self._token_hash = code, settings, hash_token(host_token)
        self.tournament = Tournament(
            "T1", code, self._token_hash, settings, 0.0, lambda: next(seeds)
        )
        self.log: list[tuple[Event, float]] = []

    def run(self, command: Command, now: float) -> list[Event]:
        """Apply ``command`` at ``now`` and keep its events."""
        events = self.tournament.apply(command, now)
        self.log.extend((event, now) for event in events)
        return events

    def rebuilt(self) -> Tournament:
        """A new tournament restored from the events kept so far."""
        return Tournament.restore(
            "T1", self._code, self._token_hash, self._settings, 0.0, self.log
        )
