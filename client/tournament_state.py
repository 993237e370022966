"""What the client knows of a tournament, kept up to date from ``tournament`` messages.

Plain objects, no I/O and no Textual, like :mod:`client.race_state`: the tournament
screen draws a :class:`TournamentTracker`, and the tests feed it messages directly.

The tracker also follows the tournament's races in progress: one
:class:`~client.race_state.RaceTracker` per race it spectates, so the standings screen can
show live progress bars and open any race on the watch screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from client.race_state import RaceTracker
from client.widgets.race_status import format_clock
from protocol import RaceFinished, RaceSnapshot, ServerMessage
from protocol.tournament import (
    EntrantState,
    TournamentFormat,
    TournamentStanding,
    TournamentState,
    TournamentStatus,
)

FOLLOWED_RACES = 12
"""At most this many races are spectated at once for live progress: each one costs the
server a board feed, and a screen shows no more anyway. The others are listed by code."""


def standing_cells(line: TournamentStanding, you: str | None) -> tuple[str, ...]:
    """One row of the standings: place (``=2`` when tied), name, points, stock, time, games.

    >>> from protocol.tournament import EntrantState, TournamentStanding
    >>> line = TournamentStanding(place=2, tied=True, entrant="p-1", name="Ann", bot=False,
    ...     state=EntrantState.LEFT, points=6, stock_left=3, time_ms=95_000, games=2)
    >>> standing_cells(line, "p-1")
    ('=2', 'Ann (you) (left)', '6', '3', '1:35.0', '2')
    """
    mark = " (you)" if line.entrant == you else " [bot]" if line.bot else ""
    left = "" if line.state is EntrantState.ACTIVE else f" ({line.state.value})"
    return (
        f"{'=' if line.tied else ''}{line.place}",
        line.name + mark + left,
        str(line.points),
        str(line.stock_left),
        format_clock(line.time_ms / 1000),
        str(line.games),
    )


@dataclass
class TournamentTracker:
    """One tournament as this client sees it: the latest state and the races followed."""

    code: str
    state: TournamentState | None = None
    received_at: float = 0.0
    """The local clock when ``state`` arrived, to count an arena's window down."""
    you: str | None = None
    """Our entrant id, once the server has said we are an entrant."""
    available: bool = True
    """Arena: whether we asked to be paired (``a`` toggles it)."""
    races: dict[str, RaceTracker] = field(default_factory=dict)
    """The races followed (spectated), by race id, in the order they were first listed."""

    def apply_state(self, state: TournamentState, now: float) -> list[str]:
        """Take in a ``tournament`` message; returns the races to start spectating.

        Races that are no longer in progress are forgotten once they have finished (their
        last messages may still be on the way when the state drops them), or if nothing
        ever came of watching them (they ended before the server read our ``spectate``).
        """
        if state.tournament != self.code:
            return []
        self.state, self.received_at = state, now
        if state.you is not None:
            self.you = state.you
        listed = {race.race for race in state.races}
        gone = [
            race_id for race_id, tracker in self.races.items()
            if race_id not in listed and (tracker.finished or tracker.snapshot is None)
        ]
        for race_id in gone:
            del self.races[race_id]
        new = [
            race.race for race in state.races
            if race.race not in self.races and (self.you is None or self.you not in race.racers)
        ]
        room = max(FOLLOWED_RACES - len(self.races), 0)
        for race_id in new[:room]:
            self.races[race_id] = RaceTracker()
        return new[:room]

    def forget_unlisted(self) -> None:
        """Forget every followed race the state no longer lists, finished or not: the
        server said one of them is gone (a ``spectate`` refused, or a watched race that
        left no result after a restart), so no last message is on its way any more."""
        listed = {race.race for race in self.state.races} if self.state else set()
        for race_id in [race_id for race_id in self.races if race_id not in listed]:
            del self.races[race_id]

    def follows(self, message: ServerMessage) -> bool:
        """Whether ``message`` is about a race this tracker follows (and not one we race)."""
        race = getattr(message, "race", None)
        if race not in self.races:
            return False
        if isinstance(message, RaceSnapshot) and self.you is not None:
            return all(racer.racer != self.you for racer in message.racers)
        return True

    def apply_race(self, message: ServerMessage) -> None:
        """A message about a followed race: into that race's tracker."""
        race = getattr(message, "race", None)
        tracker = self.races.get(race) if isinstance(race, str) else None
        if tracker is not None:
            tracker.apply(message)

    def own_race_finished(self, finished: RaceFinished) -> None:
        """One of our races ended. In an arena, an entrant who made no move in it is taken
        out of pairing until it asks again, so the screen must offer ``a``."""
        state = self.state
        idle = [line for line in finished.standings if line.racer == self.you and not line.moves]
        if state is not None and state.format is TournamentFormat.ARENA and idle:
            self.available = False

    # ------------------------------------------------------------ telling

    @property
    def mine(self) -> TournamentStanding | None:
        """Our line in the standings, when we are an entrant."""
        if self.state is None or self.you is None:
            return None
        return next((s for s in self.state.standings if s.entrant == self.you), None)

    def racing_now(self) -> bool:
        """Whether one of the races in progress has us in it."""
        state, you = self.state, self.you
        return state is not None and you is not None and any(
            you in race.racers for race in state.races
        )

    def phase_line(self, now: float) -> str:
        """Where the tournament stands: registration, round n of N, arena time left, or over."""
        state = self.state
        if state is None:
            return f"Looking for tournament {self.code}…"
        entrants = sum(1 for s in state.standings if s.state is EntrantState.ACTIVE)
        if state.status is TournamentStatus.CREATED:
            return "Not open yet: the host has not opened registration."
        if state.status is TournamentStatus.OPEN:
            return f"Registration is open · {entrants} entrants · waiting for the host to start."
        if state.status is TournamentStatus.FINISHED:
            return "Finished · final standings."
        paused = " · paused by the host" if state.paused else ""
        ending = " · ending: the races in progress finish and count" if state.ending else ""
        if state.format is TournamentFormat.ROUNDS:
            between = " over · the host starts the next" if not state.races else ""
            return f"Round {state.round} of {state.rounds}{between}{paused}{ending}"
        return f"Arena · {self._time_left(state, now)}{paused}{ending}"

    def _time_left(self, state: TournamentState, now: float) -> str:
        if state.ends_at is None:
            return "the window has not opened"
        left = (state.ends_at - state.server_time) / 1000
        if not state.paused:
            left -= now - self.received_at  # the window's clock stands still while paused
        if left <= 0:
            return "the window has closed; the last races are finishing"
        return f"{format_clock(left).rsplit('.', 1)[0]} left"

    def entrant_line(self) -> str:
        """What this player should know: waiting for a round, to be paired, on a break."""
        state, mine = self.state, self.mine
        if state is None or mine is None:
            return ""
        if mine.state is EntrantState.REMOVED:
            return "The host removed you from this tournament."
        if mine.state is EntrantState.LEFT:
            return "You have left: your points stay. Press l to enter again."
        if state.status is TournamentStatus.FINISHED:
            return f"You finished {'tied ' if mine.tied else ''}in place {mine.place}."
        if self.racing_now():
            return "Your race is on."
        if state.status is not TournamentStatus.RUNNING:
            return "You are in. Your first race starts when the host starts the tournament."
        if state.format is TournamentFormat.ROUNDS:
            return "Waiting for the next round (the round ends when every race is over)."
        if state.ends_at is not None and state.ending:
            return "No more races are formed."
        if not self.available:
            return "You are taking a break from pairing. Press a to be paired again."
        return "Waiting to be paired into the next race… (a takes a break)"
