"""A finished race watched again, move by move, from its result record alone.

The record (:class:`~protocol.result.RaceResult`: what ``finished`` carries, what
``foursquare result`` prints and a tournament export holds) has the revealed seed and
every racer's moves, and, from servers that keep them, when each move was made. Dealing
the seed again and playing the moves through the engine gives every racer's board at
every point of the race: no server is asked anything, so a replay works offline from a
saved record, and costs the server nothing.

A :class:`Replay` puts every racer's moves on one timeline, in the order they were made
(by their times; racers in standings order where two moves share a millisecond). A
record without times (written before results kept them) is played with the racers'
moves in turn, one every :data:`UNTIMED_STEP_MS`. Step ``n`` of the replay shows the
race after the first ``n`` moves of the timeline; :meth:`Replay.frame` draws it.

Nothing is fogged: the race is over and its seed revealed, so a replay shows every
board as it was after every move. The boards have the very shape spectators were sent
(:class:`~protocol.RacerBoard`), so a frame can be compared with what a spectator saw.
Pure: no I/O, no Textual.

>>> from engine import Ruleset
>>> from protocol.result import RaceResult, RacerOutcome, RacerResult
>>> ann = RacerResult("a", "ann", False, RacerOutcome.RESIGNED, None, 2.5, 2, 2, 0,
...                   ((0, 0), (0, 1)), move_ms=(900, 2100))
>>> replay = Replay(RaceResult.build("r1", "seed", Ruleset(), [ann]))
>>> [(move.at_ms, move.racer, move.number) for move in replay.moves]
[(900, 'a', 1), (2100, 'a', 2)]
>>> replay.step_at(1000), replay.frame(1).boards["a"].shown
(1, 1)
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property

from engine import Game, IllegalMove, Position, Ruleset
from protocol import PileView, ProgressEntry, RacerBoard, RacerStatus
from protocol.result import RaceResult, RacerOutcome, RacerResult

UNTIMED_STEP_MS = 500
"""Race time between two moves of a record that does not say when moves were made."""

#: How each racer's game ended, as a progress line says it.
_FINAL_STATUS = {outcome: RacerStatus(outcome.value) for outcome in RacerOutcome}


class ReplayError(ValueError):
    """The record cannot be replayed: a move in it is illegal on the deal of its seed."""


@dataclass(frozen=True, slots=True)
class ReplayMove:
    """One move on the timeline: racer ``racer``'s move number ``number`` (from 1)."""

    at_ms: int
    """Race time of the move, in milliseconds from the start."""
    racer: str
    number: int


@dataclass(frozen=True, slots=True)
class Frame:
    """The race after the first ``step`` moves of the timeline."""

    step: int
    at_ms: int
    """Race time of the frame: that of its last move (0 at the start)."""
    boards: Mapping[str, RacerBoard]
    """Every racer's board, by racer id, as a spectator is sent it (nothing hidden)."""
    progress: tuple[ProgressEntry, ...]
    """Every racer's line, in the record's standings order."""
    last: ReplayMove | None
    """The move this frame shows last; ``None`` at the start."""
    last_position: Position | None
    """Where that move placed its card, on its racer's board."""


class _RacerReplay:
    """One racer's game, replayed: its board and counts after each of its moves."""

    def __init__(self, entry: RacerResult, seed: str, ruleset: Ruleset) -> None:
        self.entry = entry
        game = Game.new(seed, ruleset)
        self.boards = [_board(entry.racer_id, game)]
        self.counts = [(game.face_up, game.face_down)]
        for index, move in enumerate(entry.moves):
            try:
                game.play(move)
            except IllegalMove as error:
                raise ReplayError(
                    f"racer {entry.name!r}'s move {index + 1} {list(move)} is illegal on "
                    f"the deal of this seed: {error}"
                ) from None
            self.boards.append(_board(entry.racer_id, game))
            self.counts.append((game.face_up, game.face_down))
        self.end = game
        """The game after every move."""

    def line(self, played: int, at_ms: int | None, final: bool) -> ProgressEntry:
        """The racer's progress line after ``played`` of its moves, at race time ``at_ms``
        (``None`` when the replay has no times; ``final``: at the end of the replay, where
        every outcome shows)."""
        entry = self.entry
        face_up, face_down = self.counts[played]
        if not self._over(played, at_ms, final):
            return ProgressEntry(
                racer=entry.racer_id, name=entry.name, bot=entry.bot,
                status=RacerStatus.RACING, cards_played=played,
                face_up=face_up, face_down=face_down,
            )
        return ProgressEntry(
            racer=entry.racer_id, name=entry.name, bot=entry.bot,
            status=_FINAL_STATUS[entry.outcome], cards_played=played,
            face_up=face_up, face_down=face_down, score=entry.score,
            finish_ms=None if entry.finish_time is None else round(entry.finish_time * 1000),
            reason=self.end.loss_reason,
        )

    def _over(self, played: int, at_ms: int | None, final: bool) -> bool:
        """Whether the racer's game has ended by then: with its last move when play ended
        it; a resignation at its time (when the record has times); anything at the end."""
        entry = self.entry
        if final:
            return True
        if played < len(entry.moves):
            return False
        if entry.outcome in (RacerOutcome.WON, RacerOutcome.LOST):
            return True
        return (
            entry.outcome is RacerOutcome.RESIGNED
            and at_ms is not None
            and entry.finish_time is not None
            and at_ms >= round(entry.finish_time * 1000)
        )


class Replay:
    """A finished race's timeline, from its result record (raises :class:`ReplayError`
    when a move of the record is illegal)."""

    def __init__(self, result: RaceResult) -> None:
        self.result = result
        self._racers = {
            entry.racer_id: _RacerReplay(entry, result.seed, result.ruleset)
            for entry in result.racers
        }
        self.timed = bool(result.racers) and all(
            entry.move_ms is not None for entry in result.racers
        )
        """Whether the moves are at the times they were made (else :data:`UNTIMED_STEP_MS`
        apart, racers in turn)."""
        self.moves: tuple[ReplayMove, ...] = (
            _timed_moves(result) if self.timed else _moves_in_turn(result)
        )
        self._times = [move.at_ms for move in self.moves]

    @property
    def length(self) -> int:
        """How many moves the timeline holds (the last step)."""
        return len(self.moves)

    @property
    def duration_ms(self) -> int:
        """Race time of the last move."""
        return self._times[-1] if self._times else 0

    def step_at(self, at_ms: float) -> int:
        """The step showing the race at race time ``at_ms``: every move made by then."""
        return bisect.bisect_right(self._times, at_ms)

    def time_of(self, step: int) -> int:
        """Race time of step ``step`` (that of its last move; 0 at the start)."""
        return self._times[step - 1] if step > 0 else 0

    def frame(self, step: int) -> Frame:
        """The race after the first ``step`` moves (clamped to the timeline)."""
        step = max(0, min(step, self.length))
        played = dict.fromkeys(self._racers, 0)
        for move in self.moves[:step]:
            played[move.racer] = move.number
        at_ms = self.time_of(step)
        final = step == self.length
        last = self.moves[step - 1] if step > 0 else None
        return Frame(
            step=step,
            at_ms=at_ms,
            boards={racer: replayed.boards[played[racer]]
                    for racer, replayed in self._racers.items()},
            progress=tuple(replayed.line(played[racer], at_ms if self.timed else None, final)
                           for racer, replayed in self._racers.items()),
            last=last,
            last_position=(
                None if last is None
                else self._racers[last.racer].entry.moves[last.number - 1]
            ),
        )

    def board(self, racer: str, played: int) -> RacerBoard:
        """Racer ``racer``'s board after its first ``played`` moves."""
        return self._racers[racer].boards[played]

    @cached_property
    def names(self) -> dict[str, str]:
        """Racer names by id, in standings order."""
        return {entry.racer_id: entry.name for entry in self.result.racers}


def _timed_moves(result: RaceResult) -> tuple[ReplayMove, ...]:
    """Every move at its time; moves of the same millisecond in standings order, then by
    move number (a racer's own moves are in order already)."""
    keyed = [
        (at_ms, place, number, ReplayMove(at_ms, entry.racer_id, number))
        for place, entry in enumerate(result.racers)
        for number, at_ms in enumerate(entry.move_ms or (), start=1)
    ]
    keyed.sort(key=lambda item: item[:3])
    return tuple(item[3] for item in keyed)


def _moves_in_turn(result: RaceResult) -> tuple[ReplayMove, ...]:
    """Every racer's first move (in standings order), then every second move, and so on,
    :data:`UNTIMED_STEP_MS` apart."""
    longest = max((len(entry.moves) for entry in result.racers), default=0)
    order = [
        (entry.racer_id, number)
        for number in range(1, longest + 1)
        for entry in result.racers
        if number <= len(entry.moves)
    ]
    return tuple(
        ReplayMove(index * UNTIMED_STEP_MS, racer, number)
        for index, (racer, number) in enumerate(order, start=1)
    )


def _board(racer: str, game: Game) -> RacerBoard:
    """``game``'s grid in the shape of a ``board`` message's entry."""
    return RacerBoard(
        racer=racer,
        shown=game.cards_played,
        piles=tuple(
            PileView(row=position[0], col=position[1], face_up=pile.face_up, cards=pile.cards)
            for position, pile in game.piles.items()
        ),
    )
