"""A race's result record, its standings rule, and the check anyone can run on it.

The record holds everything needed to confirm a race independently: the revealed seed and
the commitment published before the start, the ruleset, and every racer's moves. Given
those, :func:`verify_result` re-deals the stock, replays every racer's moves and checks
what the record claims (status, score, counts, standings order).

This module is pure (no I/O): the server builds results with it, ``foursquare verify``
checks saved ones, and the client marks a ``finished`` message as verified with
``verify_result(message.to_result()).ok``.

>>> from engine import Ruleset
>>> entry = RacerResult("p1", "ann", False, RacerOutcome.RESIGNED, None, None, 0, 0, 0, ())
>>> result = RaceResult.build("r1", "seed", Ruleset(), [entry])
>>> verify_result(result).ok
True
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from engine import Game, IllegalMove, Position, Ruleset, Status, commitment

#: Bumped when the record's layout changes; readers refuse versions they do not know.
RESULT_FORMAT = 1


class RacerOutcome(Enum):
    """How a racer's race ended."""

    WON = "won"
    LOST = "lost"
    RESIGNED = "resigned"
    TIMED_OUT = "timed_out"
    """Still playing when the race's time limit passed."""


@dataclass(frozen=True, slots=True)
class RacerResult:
    """One racer's line in the result, with the moves that justify it."""

    racer_id: str
    name: str
    bot: bool
    outcome: RacerOutcome
    score: int | None
    """Cards left in the stock when the racer won; ``None`` otherwise."""
    finish_time: float | None
    """Seconds from the start to the racer's last move or resignation; ``None`` if timed out."""
    cards_played: int
    face_up: int
    face_down: int
    moves: tuple[Position, ...]
    move_ms: tuple[int, ...] | None = None
    """When each move was made, in milliseconds from the start (one per move), for a
    replay at the race's own pace; ``None`` in records written before races kept it."""

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON or msgpack (``move_ms`` only when known, so that a record
        without it reads as it always did)."""
        timing = {} if self.move_ms is None else {"move_ms": list(self.move_ms)}
        return {
            "racer_id": self.racer_id,
            "name": self.name,
            "bot": self.bot,
            "outcome": self.outcome.value,
            "score": self.score,
            "finish_time": self.finish_time,
            "cards_played": self.cards_played,
            "face_up": self.face_up,
            "face_down": self.face_down,
            "moves": [list(move) for move in self.moves],
            **timing,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RacerResult:
        """The inverse of :meth:`to_dict`; raises ``ValueError`` on a malformed entry."""
        try:
            moves = tuple(_position(move) for move in data["moves"])
            entry = cls(
                racer_id=_typed(data["racer_id"], str, "racer_id"),
                name=_typed(data["name"], str, "name"),
                bot=_typed(data["bot"], bool, "bot"),
                outcome=RacerOutcome(data["outcome"]),
                score=_optional_int(data["score"], "score"),
                finish_time=_optional_number(data["finish_time"], "finish_time"),
                cards_played=_typed(data["cards_played"], int, "cards_played"),
                face_up=_typed(data["face_up"], int, "face_up"),
                face_down=_typed(data["face_down"], int, "face_down"),
                moves=moves,
                move_ms=_optional_times(data.get("move_ms")),
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"malformed racer entry: {error!r}") from None
        return entry


#: Among racers who did not win, with the same board at the end: a game played to its
#: end ranks above one the clock stopped, and that above one given up (or left).
_NOT_WON_ORDER = {RacerOutcome.LOST: 0, RacerOutcome.TIMED_OUT: 1, RacerOutcome.RESIGNED: 2}

StandingKey = tuple[int, int, int, int, float]


def standing_key(entry: RacerResult) -> StandingKey:
    """The standings rule as a sort key (smaller ranks higher); racers with equal keys are
    tied (a tournament scores no point between them).

    Racers who won come first, by score (stock left) descending, then finish time
    ascending. Everyone else follows, by face-up cards at the end descending, then cards
    played descending, then how the game ended (lost, then timed out, then resigned),
    then finish time ascending (a timed-out racer has none: it comes after). Finish times
    count to the millisecond, the precision results are published with, so that anyone
    ranking a published result gets the same order.
    """
    finish = float("inf") if entry.finish_time is None else round(entry.finish_time * 1000)
    if entry.outcome is RacerOutcome.WON:
        return (0, -(entry.score or 0), 0, 0, finish)
    return (1, -entry.face_up, -entry.cards_played, _NOT_WON_ORDER[entry.outcome], finish)


def rank_racers(entries: Iterable[RacerResult]) -> list[RacerResult]:
    """The entries in standings order: by :func:`standing_key`, and racers tied on it by
    racer id, so that the order is the same whoever ranks them (never the joining order,
    which a result does not hold)."""
    return sorted(entries, key=lambda entry: (standing_key(entry), entry.racer_id))


@dataclass(frozen=True, slots=True)
class RaceResult:
    """The full, verifiable record of a finished race; ``racers`` are in standings order."""

    race_id: str
    seed: str
    commitment: str
    ruleset: Ruleset
    racers: tuple[RacerResult, ...]
    started_at: int = 0
    """Server time (Unix epoch, milliseconds) of the start."""
    ended_at: int = 0
    format: int = RESULT_FORMAT

    @classmethod
    def build(
        cls,
        race_id: str,
        seed: str,
        ruleset: Ruleset,
        entries: Iterable[RacerResult],
        started_at: int = 0,
        ended_at: int = 0,
    ) -> RaceResult:
        """A result with the commitment computed from ``seed`` and the standings applied."""
        ranked = tuple(rank_racers(entries))
        return cls(race_id, seed, commitment(seed), ruleset, ranked, started_at, ended_at)

    def to_dict(self) -> dict[str, Any]:
        """Plain values for JSON or msgpack."""
        return {
            "format": self.format,
            "race_id": self.race_id,
            "seed": self.seed,
            "commitment": self.commitment,
            "ruleset": self.ruleset.to_dict(),
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "standings": [entry.to_dict() for entry in self.racers],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RaceResult:
        """The inverse of :meth:`to_dict`; raises ``ValueError`` on a malformed record."""
        if not isinstance(data, Mapping):
            raise ValueError("a result is a map")
        if data.get("format") != RESULT_FORMAT:
            raise ValueError(f"unknown result format {data.get('format')!r}")
        try:
            standings = data["standings"]
            if not isinstance(standings, list):
                raise ValueError("standings must be a list")
            return cls(
                race_id=_typed(data["race_id"], str, "race_id"),
                seed=_typed(data["seed"], str, "seed"),
                commitment=_typed(data["commitment"], str, "commitment"),
                ruleset=Ruleset.from_dict(dict(data["ruleset"])),
                racers=tuple(RacerResult.from_dict(entry) for entry in standings),
                started_at=_typed(data.get("started_at", 0), int, "started_at"),
                ended_at=_typed(data.get("ended_at", 0), int, "ended_at"),
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"malformed result: {error!r}") from None

    def to_json(self) -> str:
        """The record as indented JSON, the form ``foursquare verify`` reads."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> RaceResult:
        """Read the form written by :meth:`to_json`."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(f"not JSON: {error}") from None
        return cls.from_dict(data)


@dataclass(frozen=True, slots=True)
class Verification:
    """What :func:`verify_result` found: ``ok`` when ``problems`` is empty."""

    problems: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """Whether the record holds up."""
        return not self.problems


def verify_result(result: RaceResult) -> Verification:
    """Re-deal the revealed seed, replay every racer's moves, and check every claim.

    Checks: the seed matches the published commitment; every move is legal; each racer's
    outcome, score and counts are what the replay gives; each racer's move times, when
    given, are one per move, in order, and none after its finish time; the standings
    follow the rule.
    """
    problems: list[str] = []
    if commitment(result.seed) != result.commitment:
        problems.append("the revealed seed does not match the published commitment")
    for entry in result.racers:
        problems.extend(_check_racer(result.seed, result.ruleset, entry))
    if [e.racer_id for e in rank_racers(result.racers)] != [e.racer_id for e in result.racers]:
        problems.append("the standings are not in the order the standings rule gives")
    return Verification(tuple(problems))


def _check_racer(seed: str, ruleset: Ruleset, entry: RacerResult) -> list[str]:
    who = f"racer {entry.name!r} ({entry.racer_id})"
    timing = _check_times(entry)
    if timing is not None:
        return [f"{who}: {timing}"]
    game = Game.new(seed, ruleset)
    for index, move in enumerate(entry.moves):
        try:
            game.play(move)
        except IllegalMove as error:
            return [f"{who}: move {index + 1} {move} is illegal: {error}"]
    problems = []
    expected_status = {
        RacerOutcome.WON: (Status.WON,),
        RacerOutcome.LOST: (Status.LOST,),
        RacerOutcome.RESIGNED: (Status.PLAYING,),
        RacerOutcome.TIMED_OUT: (Status.PLAYING,),
    }[entry.outcome]
    if game.status not in expected_status:
        problems.append(
            f"{who}: claimed {entry.outcome.value} but the moves leave the game {game.status.value}"
        )
    claimed = (entry.score, entry.cards_played, entry.face_up, entry.face_down)
    replayed = (game.score, game.cards_played, game.face_up, game.face_down)
    if claimed != replayed:
        problems.append(
            f"{who}: claimed (score, played, face up, face down) = {claimed}, "
            f"the replay gives {replayed}"
        )
    return problems


def _check_times(entry: RacerResult) -> str | None:
    """What is wrong with ``entry``'s move times (``None`` if nothing is, or none are given)."""
    times = entry.move_ms
    if times is None:
        return None
    if len(times) != len(entry.moves):
        return f"{len(times)} move times for {len(entry.moves)} moves"
    if any(later < earlier for earlier, later in itertools.pairwise(times)):
        return "the move times are not in order"
    if entry.finish_time is not None and times and times[-1] > round(entry.finish_time * 1000):
        return "a move is timed after the racer's finish"
    return None


def _optional_times(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"move_ms must be a list, not {value!r}")
    times = tuple(_typed(time, int, "move_ms[]") for time in value)
    if any(time < 0 for time in times):
        raise ValueError("move_ms holds a negative time")
    return times


def _typed(value: Any, kind: type, name: str) -> Any:
    # bool is an int subclass: an int field must not accept True.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{name} must be {kind.__name__}, not {value!r}")
    return value


def _optional_int(value: Any, name: str) -> int | None:
    return None if value is None else int(_typed(value, int, name))


def _optional_number(value: Any, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, not {value!r}")
    return float(value)


def _position(value: Any) -> Position:
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(type(v) is int for v in value)
    ):
        raise ValueError(f"a move is [row, col], not {value!r}")
    return (value[0], value[1])
