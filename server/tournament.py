"""A hosted tournament as a pure state machine: commands in, events out.

:class:`Tournament` never touches a socket, a clock or a database, and it does not run
races itself. It decides *which* races to hold (:class:`RaceOrdered`: an id, a seed and
the entrants dealt into it); the server shell creates and runs those races like any other
and hands each :class:`~protocol.result.RaceResult` back with :class:`RecordResult`.

State changes in one place, :meth:`Tournament._evolve`, which applies an event. Commands
are checked and turned into events; the store appends the events, and
:meth:`Tournament.restore` replays them, so a tournament rebuilt after a restart is the
one that was running (seeds and times are in the events, so replaying needs no clock and
no seed source).

Two formats:

- **rounds** (Swiss-like): the host starts each round; every active entrant is dealt the
  round's seed, split into races of at most ``race_size`` grouped by current standing.
  When the round's races are all over, each entrant who played scores one point for every
  entrant of the round (across all its races) ranked strictly below it by the race
  standings rule (:func:`~protocol.result.standing_key`). After the last round the
  tournament is finished.
- **arena**: the host starts a window of ``arena_duration`` seconds; entrants who are
  free are paired into quick races of at most ``race_size`` as they become free (at once
  when ``race_size`` are waiting, otherwise once the longest wait reaches
  ``pairing_delay``). Each race scores one point per racer of that race ranked strictly
  below. When the window closes no race is formed; races in progress finish and count.

Choices made for the cases the rules leave open:

- **No-shows.** An entrant dealt into a race who makes no move in it scores nothing for
  it and is not counted when ranking the others. In an arena, such an entrant is also
  taken out of pairing until it says it is available again. An entrant the shell reports
  absent when a round starts is not dealt in and scores nothing for that round.
- **Late joiners.** Entrants may join until the tournament is finished. In rounds, one
  who joins during a round plays from the next round; missed rounds score nothing. In an
  arena, a late joiner is paired as soon as it is free.
- **Leaving and removal.** An entrant who leaves keeps its points and is not dealt again
  (joining again makes it active). An entrant the host removes is dealt no more races and
  is left out of the standings; games it already played stay in the record.
- **Pause.** While paused nothing new starts (no round, no pairing); races in progress go
  on. Pausing an arena stops its window's clock: resuming moves the close later by the
  time spent paused.
- **End.** The host may end at any time before it is finished (even before opening it):
  nothing new starts, races in progress finish and count, then the tournament is finished.
- **Abandoned.** A tournament with no race in progress and no event for a while (the
  shell's idle time) is ended by the shell with :class:`Expire`, which produces exactly
  what an :class:`End` would: nothing waits on a tournament nobody comes back to.

Standings: total points descending, then total stock left (the score of each game won)
descending, then total time ascending (each game's finish time; the race's time limit for
a game not finished). Entrants with equal totals share a place (:attr:`Standing.tied`).

>>> t = Tournament("t1", "JOINME", hash_token("secret"), TournamentSettings("club night"))
>>> _ = t.apply(Open("secret"), now=0.0)
>>> _ = t.apply(Join("p1", "ann", bot=False), now=1.0)
>>> t.status
<TournamentStatus.OPEN: 'open'>
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from engine import Ruleset
from protocol.result import RaceResult, RacerOutcome, RacerResult, standing_key
from protocol.tournament import EntrantState, TournamentFormat, TournamentStatus
from server.race import RECONNECT_GRACE, RaceOptions

SeedSource = Callable[[], str | None]
"""Where tournament races get their seeds; the shell injects one per seed policy. It answers
at once, never waits: a seed, or ``None`` when none is ready (a winnable seed still being
searched for). Then a round does not start (:attr:`TournamentErrorCode.NO_SEED_READY`) and
an arena pairs later: the shell finds a seed and applies :class:`Tick` again."""


def hash_token(token: str) -> bytes:
    """The SHA-256 of a host token: only this is kept, never the token itself."""
    return hashlib.sha256(token.encode("utf-8")).digest()


class TournamentErrorCode(Enum):
    """Stable codes for commands a tournament refuses (the same strings as on the wire)."""

    NOT_HOST = "not_host"
    BAD_STATE = "tournament_state"
    NOT_AN_ENTRANT = "not_an_entrant"
    ALREADY_ENTERED = "already_entered"
    UNKNOWN_RACE = "race_not_found"
    NO_SEED_READY = "server_busy"
    """The seed source had no seed ready (the shell finds one, then asks again)."""


class TournamentError(Exception):
    """A command the tournament refuses. Nothing changed; ``message`` says why for a person."""

    def __init__(self, code: TournamentErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class TournamentSettings:
    """What the host chose at creation. ``ValueError`` names any setting out of range."""

    name: str
    format: TournamentFormat = TournamentFormat.ROUNDS
    rounds: int = 3
    """Rounds format: how many rounds."""
    race_size: int = 8
    """At most this many racers in one race (rounds split entrants; arenas group them)."""
    time_limit: float = 300.0
    """Seconds each race lasts at most."""
    arena_duration: float = 1800.0
    """Arena format: seconds from the start until no new race is formed."""
    pairing_delay: float = 5.0
    """Arena format: the longest a free entrant waits for a fuller race before pairing."""
    seed_policy: str = "random"
    """``random`` or ``winnable``: which seed source the shell gives the tournament."""
    ruleset: Ruleset = Ruleset()
    rated: bool = False
    """Whether each of its races is rated (see :attr:`RaceOptions.rated`)."""

    def __post_init__(self) -> None:
        if not 1 <= len(self.name) <= 64:
            raise ValueError("name must be 1 to 64 characters")
        checks: tuple[tuple[str, float, float, float], ...] = (
            ("rounds", self.rounds, 1, 100),
            ("race_size", self.race_size, 2, 1000),
            ("time_limit", self.time_limit, 1, 86400),
            ("arena_duration", self.arena_duration, 1, 7 * 86400),
            ("pairing_delay", self.pairing_delay, 0, 3600),
        )
        for name, value, low, high in checks:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number, not {value!r}")
            if not low <= value <= high:
                raise ValueError(f"{name} must be from {low:g} to {high:g}, not {value!r}")
        if self.seed_policy not in ("random", "winnable"):
            raise ValueError(f"seed_policy must be random or winnable, not {self.seed_policy!r}")

    def race_options(
        self, racers: int, *, countdown: float = 0.0, reconnect_grace: float = RECONNECT_GRACE
    ) -> RaceOptions:
        """The options of one tournament race of ``racers`` entrants: private, counted down
        by the shell once every entrant is seated (``countdown`` and ``reconnect_grace``
        are the server's, the same as every race's)."""
        return RaceOptions(
            max_racers=max(racers, 1),
            min_racers=1,
            time_limit=self.time_limit,
            ruleset=self.ruleset,
            public=False,
            auto_start=False,
            countdown=countdown,
            reconnect_grace=reconnect_grace,
            rated=self.rated,
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for storage."""
        return {
            "name": self.name,
            "format": self.format.value,
            "rounds": self.rounds,
            "race_size": self.race_size,
            "time_limit": self.time_limit,
            "arena_duration": self.arena_duration,
            "pairing_delay": self.pairing_delay,
            "seed_policy": self.seed_policy,
            "ruleset": self.ruleset.to_dict(),
            "rated": self.rated,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TournamentSettings:
        """The inverse of :meth:`to_dict` (a tournament stored before ``rated`` existed is
        unrated)."""
        values = dict(data)
        values["format"] = TournamentFormat(values["format"])
        values["ruleset"] = Ruleset.from_dict(values.get("ruleset", {}))
        return cls(**values)


# ---------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True)
class Open:
    """Host: open registration."""

    host_token: str


@dataclass(frozen=True, slots=True)
class StartNext:
    """Host: start the next round (rounds) or the window (arena).

    ``present`` lists the entrants the shell sees connected; the others are absent from
    the round. ``None`` deals every active entrant in.
    """

    host_token: str
    present: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class Remove:
    """Host: remove an entrant."""

    host_token: str
    entrant_id: str


@dataclass(frozen=True, slots=True)
class Pause:
    """Host: start nothing new until :class:`Resume`."""

    host_token: str


@dataclass(frozen=True, slots=True)
class Resume:
    """Host: lift a :class:`Pause`."""

    host_token: str


@dataclass(frozen=True, slots=True)
class End:
    """Host: start nothing new; finish once the races in progress are over."""

    host_token: str


@dataclass(frozen=True, slots=True)
class Join:
    """A player enters (or comes back after leaving)."""

    entrant_id: str
    name: str
    bot: bool


@dataclass(frozen=True, slots=True)
class Leave:
    """An entrant withdraws: it keeps its points and is dealt no more races."""

    entrant_id: str


@dataclass(frozen=True, slots=True)
class SetAvailable:
    """Arena: an entrant says it may (or may not, for now) be paired."""

    entrant_id: str
    available: bool


@dataclass(frozen=True, slots=True)
class RecordResult:
    """The shell reports that one of the tournament's races finished."""

    result: RaceResult


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passes: arenas pair free entrants and close their window."""


@dataclass(frozen=True, slots=True)
class Expire:
    """The shell's clock: end the tournament, as :class:`End` would, if it has had no race
    in progress and no event for ``idle_for`` seconds (:meth:`Tournament.idle_deadline`);
    otherwise nothing happens. No host token: nobody asked, time did."""

    idle_for: float


Command = (
    Open
    | StartNext
    | Remove
    | Pause
    | Resume
    | End
    | Join
    | Leave
    | SetAvailable
    | RecordResult
    | Tick
    | Expire
)


# ------------------------------------------------------------------ events


@dataclass(frozen=True, slots=True)
class Opened:
    """Registration opened."""


@dataclass(frozen=True, slots=True)
class EntrantJoined:
    """An entrant entered, or came back."""

    entrant_id: str
    name: str
    bot: bool


@dataclass(frozen=True, slots=True)
class EntrantLeft:
    """An entrant withdrew."""

    entrant_id: str


@dataclass(frozen=True, slots=True)
class EntrantRemoved:
    """The host removed an entrant; ``race_id`` is the race it must be resigned from."""

    entrant_id: str
    race_id: str | None


@dataclass(frozen=True, slots=True)
class AvailabilityChanged:
    """An arena entrant may (or may not) be paired."""

    entrant_id: str
    available: bool


@dataclass(frozen=True, slots=True)
class RoundStarted:
    """Round ``number`` (from 1) began; ``absent`` entrants were not dealt in."""

    number: int
    absent: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ArenaStarted:
    """The arena window opened; no race is formed from ``ends_at`` on."""

    ends_at: float


@dataclass(frozen=True, slots=True)
class RaceOrdered:
    """The shell must hold race ``race_id`` on ``seed`` with these entrants, and start it.

    ``round`` is the round number, or 0 for an arena race.
    """

    race_id: str
    round: int
    seed: str
    entrants: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ResultRecorded:
    """Race ``result.race_id`` finished with ``result``; its points are now counted."""

    result: RaceResult


@dataclass(frozen=True, slots=True)
class Paused:
    """Nothing new starts from now on."""


@dataclass(frozen=True, slots=True)
class Resumed:
    """The pause is over; an arena's window now closes at ``ends_at``."""

    ends_at: float | None


@dataclass(frozen=True, slots=True)
class Ending:
    """Nothing new starts; the tournament finishes when its races are over."""


@dataclass(frozen=True, slots=True)
class Finished:
    """The tournament is over; the standings are final."""


Event = (
    Opened
    | EntrantJoined
    | EntrantLeft
    | EntrantRemoved
    | AvailabilityChanged
    | RoundStarted
    | ArenaStarted
    | RaceOrdered
    | ResultRecorded
    | Paused
    | Resumed
    | Ending
    | Finished
)


# ------------------------------------------------------------------- state


@dataclass(frozen=True, slots=True)
class GameScore:
    """What one entrant's game in one race counted for."""

    race_id: str
    round: int
    points: int
    stock_left: int
    time: float
    outcome: str
    """A :class:`~protocol.result.RacerOutcome` value, or ``no_show``."""


NO_SHOW = "no_show"


@dataclass(slots=True)
class Entrant:
    """An entrant and what it has scored so far."""

    entrant_id: str
    name: str
    bot: bool
    state: EntrantState = EntrantState.ACTIVE
    available: bool = True
    race_id: str | None = None
    """The race it is in now, if any."""
    free_since: float = 0.0
    """Arena: when it last became free (longest waiting is paired first)."""
    games: list[GameScore] = field(default_factory=list)

    @property
    def points(self) -> int:
        """Total points."""
        return sum(game.points for game in self.games)

    @property
    def stock_left(self) -> int:
        """Total stock left over the games it won."""
        return sum(game.stock_left for game in self.games)

    @property
    def time(self) -> float:
        """Total time over the games it was dealt."""
        return sum(game.time for game in self.games)

    def standing_key(self) -> tuple[int, int, float]:
        """Smaller ranks higher: points, then stock left, descending; then time."""
        return (-self.points, -self.stock_left, round(self.time, 3))


@dataclass(frozen=True, slots=True)
class Standing:
    """One line of the standings; entrants with equal totals share ``place``."""

    place: int
    tied: bool
    entrant_id: str
    name: str
    bot: bool
    state: EntrantState
    points: int
    stock_left: int
    time: float
    games: int


@dataclass(slots=True)
class TournamentRace:
    """A race the tournament ordered, and its result once over."""

    race_id: str
    round: int
    seed: str
    entrants: tuple[str, ...]
    result: RaceResult | None = None


class Tournament:
    """A tournament: the host opens it, entrants join, rounds or an arena are raced.

    Every command goes through :meth:`apply` with the current time; it returns the events
    it caused, in order, and a refused command raises :class:`TournamentError` and
    changes nothing.
    """

    def __init__(
        self,
        tournament_id: str,
        code: str,
        host_token_hash: bytes,
        settings: TournamentSettings,
        created_at: float = 0.0,
        seed_source: SeedSource | None = None,
        created_by: str | None = None,
    ):
        self.tournament_id = tournament_id
        self.code = code
        self.settings = settings
        self.created_at = created_at
        self.created_by = created_by
        """The session that created it (``None`` when not known: stored before it was
        recorded); the shell caps how many one session holds."""
        self.seed_source = seed_source
        self.is_present: Callable[[str], bool] = lambda entrant_id: True
        """Whether an entrant can be reached now (the shell injects its sessions' view):
        an arena pairs only entrants who are present."""
        self._host_token_hash = host_token_hash
        self.status = TournamentStatus.CREATED
        self.paused = False
        self.ending = False
        self.round = 0
        """Rounds started so far (the current round while one is in progress)."""
        self.ends_at: float | None = None
        self.last_event_at = created_at
        """When its last event happened (its creation, before any): a tournament is idle
        from then on, and a finished one finished then."""
        self._paused_at: float | None = None
        self.entrants: dict[str, Entrant] = {}
        self.races: dict[str, TournamentRace] = {}
        self.finished: list[RaceResult] = []
        """The results of the races over, in the order they were recorded. It only grows
        at its end, so a position in it stays valid: an export is read a page at a time
        by one."""
        self._arena_races = 0
        self._short_of_seeds = False
        """The last pairing left entrants waiting because the seed source had no seed
        ready. Not part of the recorded state: it only tells the shell that a seed is
        wanted, and keeps the pairing time out of :meth:`next_deadline` until one comes."""

    @classmethod
    def restore(
        cls,
        tournament_id: str,
        code: str,
        host_token_hash: bytes,
        settings: TournamentSettings,
        created_at: float,
        events: Iterable[tuple[Event, float]],
        seed_source: SeedSource | None = None,
        created_by: str | None = None,
    ) -> Tournament:
        """The tournament as it was after ``events`` (each with its time), as stored."""
        tournament = cls(
            tournament_id, code, host_token_hash, settings, created_at, seed_source, created_by
        )
        for event, at in events:
            tournament._evolve(event, at)
        return tournament

    # ------------------------------------------------------------- reading

    @property
    def format(self) -> TournamentFormat:
        """Rounds or arena."""
        return self.settings.format

    def is_host(self, token: str) -> bool:
        """Whether ``token`` is this tournament's host token (constant-time comparison)."""
        return hmac.compare_digest(hash_token(token), self._host_token_hash)

    @property
    def host_token_hash(self) -> bytes:
        """The SHA-256 of the host token, as stored."""
        return self._host_token_hash

    def races_in_progress(self) -> list[TournamentRace]:
        """Races ordered and not yet over, in order."""
        return [race for race in self.races.values() if race.result is None]

    def standings(self) -> list[Standing]:
        """Every entrant not removed, best first; equal totals share a place."""
        ranked = sorted(
            (e for e in self.entrants.values() if e.state is not EntrantState.REMOVED),
            key=lambda e: (e.standing_key(), e.name, e.entrant_id),
        )
        keys = [entrant.standing_key() for entrant in ranked]  # ascending, as ranked
        counts = Counter(keys)
        lines = []
        for entrant, key in zip(ranked, keys, strict=True):
            lines.append(
                Standing(
                    place=1 + bisect.bisect_left(keys, key),
                    tied=counts[key] > 1,
                    entrant_id=entrant.entrant_id,
                    name=entrant.name,
                    bot=entrant.bot,
                    state=entrant.state,
                    points=entrant.points,
                    stock_left=entrant.stock_left,
                    time=entrant.time,
                    games=len(entrant.games),
                )
            )
        return lines

    def next_deadline(self) -> float | None:
        """The next time :meth:`apply` with :class:`Tick` has something to do, or ``None``.

        While the arena waits for a seed (:attr:`waiting_for_seed`) pairing has no time:
        the shell applies :class:`Tick` once it has one."""
        if not self._arena_pairing():
            return None
        times = [self.ends_at] if self.ends_at is not None else []
        waiting = self._waiting()
        if len(waiting) >= 2 and not self._short_of_seeds:
            times.append(min(e.free_since for e in waiting) + self.settings.pairing_delay)
        return min(times) if times else None

    def idle_deadline(self, idle_for: float) -> float | None:
        """When :class:`Expire` with ``idle_for`` ends this tournament if nothing happens
        meanwhile: ``idle_for`` seconds after its last event. ``None`` while a race is in
        progress (the race's result is an event to come), once finished, and for an
        ``idle_for`` of 0 (never)."""
        if idle_for <= 0 or self.status is TournamentStatus.FINISHED:
            return None
        if self.races_in_progress():
            return None
        return self.last_event_at + idle_for

    @property
    def waiting_for_seed(self) -> bool:
        """Whether entrants of a running arena wait to be paired because the seed source
        had no seed ready: the shell should find one, then apply :class:`Tick`."""
        return self._short_of_seeds and self._arena_pairing()

    # ------------------------------------------------------------ commands

    def apply(self, command: Command, now: float) -> list[Event]:
        """Carry out ``command`` at time ``now`` and return the events it caused."""
        events = self._decide(command, now)
        for event in events:
            self._evolve(event, now)
        events.extend(self._settle(now))
        return events

    def _decide(self, command: Command, now: float) -> list[Event]:
        match command:
            case Open(token):
                self._check_host(token)
                self._require(self.status is TournamentStatus.CREATED, "it is already open")
                return [Opened()]
            case StartNext(token, present):
                self._check_host(token)
                return self._start_next(now, present)
            case Remove(token, entrant_id):
                self._check_host(token)
                entrant = self._entrant(entrant_id)
                self._require(entrant.state is not EntrantState.REMOVED, "it is already removed")
                return [EntrantRemoved(entrant_id, entrant.race_id)]
            case Pause(token):
                self._check_host(token)
                self._require(self._running_or_open() and not self.paused, "it cannot pause now")
                return [Paused()]
            case Resume(token):
                self._check_host(token)
                self._require(self.paused, "it is not paused")
                ends_at = self.ends_at
                if ends_at is not None and self._paused_at is not None:
                    ends_at += now - self._paused_at
                return [Resumed(ends_at)]
            case End(token):
                self._check_host(token)
                self._require(self.status is not TournamentStatus.FINISHED, "it is finished")
                self._require(not self.ending, "it is already ending")
                return [Ending()]
            case Join(entrant_id, name, bot):
                return self._join(entrant_id, name, bot)
            case Leave(entrant_id):
                entrant = self._entrant(entrant_id)
                self._require(entrant.state is EntrantState.ACTIVE, "you are not active in it")
                return [EntrantLeft(entrant_id)]
            case SetAvailable(entrant_id, available):
                entrant = self._entrant(entrant_id)
                self._require(entrant.state is EntrantState.ACTIVE, "you are not active in it")
                return [AvailabilityChanged(entrant_id, available)]
            case RecordResult(result):
                race = self.races.get(result.race_id)
                if race is None or race.result is not None:
                    raise TournamentError(
                        TournamentErrorCode.UNKNOWN_RACE,
                        f"race {result.race_id} is not a race of this tournament in progress",
                    )
                return [ResultRecorded(result)]
            case Tick():
                return []
            case Expire(idle_for):
                deadline = self.idle_deadline(idle_for)
                if deadline is None or now < deadline:
                    return []
                return [Ending()]  # then _settle finishes it: no race is in progress

    def _join(self, entrant_id: str, name: str, bot: bool) -> list[Event]:
        self._require(self._running_or_open(), "registration is not open")
        entrant = self.entrants.get(entrant_id)
        if entrant is not None and entrant.state is EntrantState.REMOVED:
            raise TournamentError(
                TournamentErrorCode.NOT_AN_ENTRANT, "the host removed you from this tournament"
            )
        if entrant is not None and entrant.state is EntrantState.ACTIVE:
            raise TournamentError(
                TournamentErrorCode.ALREADY_ENTERED, "you are already in this tournament"
            )
        return [EntrantJoined(entrant_id, name, bot)]

    def _start_next(self, now: float, present: frozenset[str] | None) -> list[Event]:
        self._require(self._running_or_open(), "it is not open")
        self._require(not self.paused, "it is paused")
        self._require(not self.ending, "it is ending")
        if self.format is TournamentFormat.ARENA:
            self._require(self.status is TournamentStatus.OPEN, "the arena has already started")
            # Whoever is waiting when the window opens has waited long enough.
            return [
                ArenaStarted(now + self.settings.arena_duration),
                *self._pair(now, at_once=True),
            ]
        self._require(not self.races_in_progress(), "the current round is not over")
        self._require(self.round < self.settings.rounds, "every round has been played")
        active = [e for e in self.entrants.values() if e.state is EntrantState.ACTIVE]
        dealt = [e for e in active if present is None or e.entrant_id in present]
        self._require(bool(dealt), "nobody is there to play")
        number = self.round + 1
        absent = tuple(e.entrant_id for e in active if e not in dealt)
        seed = self._next_seed()
        if seed is None:
            raise TournamentError(
                TournamentErrorCode.NO_SEED_READY, "no deal is ready for the round yet"
            )
        groups = split_evenly(self._by_standing(dealt), self.settings.race_size, pairs=False)
        return [
            RoundStarted(number, absent),
            *(
                RaceOrdered(f"{self.tournament_id}-R{number}-{index}", number, seed, group)
                for index, group in enumerate(groups, start=1)
            ),
        ]

    def _settle(self, now: float) -> list[Event]:
        """What follows by itself from the state now: arena pairings, the end."""
        events: list[Event] = []
        if self.status is TournamentStatus.FINISHED:
            return events
        arena_running = self.status is TournamentStatus.RUNNING and self.ends_at is not None
        if self.format is TournamentFormat.ARENA and arena_running and self.ends_at is not None:
            if now >= self.ends_at and not self.ending and not self.paused:
                events.append(Ending())
                self._evolve(events[-1], now)
            elif not self.paused and not self.ending:
                for event in self._pair(now):
                    self._evolve(event, now)
                    events.append(event)
        rounds_done = self.format is TournamentFormat.ROUNDS and self.round >= self.settings.rounds
        if (self.ending or rounds_done) and not self.races_in_progress():
            events.append(Finished())
            self._evolve(events[-1], now)
        return events

    def _pair(self, now: float, at_once: bool = False) -> list[Event]:
        """Arena races for the entrants waiting now, if it is time to form them (or
        ``at_once``)."""
        waiting = self._waiting()
        size = self.settings.race_size
        self._short_of_seeds = False
        if len(waiting) < 2:
            return []
        longest = now - min(e.free_since for e in waiting)
        if len(waiting) < size and longest < self.settings.pairing_delay and not at_once:
            return []
        orders: list[Event] = []
        for index, group in enumerate(
            split_evenly(self._by_standing(waiting), size, pairs=True), start=1
        ):
            seed = self._next_seed()
            if seed is None:  # the rest wait for the next pairing, once a seed is ready
                self._short_of_seeds = True
                break
            race_id = f"{self.tournament_id}-A{self._arena_races + index}"
            orders.append(RaceOrdered(race_id, 0, seed, group))
        return orders

    # ------------------------------------------------------------- evolve

    def _evolve(self, event: Event, at: float) -> None:
        """Apply one event: the only place the tournament's state changes."""
        self.last_event_at = at
        match event:
            case Opened():
                self.status = TournamentStatus.OPEN
            case EntrantJoined(entrant_id, name, bot):
                entrant = self.entrants.get(entrant_id)
                if entrant is None:
                    entrant = self.entrants[entrant_id] = Entrant(entrant_id, name, bot)
                entrant.state = EntrantState.ACTIVE
                entrant.available = True
                entrant.free_since = at
            case EntrantLeft(entrant_id):
                self.entrants[entrant_id].state = EntrantState.LEFT
            case EntrantRemoved(entrant_id):
                self.entrants[entrant_id].state = EntrantState.REMOVED
            case AvailabilityChanged(entrant_id, available):
                entrant = self.entrants[entrant_id]
                entrant.available = available
                entrant.free_since = at
            case RoundStarted(number, absent):
                self.status = TournamentStatus.RUNNING
                self.round = number
                for entrant_id in absent:
                    self.entrants[entrant_id].games.append(
                        GameScore("", number, 0, 0, 0.0, NO_SHOW)
                    )
            case ArenaStarted(ends_at):
                self.status = TournamentStatus.RUNNING
                self.ends_at = ends_at
            case RaceOrdered(race_id, number, seed, entrants):
                self.races[race_id] = TournamentRace(race_id, number, seed, entrants)
                if number == 0:
                    self._arena_races += 1
                for entrant_id in entrants:
                    self.entrants[entrant_id].race_id = race_id
            case ResultRecorded(result):
                self._record(result, at)
            case Paused():
                self.paused = True
                self._paused_at = at
            case Resumed(ends_at):
                self.paused = False
                self._paused_at = None
                self.ends_at = ends_at
            case Ending():
                self.ending = True
            case Finished():
                self.status = TournamentStatus.FINISHED

    def _record(self, result: RaceResult, at: float) -> None:
        race = self.races[result.race_id]
        race.result = result
        self.finished.append(result)
        for entrant_id in race.entrants:
            entrant = self.entrants[entrant_id]
            entrant.race_id = None
            entrant.free_since = at
        if race.round == 0:
            self._score(race.round, {result.race_id: result})
            for entry in result.racers:
                if is_no_show(entry):
                    self.entrants[entry.racer_id].available = False
            return
        round_races = [r for r in self.races.values() if r.round == race.round]
        if all(r.result is not None for r in round_races):
            results = {r.race_id: r.result for r in round_races if r.result is not None}
            self._score(race.round, results)

    def _score(self, number: int, results: dict[str, RaceResult]) -> None:
        """Add to each entrant what it scored in ``results`` (one scoring group)."""
        scores = score_games(list(results.values()), number, self.settings.time_limit)
        for entrant_id, game in scores.items():
            entrant = self.entrants.get(entrant_id)
            if entrant is not None:
                entrant.games.append(game)

    # ------------------------------------------------------------ internal

    def _check_host(self, token: str) -> None:
        if not self.is_host(token):
            raise TournamentError(
                TournamentErrorCode.NOT_HOST, "only the host of this tournament can do that"
            )

    def _require(self, condition: bool, why: str) -> None:
        if not condition:
            raise TournamentError(
                TournamentErrorCode.BAD_STATE, f"not now: {why}; {self._describe_state()}"
            )

    def _describe_state(self) -> str:
        """Where the tournament stands, as one clause: ``the tournament is running and
        paused`` (no parenthesis, as clients put the message in their own sentences)."""
        states = [self.status.value]
        if self.paused:
            states.append("paused")
        if self.ending:
            states.append("ending")
        listed = ", ".join(states[:-1]) + " and " + states[-1] if len(states) > 1 else states[0]
        return f"the tournament is {listed}"

    def _arena_pairing(self) -> bool:
        """Whether this is an arena whose window is open, not paused and not ending."""
        running = self.status is TournamentStatus.RUNNING
        return self.format is TournamentFormat.ARENA and running and not (
            self.ending or self.paused
        )

    def _running_or_open(self) -> bool:
        return self.status in (TournamentStatus.OPEN, TournamentStatus.RUNNING) and not (
            self.ending
        )

    def _entrant(self, entrant_id: str) -> Entrant:
        entrant = self.entrants.get(entrant_id)
        if entrant is None:
            raise TournamentError(
                TournamentErrorCode.NOT_AN_ENTRANT, "that player is not in this tournament"
            )
        return entrant

    def _waiting(self) -> list[Entrant]:
        return [
            e
            for e in self.entrants.values()
            if e.state is EntrantState.ACTIVE
            and e.available
            and e.race_id is None
            and self.is_present(e.entrant_id)
        ]

    def _by_standing(self, entrants: list[Entrant]) -> list[str]:
        """Entrant ids ordered by current standing, so similar players race together."""
        ordered = sorted(entrants, key=lambda e: (e.standing_key(), e.free_since))
        return [e.entrant_id for e in ordered]

    def _next_seed(self) -> str | None:
        if self.seed_source is None:
            raise RuntimeError("this tournament was given no seed source")
        return self.seed_source()


def score_games(
    results: Sequence[RaceResult], number: int, time_limit: float
) -> dict[str, GameScore]:
    """What each racer of ``results`` scores, the races being one scoring group: one round's
    races (all on the round's seed), or one arena race.

    A racer who made a move scores one point per racer of the group who made a move and
    ranks strictly below it by the race standings rule; a no-show scores nothing. A game's
    time is its finish time, or ``time_limit`` if it did not finish.
    """
    race_of = {entry.racer_id: r.race_id for r in results for entry in r.racers}
    entries = [entry for r in results for entry in r.racers]
    shown = [standing_key(entry) for entry in entries if not is_no_show(entry)]
    scores = {}
    for entry in entries:
        if is_no_show(entry):
            points, outcome = 0, NO_SHOW
        else:
            key = standing_key(entry)
            points, outcome = sum(1 for other in shown if other > key), entry.outcome.value
        time = entry.finish_time if entry.finish_time is not None else time_limit
        scores[entry.racer_id] = GameScore(
            race_of[entry.racer_id], number, points, entry.score or 0, time, outcome
        )
    return scores


def is_no_show(entry: RacerResult) -> bool:
    """Whether a racer made no move in its race (and so scores nothing for it)."""
    return entry.cards_played == 0 and entry.outcome is not RacerOutcome.WON


def split_evenly(items: list[str], most: int, pairs: bool) -> list[tuple[str, ...]]:
    """``items`` cut, in order, into the fewest groups of at most ``most``, sizes within one.

    With ``pairs``, every group has at least two: whoever would race alone is left out
    (in an arena, it waits for the next pairing).

    >>> split_evenly(["a", "b", "c", "d", "e"], 4, pairs=False)
    [('a', 'b', 'c'), ('d', 'e')]
    >>> split_evenly(["a", "b", "c"], 2, pairs=False)
    [('a', 'b'), ('c',)]
    >>> split_evenly(["a", "b", "c"], 2, pairs=True)
    [('a', 'b')]
    """
    count = len(items)
    if count == 0 or (pairs and count < 2):
        return []
    groups = math.ceil(count / most)
    if pairs and count // groups < 2:
        groups = count // 2
        count = min(count, groups * most)
    base, extra = divmod(count, groups)
    out, start = [], 0
    for index in range(groups):
        size = base + (1 if index < extra else 0)
        out.append(tuple(items[start : start + size]))
        start += size
    return out
