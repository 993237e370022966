"""One race as a pure state machine: commands in, events out.

:class:`Race` never touches a socket, a clock or a database. The network shell feeds it
commands (``join``, ``set_ready``, ``tick``, ``place``, ``resign``, ...) with the current
time, and sends out the :class:`Send` envelopes they return; the journal records the
commands so that replaying them rebuilds the race exactly. Every racer gets its own
engine :class:`~engine.Game`, all dealt the same stock from the race's seed.

Fairness is decided here, once: a racer is only ever addressed events holding cards it
has drawn, and spectators see each board only up to the *fog line* (the fewest cards
drawn by any racer still racing) until the race is over.

>>> race = Race("r1", "a seed", RaceOptions(min_racers=1, countdown=0))
>>> _ = race.join("p1", "ann", bot=False, now=0.0)
>>> [type(send.event).__name__ for send in race.tick(now=0.0)]
['Started', 'RaceChanged', 'CardToPlace']
>>> race.phase
<Phase.RUNNING: 'running'>
"""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from engine import (
    Card,
    Flipped,
    Game,
    IllegalMove,
    LossReason,
    Position,
    Ruleset,
    Status,
    commitment,
    deal,
)
from protocol.result import RaceResult, RacerOutcome, RacerResult

#: Up to this many racers, a lobby's snapshots go out every ``progress_interval``; a
#: bigger lobby's less often, in proportion (see :meth:`Race._snapshot_interval`).
LOBBY_SNAPSHOT_RACERS = 50

#: At most this many boards go to spectators per progress flush (the rest follow in the
#: next flushes; see :meth:`Race._boards_to_show`).
BOARDS_PER_FLUSH = 100

#: Progress lines swept per flush for counts the count line has made stale (see
#: :meth:`Race._sweep_stale_lines`).
LINES_SWEPT_PER_FLUSH = 100

#: Seconds a racer whose connection dropped mid-race has to resume before it is counted
#: out (resigned) and the race goes on without it. The server's default
#: (``ServerConfig.reconnect_grace``) is this one.
RECONNECT_GRACE = 60.0

#: The longest countdown a race may have, in seconds.
MAX_COUNTDOWN = 60.0

#: Where races get their seeds; tests inject a fixed one.
SeedSource = Callable[[], str]


def random_seed() -> str:
    """A fresh seed with 192 bits from the operating system's cryptographic source."""
    return secrets.token_hex(24)


class Phase(Enum):
    """Where a race stands."""

    LOBBY = "lobby"
    COUNTDOWN = "countdown"
    RUNNING = "running"
    FINISHED = "finished"


class RaceErrorCode(Enum):
    """Stable codes for commands a race refuses; ``RaceError.code`` is one of these."""

    RACE_FULL = "race_full"
    RACE_STARTED = "race_started"
    NOT_RUNNING = "race_not_running"
    NOT_A_RACER = "not_a_racer"
    ALREADY_JOINED = "already_joined"
    NOT_RACING = "not_racing"
    MOVE_NUMBER = "bad_move_number"
    ILLEGAL_MOVE = "illegal_move"


class RaceError(Exception):
    """A command the race refuses. Nothing changed; ``message`` says why for a person."""

    def __init__(self, code: RaceErrorCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class RaceOptions:
    """What a host chooses for a race. ``ValueError`` names any option out of range."""

    max_racers: int = 8
    min_racers: int = 2
    """The race does not start with fewer racers."""
    time_limit: float = 600.0
    """Seconds from the start; racers still playing then are timed out."""
    ruleset: Ruleset = Ruleset()
    spectators: bool = True
    fog: bool = True
    """Hide from spectators what not every racer still racing has drawn."""
    public: bool = True
    """Listed in the lobby and open to quick race."""
    auto_start: bool = True
    """Count down as soon as ``min_racers`` are in (quick race); otherwise wait for all ready."""
    countdown: float = 5.0
    progress_interval: float = 0.1
    """At most one progress update per this many seconds, each carrying what changed."""
    reconnect_grace: float = RECONNECT_GRACE
    """Seconds a racer whose connection dropped mid-race may take to resume; then it is
    counted out (resigned) and the race goes on without it."""
    rated: bool = False
    """Whether the result rates its claimed players (quick races are; a host may ask);
    the race itself plays the same either way."""
    daily: str | None = None
    """The day (``YYYY-MM-DD``) whose daily deal this room races (:mod:`server.daily`):
    its result is sealed until the day is revealed. ``None``: not a daily room."""

    def __post_init__(self) -> None:
        checks: tuple[tuple[str, float, float, float], ...] = (
            ("max_racers", self.max_racers, 1, 1000),
            ("min_racers", self.min_racers, 1, self.max_racers),
            ("time_limit", self.time_limit, 1, 86400),
            ("countdown", self.countdown, 0, MAX_COUNTDOWN),
            ("progress_interval", self.progress_interval, 0, 10),
            ("reconnect_grace", self.reconnect_grace, 0, 3600),
        )
        for name, value, low, high in checks:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"{name} must be a number, not {value!r}")
            if not low <= value <= high:
                raise ValueError(f"{name} must be from {low:g} to {high:g}, not {value!r}")
        for name in ("max_racers", "min_racers"):
            if type(getattr(self, name)) is not int:
                raise ValueError(f"{name} must be an integer")

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for storage and the wire."""
        return {
            "max_racers": self.max_racers,
            "min_racers": self.min_racers,
            "time_limit": self.time_limit,
            "ruleset": self.ruleset.to_dict(),
            "spectators": self.spectators,
            "fog": self.fog,
            "public": self.public,
            "auto_start": self.auto_start,
            "countdown": self.countdown,
            "progress_interval": self.progress_interval,
            "reconnect_grace": self.reconnect_grace,
            "rated": self.rated,
            # Only a daily room says so: every other race's record stays as it was.
            **({"daily": self.daily} if self.daily is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RaceOptions:
        """The inverse of :meth:`to_dict`."""
        values = dict(data)
        values["ruleset"] = Ruleset.from_dict(values.get("ruleset", {}))
        return cls(**values)


# ------------------------------------------------------------------- events
#
# Events are values: nothing changes one once it is built. The few built for every move
# (CardToPlace, ProgressLine, MoveAccepted, Progress, Send) are plain dataclasses all the
# same, not frozen ones: a frozen dataclass's __init__ sets each field through
# object.__setattr__, five times the cost of a plain one (1.1 against 0.2 us for ten
# fields), and a move builds a dozen of these.


class Audience(Enum):
    """Groups an event can be addressed to (a single racer is addressed by its id)."""

    RACERS = "racers"
    SPECTATORS = "spectators"
    EVERYONE = "everyone"


Recipient = str | Audience


@dataclass(frozen=True, slots=True)
class RacerInfo:
    """A racer as the lobby shows it."""

    racer_id: str
    name: str
    bot: bool
    ready: bool
    out_at: float | None = None
    """When this racer, absent since its connection dropped mid-race, is counted out
    unless it comes back first; ``None`` while it is there (or its game is over)."""


@dataclass(frozen=True, slots=True)
class RaceSnapshot:
    """Everything public about a race now: no cards, and the seed only as its commitment."""

    race_id: str
    code: str | None
    phase: Phase
    options: RaceOptions
    commitment: str
    racers: tuple[RacerInfo, ...]
    now: float
    countdown_ends_at: float | None
    started_at: float | None
    ends_at: float | None


@dataclass(frozen=True, slots=True)
class RaceChanged:
    """The race's public state changed (someone joined, readied, the countdown began...)."""

    snapshot: RaceSnapshot


@dataclass(frozen=True, slots=True)
class Started:
    """The race started at ``started_at``; the shell journals this time."""

    started_at: float


@dataclass(slots=True)
class CardToPlace:
    """The card racer ``racer_id`` must place now, as move ``move_number`` (from 1)."""

    racer_id: str
    move_number: int
    card: Card
    targets: tuple[Position, ...]
    stock_left: int


@dataclass(slots=True)
class ProgressLine:
    """How one racer stands, without any card."""

    racer_id: str
    name: str
    bot: bool
    status: str
    """``waiting`` before the start, then ``racing``, or a
    :class:`~protocol.result.RacerOutcome` value."""
    cards_played: int
    face_up: int
    face_down: int
    score: int | None
    finish_time: float | None
    reason: LossReason | None


@dataclass(slots=True)
class MoveAccepted:
    """Racer ``racer_id``'s move ``move_number`` put ``card`` at ``position``."""

    racer_id: str
    move_number: int
    position: Position
    card: Card
    flips: tuple[Flipped, ...]
    stock_left: int
    progress: ProgressLine


@dataclass(slots=True)
class Progress:
    """Progress lines of the racers whose standing changed since the last update."""

    lines: tuple[ProgressLine, ...]


@dataclass(frozen=True, slots=True)
class PileView:
    """A pile: its cards bottom first, and whether the top one is face up."""

    position: Position
    cards: tuple[Card, ...]
    face_up: bool


@dataclass(frozen=True, slots=True)
class BoardView:
    """A racer's grid after its first ``cards_played`` moves."""

    racer_id: str
    cards_played: int
    piles: tuple[PileView, ...]


@dataclass(frozen=True, slots=True)
class Boards:
    """Boards that changed, as a spectator may see them; ``fog_line`` is ``None`` when open."""

    boards: tuple[BoardView, ...]
    fog_line: int | None


@dataclass(frozen=True, slots=True)
class RaceFinished:
    """The race is over; ``result`` reveals the seed and every move."""

    result: RaceResult


Event = RaceChanged | Started | CardToPlace | MoveAccepted | Progress | Boards | RaceFinished


@dataclass(slots=True)
class Send:
    """Deliver ``event`` to ``to``: a racer id or an :class:`Audience`."""

    to: Recipient
    event: Event


# ---------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True)
class Join:
    """A racer takes a seat (before the start)."""

    racer_id: str
    name: str
    bot: bool


@dataclass(frozen=True, slots=True)
class Leave:
    """A racer leaves: before the start the seat is freed, afterwards it resigns."""

    racer_id: str


@dataclass(frozen=True, slots=True)
class SetReady:
    """A racer says it is ready (or no longer)."""

    racer_id: str
    ready: bool


@dataclass(frozen=True, slots=True)
class Start:
    """Start the race now, whoever is in it."""


@dataclass(frozen=True, slots=True)
class Tick:
    """Time passes: countdowns end, progress is flushed, the time limit bites."""


@dataclass(frozen=True, slots=True)
class Place:
    """A racer places its card: move ``move_number`` (from 1) at ``position``."""

    racer_id: str
    move_number: int
    position: Position


@dataclass(frozen=True, slots=True)
class Resign:
    """A racer gives up."""

    racer_id: str


@dataclass(frozen=True, slots=True)
class StartCountdown:
    """Count down to the start now, whoever is seated (tournaments deal their races so):
    the countdown cannot be cancelled, and nobody joins or leaves before the start."""


@dataclass(frozen=True, slots=True)
class Disconnect:
    """A racer's connection dropped: before the start its seat is freed; afterwards it has
    ``reconnect_grace`` seconds to come back before it is counted out."""

    racer_id: str


@dataclass(frozen=True, slots=True)
class Reconnect:
    """A racer's connection came back (it resumed its session)."""

    racer_id: str


Command = (
    Join | Leave | SetReady | Start | StartCountdown | Tick | Place | Resign | Disconnect
    | Reconnect
)


# -------------------------------------------------------------------- race


@dataclass(slots=True)
class _Racer:
    racer_id: str
    name: str
    bot: bool
    game: Game
    ready: bool = False
    outcome: RacerOutcome | None = None
    finish_time: float | None = None
    shown: Game | None = None
    """The board as spectators last saw it, advanced move by move behind the fog."""
    fogged: BoardView | None = None
    """The board a new spectator was last shown (:meth:`Race._fogged_board`): the same
    until the racer's visible moves change, so a view of a race of 1,000 replays only the
    few boards that moved since the last view, not all of them."""
    out_at: float | None = None
    """While the racer is away mid-race: when it is counted out."""
    counts: bytearray = field(default_factory=lambda: bytearray(2))
    """Face-up and face-down tops after each move (two bytes a move, from move 0), so a
    progress line can show them as of the count line (see :meth:`Race._line`)."""
    line_stage: int = 0
    """The move the counts of the racer's last progress line were as of."""
    move_ms: list[int] = field(default_factory=list)
    """When each move was made, in milliseconds from the start: the result keeps them, so
    that a replay goes at the race's own pace."""

    def progress(self) -> ProgressLine:
        """The racer's line as it stands (its own, or once nothing is hidden)."""
        game = self.game
        return ProgressLine(
            racer_id=self.racer_id,
            name=self.name,
            bot=self.bot,
            status=self.outcome.value if self.outcome else "racing",
            cards_played=game.cards_played,
            face_up=game.face_up,
            face_down=game.face_down,
            score=game.score,
            finish_time=self.finish_time,
            reason=game.loss_reason,
        )

    def progress_as_of(self, stage: int) -> ProgressLine:
        """The racer's line with its counts after its first ``stage`` moves (fewer than it
        has played). Its cards played are live (they are what the racer did). That play
        ended its game, and how (won or lost, score, reason, finish time), is held back:
        it says something of the cards after ``stage``. A resignation or a time-out is
        the racer's choice or the clock's, and shows as it happens."""
        outcome = self.outcome
        ended_by_choice = outcome is RacerOutcome.RESIGNED or outcome is RacerOutcome.TIMED_OUT
        return ProgressLine(
            racer_id=self.racer_id,
            name=self.name,
            bot=self.bot,
            status=outcome.value if outcome is not None and ended_by_choice else "racing",
            cards_played=self.game.cards_played,
            face_up=self.counts[2 * stage],
            face_down=self.counts[2 * stage + 1],
            score=None,
            finish_time=self.finish_time if ended_by_choice else None,
            reason=None,
        )

    def card_to_place(self) -> CardToPlace | None:
        card = self.game.card
        if card is None or self.outcome is not None:
            return None
        return CardToPlace(
            self.racer_id,
            self.game.cards_played + 1,
            card,
            tuple(self.game.legal_moves()),
            self.game.stock_left,
        )


def board_view(racer_id: str, game: Game) -> BoardView:
    """The grid of ``game`` as a :class:`BoardView`."""
    piles = tuple(
        PileView(position, pile.cards, pile.face_up) for position, pile in game.piles.items()
    )
    return BoardView(racer_id, game.cards_played, piles)


HELD_FINISH_POLL = 0.5
"""Seconds between checks of whether a shared deal still holds back a finished race."""


class SharedDeal:
    """The races dealt one seed at the same time, such as the races of a tournament round.

    A racer in one of them could otherwise learn cards it has not drawn from another:
    by watching it as a spectator, or from its result, which reveals the seed. So the
    races of a shared deal keep one fog line, the fewest cards drawn by any racer still
    racing in any of them, and none of them finishes (announcing its result and seed)
    while another is still being raced.
    """

    def __init__(self) -> None:
        # Weak, so that a forgotten race leaves the deal without anyone removing it.
        self._races: weakref.WeakSet[Race] = weakref.WeakSet()

    def add(self, race: Race) -> None:
        """Count ``race`` in this deal."""
        self._races.add(race)

    def drawn_by_all(self) -> int | None:
        """The fewest cards drawn by a racer still racing in any race of the deal."""
        return min(
            (line for race in self._races if (line := race.drawn_by_all()) is not None),
            default=None,
        )

    def is_being_raced(self) -> bool:
        """Whether a race of the deal has racers still racing, or has not started."""
        return any(race.drawn_by_all() is not None for race in self._races)


class Race:
    """A race: racers join, ready up, race the same stock; the standings end it.

    Every command takes ``now`` (seconds, from the injected clock) and returns the list
    of :class:`Send` it caused, in order; a refused command raises :class:`RaceError`
    and changes nothing.
    """

    def __init__(self, race_id: str, seed: str, options: RaceOptions, code: str | None = None):
        self.race_id = race_id
        self.seed = seed
        self.options = options
        self.code = code
        self.commitment = commitment(seed)
        self.phase = Phase.LOBBY
        self.countdown_ends_at: float | None = None
        self.started_at: float | None = None
        self.result: RaceResult | None = None
        self._stock = deal(seed)
        self._racers: dict[str, _Racer] = {}
        self._dirty: dict[str, ProgressLine | None] = {}
        """Racers whose progress changed since the last flush, with the line when it is
        known already (a move builds it for its ``placed``), else ``None``."""
        self._last_flush = float("-inf")
        self._board_cursor = 0
        """Where the next flush starts looking for boards to show (see :meth:`_boards_to_show`)."""
        self._boards_behind = False
        """Whether the last flush left boards for the next (it showed its maximum)."""
        self._last_snapshot = float("-inf")
        self._snapshot_due = False
        self._spectators = 0
        self._still_racing = 0
        """Racers with no outcome yet, once started (counted so a move need not count them)."""
        self.revision = 0
        """Grows with every change of state, so callers know what to journal."""
        self.shared_deal: SharedDeal | None = None
        """Other races dealt the same seed now, if any: see :class:`SharedDeal`."""
        self._hold_checked_at: float | None = None
        """Last time the shared deal held back this race's finish (every racer done)."""
        self._racing_by_drawn = [0] * (len(self._stock) + 2)
        """Racers still racing, by the number of cards they have drawn (kept up to date
        move by move, so the fewest drawn is known without reading every racer)."""
        self._fewest_drawn = 0
        """Where :meth:`drawn_by_all` last found a racer (the fewest only ever grows)."""
        self._swept_line: int | None = 0
        """The count line at the last flush: when it moves, lines shown as of an older one
        are swept (see :meth:`_sweep_stale_lines`)."""
        self._sweep_left = 0
        self._sweep_cursor = 0
        self._seated: list[_Racer] = []
        """The racers in joining order, fixed at the start (the sweep walks it)."""
        self._absent: dict[str, float] = {}
        """Racers away mid-race, with when each is counted out."""
        self._next_out_at = float("inf")
        self._seats_locked = False
        """Set by :class:`StartCountdown`: the countdown runs whoever comes and goes."""

    # ------------------------------------------------------------- reading

    @property
    def racer_ids(self) -> list[str]:
        """Racers in joining order."""
        return list(self._racers)

    @property
    def racer_count(self) -> int:
        """How many racers are in the race."""
        return len(self._racers)

    def has_racer(self, racer_id: str) -> bool:
        """Whether ``racer_id`` is in this race."""
        return racer_id in self._racers

    def is_busy(self, racer_id: str) -> bool:
        """Whether ``racer_id`` is tied to this race: seated before the start, or still
        playing. A racer whose game is over may go and race elsewhere."""
        racer = self._racers.get(racer_id)
        if racer is None or self.phase is Phase.FINISHED:
            return False
        return self.phase is not Phase.RUNNING or racer.outcome is None

    @property
    def is_open(self) -> bool:
        """Whether a new racer may join now."""
        return (
            self.phase in (Phase.LOBBY, Phase.COUNTDOWN)
            and not self._seats_locked
            and len(self._racers) < self.options.max_racers
        )

    @property
    def ends_at(self) -> float | None:
        """When the time limit passes, once started."""
        return None if self.started_at is None else self.started_at + self.options.time_limit

    @property
    def count_line(self) -> int | None:
        """How many cards every racer still racing has drawn; ``None`` when nothing is hidden.

        Progress lines show a racer's counts after its first ``count_line`` moves at most
        (see :meth:`_line`), so no racer still racing learns from a rival's counts anything
        of a card it has not drawn. In a shared deal the line is the whole deal's.
        """
        if self.shared_deal is not None:
            return self.shared_deal.drawn_by_all()
        return self.drawn_by_all()

    @property
    def fog_line(self) -> int | None:
        """How many moves of each board spectators may see: the :attr:`count_line`, or
        ``None`` when the race shows boards as they are (``fog=False``).

        Spectators see a board's first ``fog_line`` moves at most. In a shared deal the
        line is the whole deal's, so watching one race never shows what another's racers
        have yet to draw.
        """
        return self.count_line if self.options.fog else None

    def drawn_by_all(self) -> int | None:
        """The fewest cards drawn by a racer of this race still racing: 0 before the
        start, ``None`` once nobody is racing."""
        if self.phase is Phase.FINISHED:
            return None
        if self.phase is not Phase.RUNNING:
            return 0
        if not self._still_racing:
            return None
        by_drawn, fewest = self._racing_by_drawn, self._fewest_drawn
        while not by_drawn[fewest]:
            fewest += 1
        self._fewest_drawn = fewest
        return fewest

    def share_deal(self, deal: SharedDeal) -> None:
        """Join the other races dealt this seed now (before any command is applied)."""
        self.shared_deal = deal
        deal.add(self)

    def next_deadline(self) -> float | None:
        """The next time :meth:`tick` has something to do, or ``None``."""
        times: list[float] = []
        if self._snapshot_due and self.phase in (Phase.LOBBY, Phase.COUNTDOWN):
            times.append(self._last_snapshot + self._snapshot_interval())
        if self.phase is Phase.COUNTDOWN and self.countdown_ends_at is not None:
            times.append(self.countdown_ends_at)
        if self.phase is Phase.RUNNING:
            times.append(self.ends_at or 0.0)
            if self._hold_checked_at is not None:
                times.append(self._hold_checked_at + HELD_FINISH_POLL)
            if self._dirty or self._boards_behind or self._sweep_left:
                times.append(self._last_flush + self.options.progress_interval)
            if self._absent:
                times.append(self._next_out_at)
        return min(times) if times else None

    def snapshot(self, now: float) -> RaceSnapshot:
        """The race's public state."""
        return RaceSnapshot(
            race_id=self.race_id,
            code=self.code,
            phase=self.phase,
            options=self.options,
            commitment=self.commitment,
            racers=tuple(
                RacerInfo(r.racer_id, r.name, r.bot, r.ready, r.out_at)
                for r in self._racers.values()
            ),
            now=now,
            countdown_ends_at=self.countdown_ends_at if self.phase is Phase.COUNTDOWN else None,
            started_at=self.started_at,
            ends_at=self.ends_at,
        )

    def progress_lines(self) -> tuple[ProgressLine, ...]:
        """Every racer's progress as everyone may see it (see :meth:`_line`), in joining
        order."""
        line = self.count_line
        return tuple(self._line(racer, line) for racer in self._racers.values())

    def racer_view(self, racer_id: str, now: float) -> list[Send]:
        """Everything racer ``racer_id`` needs to (re)build its screen: state, own board,
        card to place, everyone's progress, and the result if the race is over."""
        racer = self._racer(racer_id)
        sends = [
            Send(racer_id, RaceChanged(self.snapshot(now))),
            Send(racer_id, Boards((board_view(racer_id, racer.game),), None)),
            Send(racer_id, Progress(self.progress_lines())),
        ]
        card = racer.card_to_place()
        if card is not None and self.phase is Phase.RUNNING:
            sends.append(Send(racer_id, card))
        if self.result is not None:
            sends.append(Send(racer_id, RaceFinished(self.result)))
        return sends

    def card_for(self, racer_id: str) -> CardToPlace | None:
        """The card racer ``racer_id`` must place now, if the race runs and its game goes on."""
        if self.phase is not Phase.RUNNING:
            return None
        return self._racer(racer_id).card_to_place()

    def spectator_view(self, now: float) -> list[Event]:
        """Everything a new spectator needs: state, progress, boards up to the fog line."""
        fog = self.fog_line
        events: list[Event] = [
            RaceChanged(self.snapshot(now)),
            Progress(self.progress_lines()),
            Boards(tuple(self._fogged_board(r, fog) for r in self._racers.values()), fog),
        ]
        if self.result is not None:
            events.append(RaceFinished(self.result))
        return events

    # ------------------------------------------------------------ commands

    def apply(self, command: Command, now: float) -> list[Send]:
        """Carry out ``command`` at time ``now``: the one entry point for the shell and for
        the journal's replay. :attr:`revision` grows when the command changed the race."""
        match command:  # moves first: nearly every command is one
            case Place(racer_id, move_number, position):
                return self.place(racer_id, move_number, position, now)
            case Join(racer_id, name, bot):
                return self.join(racer_id, name, bot, now)
            case Leave(racer_id):
                return self.leave(racer_id, now)
            case SetReady(racer_id, ready):
                return self.set_ready(racer_id, ready, now)
            case Start():
                return self.start(now)
            case StartCountdown():
                return self.start_countdown(now)
            case Tick():
                return self.tick(now)
            case Resign(racer_id):
                return self.resign(racer_id, now)
            case Disconnect(racer_id):
                return self.disconnect(racer_id, now)
            case Reconnect(racer_id):
                return self.reconnect(racer_id, now)

    def join(self, racer_id: str, name: str, bot: bool, now: float) -> list[Send]:
        """Add a racer before the start; may begin the countdown or, when full, start."""
        if racer_id in self._racers:
            raise RaceError(RaceErrorCode.ALREADY_JOINED, "you are already in this race")
        if self.phase not in (Phase.LOBBY, Phase.COUNTDOWN) or self._seats_locked:
            raise RaceError(RaceErrorCode.RACE_STARTED, "this race has already started")
        if len(self._racers) >= self.options.max_racers:
            raise RaceError(RaceErrorCode.RACE_FULL, "this race is full")
        game = Game(self._stock, self.options.ruleset, self.seed)
        self._racers[racer_id] = _Racer(racer_id, name, bot, game)
        self.revision += 1
        return self._lobby_changed(now)

    def leave(self, racer_id: str, now: float) -> list[Send]:
        """Leave the race: before the start the seat is freed, afterwards it is a resignation."""
        self._racer(racer_id)
        if self.phase in (Phase.RUNNING, Phase.FINISHED) or self._seats_locked:
            return self.resign(racer_id, now)
        del self._racers[racer_id]
        self.revision += 1
        return self._lobby_changed(now)

    def set_ready(self, racer_id: str, ready: bool, now: float) -> list[Send]:
        """Mark a racer ready or not; when every racer is ready the countdown begins."""
        racer = self._racer(racer_id)
        if self.phase not in (Phase.LOBBY, Phase.COUNTDOWN):
            raise RaceError(RaceErrorCode.RACE_STARTED, "this race has already started")
        racer.ready = ready
        self.revision += 1
        return self._lobby_changed(now)

    def start(self, now: float) -> list[Send]:
        """Start now, whatever the lobby (tournaments, and replaying the journal)."""
        if self.phase not in (Phase.LOBBY, Phase.COUNTDOWN):
            raise RaceError(RaceErrorCode.RACE_STARTED, "this race has already started")
        self.phase = Phase.RUNNING
        self.started_at = now
        self._seated = list(self._racers.values())
        # Everyone holds the first card, but who resigned in a locked countdown.
        self._still_racing = sum(1 for racer in self._racers.values() if racer.outcome is None)
        self._racing_by_drawn[1] = self._still_racing
        self.revision += 1
        self._last_flush = now
        sends = [Send(Audience.EVERYONE, Started(now)), self._changed(now)]
        for racer in self._racers.values():
            card = racer.card_to_place()
            if card is not None:
                sends.append(Send(racer.racer_id, card))
        # A race may start with nobody left in it; it is then over at once.
        sends.extend(self._finish_if_done(now))
        return sends

    def start_countdown(self, now: float) -> list[Send]:
        """Count down to the start whoever is seated, and let nobody join or leave until
        then (tournaments seat their entrants, then count down like any race)."""
        if self.phase not in (Phase.LOBBY, Phase.COUNTDOWN) or self._seats_locked:
            raise RaceError(RaceErrorCode.RACE_STARTED, "this race has already started")
        self._seats_locked = True
        self.revision += 1
        if self.options.countdown <= 0:
            return self.start(now)
        self.phase = Phase.COUNTDOWN
        self.countdown_ends_at = now + self.options.countdown
        return [self._changed(now)]

    def tick(self, now: float) -> list[Send]:
        """Let time pass: end the countdown, flush due progress, count out racers away
        too long, apply the time limit."""
        self._count_out_absent(now)
        counted_down = self.countdown_ends_at is not None and now >= self.countdown_ends_at
        if self.phase is Phase.COUNTDOWN and counted_down:
            return self.start(now)
        if self.phase is not Phase.RUNNING:
            if self._snapshot_due and now >= self._last_snapshot + self._snapshot_interval():
                return [self._changed(now)]
            return []
        ends_at = self.ends_at
        if ends_at is not None and now >= ends_at and self._still_racing:
            self.revision += 1
            for racer in self._racers.values():
                if racer.outcome is None:
                    self._stop_racing(racer, RacerOutcome.TIMED_OUT, None)
                    self._dirty[racer.racer_id] = None
        if not self._still_racing:
            return self._finish_if_done(now)
        if (self._dirty or self._boards_behind or self._sweep_left) and (
            now >= self._last_flush + self.options.progress_interval
        ):
            return self._flush(now)
        return []

    def place(self, racer_id: str, move_number: int, position: Position, now: float) -> list[Send]:
        """Apply racer ``racer_id``'s move number ``move_number`` (counted from 1).

        A move number already applied is answered again with what it did, and nothing
        changes: that makes a retry after a reconnect safe.
        """
        self._count_out_absent(now)
        racer = self._racer(racer_id)
        if move_number >= 1 and move_number <= racer.game.cards_played:
            return self._answer_again(racer, move_number)
        self._check_racing(racer, now)
        expected = racer.game.cards_played + 1
        if move_number != expected:
            raise RaceError(
                RaceErrorCode.MOVE_NUMBER, f"the next move is number {expected}, not {move_number}"
            )
        game = racer.game
        card = game.card
        assert card is not None  # a racer with no outcome is still playing
        try:
            events = game.play(position)
        except IllegalMove as error:
            raise RaceError(RaceErrorCode.ILLEGAL_MOVE, str(error)) from None
        self.revision += 1
        racer.counts.append(game.face_up)
        racer.counts.append(game.face_down)
        racer.move_ms.append(round((now - (self.started_at or now)) * 1000))
        if game.status is not Status.PLAYING:
            outcome = RacerOutcome.WON if game.status is Status.WON else RacerOutcome.LOST
            self._stop_racing(racer, outcome, now - (self.started_at or now))
        else:
            by_drawn = self._racing_by_drawn
            by_drawn[move_number] -= 1  # it had drawn move_number cards, and draws one more
            by_drawn[move_number + 1] += 1
        flips = tuple(e for e in events if isinstance(e, Flipped))
        line = racer.progress()
        accepted = MoveAccepted(
            racer_id, move_number, position, card, flips, racer.game.stock_left, line
        )
        sends = [Send(racer_id, accepted)]
        next_card = racer.card_to_place()
        if next_card is not None:
            sends.append(Send(racer_id, next_card))
        self._dirty[racer_id] = line
        sends.extend(self._after_progress(now))
        return sends

    def resign(self, racer_id: str, now: float) -> list[Send]:
        """Give up: the racer stops, and is ranked with what it has. In a countdown that
        cannot be cancelled (:class:`StartCountdown`) the seat stays, resigned from the
        start."""
        self._count_out_absent(now)
        racer = self._racer(racer_id)
        if self._seats_locked and self.phase is Phase.COUNTDOWN and racer.outcome is None:
            racer.outcome, racer.finish_time = RacerOutcome.RESIGNED, 0.0
            if racer.out_at is not None:
                self._forget_absence(racer)
            self.revision += 1
            return []
        self._check_racing(racer, now)
        self._stop_racing(racer, RacerOutcome.RESIGNED, now - (self.started_at or now))
        self.revision += 1
        self._dirty[racer_id] = None
        return self._after_progress(now)

    def disconnect(self, racer_id: str, now: float) -> list[Send]:
        """The racer's connection dropped. Before the start its seat is freed (a lobby
        does not wait for the departed), unless the seats are locked. Once seated for good,
        a racer still playing is *away*: it is counted out (resigned, at that moment)
        ``reconnect_grace`` seconds from now unless it comes back first, so a racer who
        quits holds the others up for the grace, not for the whole time limit."""
        self._count_out_absent(now)
        racer = self._racers.get(racer_id)
        if racer is None or self.phase is Phase.FINISHED:
            return []
        if self.phase is Phase.LOBBY or (self.phase is Phase.COUNTDOWN and not self._seats_locked):
            return self.leave(racer_id, now)
        if racer.outcome is not None or racer.out_at is not None:
            return []
        racer.out_at = out_at = now + self.options.reconnect_grace
        self._absent[racer_id] = out_at
        self._next_out_at = min(self._next_out_at, out_at)
        self.revision += 1
        return []

    def reconnect(self, racer_id: str, now: float) -> list[Send]:
        """The racer's connection is back: if it was away and not yet counted out, it
        races on as before."""
        self._count_out_absent(now)
        racer = self._racers.get(racer_id)
        if racer is None or racer.out_at is None:
            return []
        self._forget_absence(racer)
        self.revision += 1
        return []

    def add_spectator(self) -> None:
        """Count a spectator: boards are only computed while someone watches."""
        self._spectators += 1

    def remove_spectator(self) -> None:
        """Forget a spectator counted by :meth:`add_spectator`."""
        self._spectators = max(0, self._spectators - 1)

    # ------------------------------------------------------------ internal

    def _stop_racing(
        self, racer: _Racer, outcome: RacerOutcome, finish_time: float | None
    ) -> None:
        """End ``racer``'s game with ``outcome`` (it was still racing)."""
        racer.outcome = outcome
        racer.finish_time = finish_time
        self._still_racing -= 1
        # Every card placed was drawn; a game stopped before its end held one more.
        ended_by_play = outcome is RacerOutcome.WON or outcome is RacerOutcome.LOST
        self._racing_by_drawn[racer.game.cards_played + (0 if ended_by_play else 1)] -= 1
        if racer.out_at is not None:
            self._forget_absence(racer)

    def _forget_absence(self, racer: _Racer) -> None:
        racer.out_at = None
        del self._absent[racer.racer_id]
        self._next_out_at = min(self._absent.values(), default=float("inf"))

    def _count_out_absent(self, now: float) -> None:
        """Count out (as resigned) every racer away since longer than the grace.

        Called before every command, not only by the clock: a racer's time out is a
        deadline, so the race is the same whether the clock's tick or the next command
        (when the journal is replayed, there are no ticks) comes first. Its finish time
        is its deadline's, whenever that is noticed.
        """
        if not self._absent or now < self._next_out_at or self.phase is not Phase.RUNNING:
            return
        started_at = self.started_at or now
        ends_at = self.ends_at or float("inf")
        for racer_id, out_at in list(self._absent.items()):
            if out_at <= now and out_at < ends_at:  # at the limit, the limit times it out
                racer = self._racers[racer_id]
                finish = max(out_at, started_at) - started_at
                self._stop_racing(racer, RacerOutcome.RESIGNED, finish)
                self._dirty[racer_id] = None
                self.revision += 1

    def _check_racing(self, racer: _Racer, now: float) -> None:
        """Refuse a move or resignation unless the racer is still playing in time."""
        if self.phase is not Phase.RUNNING:
            raise RaceError(RaceErrorCode.NOT_RUNNING, "the race is not running")
        ends_at = self.ends_at
        if ends_at is not None and now >= ends_at:
            # The clock's tick that times everyone out may not have run yet.
            raise RaceError(RaceErrorCode.NOT_RUNNING, "the race's time limit has passed")
        if racer.outcome is not None:
            raise RaceError(RaceErrorCode.NOT_RACING, f"your race is over ({racer.outcome.value})")

    def _racer(self, racer_id: str) -> _Racer:
        racer = self._racers.get(racer_id)
        if racer is None:
            raise RaceError(RaceErrorCode.NOT_A_RACER, "you are not racing in this race")
        return racer

    def _changed(self, now: float) -> Send:
        self._snapshot_due = False
        self._last_snapshot = now
        return Send(Audience.EVERYONE, RaceChanged(self.snapshot(now)))

    def _lobby_changed(self, now: float) -> list[Send]:
        """After the lobby changed: begin, cancel or cut short the countdown."""
        racers = list(self._racers.values())
        enough = len(racers) >= self.options.min_racers
        willing = self.options.auto_start or all(r.ready for r in racers)
        # A quick race starts the moment it is full; one that waits for everyone to be
        # ready counts down once they are, full or not (the countdown is what they agreed to).
        if len(racers) == self.options.max_racers and self.options.auto_start:
            return self.start(now)
        phase = self.phase
        if self._seats_locked:
            pass  # counting down to a start nobody can hold off
        elif enough and willing:
            if self.phase is Phase.LOBBY:
                self.phase = Phase.COUNTDOWN
                self.countdown_ends_at = now + self.options.countdown
        else:
            self.phase = Phase.LOBBY
            self.countdown_ends_at = None
        # In a big lobby every join would otherwise send everyone the whole racer list.
        if phase is self.phase and now < self._last_snapshot + self._snapshot_interval():
            self._snapshot_due = True
            return []
        return [self._changed(now)]

    def _snapshot_interval(self) -> float:
        """Seconds between lobby snapshots: a snapshot lists every racer and goes to every
        racer, so its interval grows with the lobby to keep the bytes sent per second
        linear in the number of racers (0.1 s up to 50 racers, 2 s at 1,000)."""
        return self.options.progress_interval * max(1.0, len(self._racers) / LOBBY_SNAPSHOT_RACERS)

    def _answer_again(self, racer: _Racer, move_number: int) -> list[Send]:
        # Rebuilt from the moves, not kept: a retry is rare (after a reconnect), while a
        # kept answer per racer was five objects each that the collector's middle
        # generation scanned over and over (at 5,000 racers, 20,000 of its 134,000).
        latest = move_number == racer.game.cards_played
        sends = [Send(racer.racer_id, self._accepted_again(racer, move_number))]
        card = racer.card_to_place()
        if card is not None and latest:
            sends.append(Send(racer.racer_id, card))
        return sends

    def _accepted_again(self, racer: _Racer, move_number: int) -> MoveAccepted:
        """What move ``move_number`` of ``racer`` was answered with, replayed from the deal."""
        game = Game(self._stock, self.options.ruleset, self.seed)
        moves = racer.game.moves
        for move in moves[: move_number - 1]:
            game.play(move)
        card = game.card
        assert card is not None  # the move was played, so there was a card to place
        position = moves[move_number - 1]
        flips = tuple(e for e in game.play(position) if isinstance(e, Flipped))
        # Only a game's last move can end it; the outcome is then the one that move gave.
        ended = game.status is not Status.PLAYING
        line = ProgressLine(
            racer_id=racer.racer_id,
            name=racer.name,
            bot=racer.bot,
            status=racer.outcome.value if ended and racer.outcome else "racing",
            cards_played=game.cards_played,
            face_up=game.face_up,
            face_down=game.face_down,
            score=game.score,
            finish_time=racer.finish_time if ended else None,
            reason=game.loss_reason,
        )
        return MoveAccepted(
            racer.racer_id, move_number, position, card, flips, game.stock_left, line
        )

    def _after_progress(self, now: float) -> list[Send]:
        done = self._finish_if_done(now)
        if done:
            return done
        if now >= self._last_flush + self.options.progress_interval:
            return self._flush(now)
        return []

    def _finish_if_done(self, now: float) -> list[Send]:
        if self._still_racing or self.phase is not Phase.RUNNING:
            return []
        if self.shared_deal is not None and self.shared_deal.is_being_raced():
            # Another race of this deal goes on: our result would reveal its seed.
            first_hold = self._hold_checked_at is None
            self._hold_checked_at = now
            return self._flush(now) if first_hold else []
        return self._finish(now)

    def _line(self, racer: _Racer, line: int | None) -> ProgressLine:
        """``racer``'s progress line as everyone may see it while ``line`` (the
        :attr:`count_line`) holds: its counts after its first ``line`` moves at most, so
        that they say nothing of a card some racer still racing has not drawn. Its cards
        played are live (see :meth:`_Racer.progress_as_of` for the rest)."""
        if self.phase is Phase.LOBBY or self.phase is Phase.COUNTDOWN:
            waiting = racer.progress()
            waiting.status = "waiting"
            return waiting
        if line is None or racer.game.cards_played <= line:
            return racer.progress()
        return racer.progress_as_of(line)

    def _flush(self, now: float, *, boards: bool = True) -> list[Send]:
        """Send the progress lines that changed, and (unless not ``boards``) the boards
        spectators may now see."""
        self._last_flush = now
        line = self.count_line
        if line != self._swept_line:
            self._swept_line = line
            self._sweep_left = len(self._racers)
        if self._sweep_left:
            self._sweep_stale_lines(line)
        racers, shown = self._racers, []
        for racer_id, built in self._dirty.items():
            racer = racers[racer_id]
            played = racer.game.cards_played
            stage = racer.line_stage = played if line is None or played <= line else line
            # A move builds its racer's live line for its answer: reused when not behind.
            reuse = built is not None and stage == played
            shown.append(built if reuse and built is not None else self._line(racer, line))
        self._dirty.clear()
        sends = [Send(Audience.EVERYONE, Progress(tuple(shown)))] if shown else []
        if self._spectators and boards:
            fog = line if self.options.fog else None
            shown_boards = self._boards_to_show(fog, BOARDS_PER_FLUSH)
            if shown_boards:
                sends.append(Send(Audience.SPECTATORS, Boards(shown_boards, fog)))
        return sends

    def _sweep_stale_lines(self, line: int | None) -> None:
        """Mark for sending the lines that ``line`` now lets show whole: a racer's whose
        last line was held back (counts as of an older line, or its end not shown) and
        whose moves are now all behind the count line. At most
        :data:`LINES_SWEPT_PER_FLUSH` racers are looked at per flush.

        A racer still racing sends its line with its next move, as of the line then; in
        between its counts may be older than the line allows, never newer. Resending
        every line ahead of the line each time it moves would double the progress a big
        race sends (the line moves about as often as its slowest racer), so only a line
        that would otherwise never come (a game over ahead of the line) is swept, once.
        """
        racers = self._seated
        count, dirty = len(racers), self._dirty
        scan = min(LINES_SWEPT_PER_FLUSH, self._sweep_left, count)
        start = self._sweep_cursor % count if count else 0
        for index in range(start, start + scan):
            racer = racers[index % count]
            played = racer.game.cards_played
            whole = line is None or played <= line
            if whole and racer.line_stage < played and racer.racer_id not in dirty:
                dirty[racer.racer_id] = None
        self._sweep_cursor = start + scan
        self._sweep_left = max(0, self._sweep_left - scan) if count else 0

    def _boards_to_show(self, fog: int | None, limit: int | None) -> tuple[BoardView, ...]:
        """The boards spectators may now see more of: at most ``limit``
        (:data:`BOARDS_PER_FLUSH` but at the finish), taking racers in turn from where the
        last flush stopped.

        When the fog line moves, every board ahead of it shows one more card. In a race
        of a thousand that was a thousand boards in one message, built and sent between
        two moves; in turns, the boards catch up over a few flushes and no flush holds
        the loop for long. A board is never shown past the fog line either way.
        """
        racers = list(self._racers.values())
        count = len(racers)
        boards: list[BoardView] = []
        index = start = self._board_cursor % count if count else 0
        for index in range(start, start + count):
            board = self._advance_shown(racers[index % count], fog)
            if board is not None:
                boards.append(board)
                if len(boards) == limit:
                    break
        self._board_cursor = index + 1
        self._boards_behind = len(boards) == limit
        return tuple(boards)

    @staticmethod
    def _visible_moves(racer: _Racer, fog: int | None) -> int:
        played = racer.game.cards_played
        return played if fog is None else min(played, fog)

    def _advance_shown(self, racer: _Racer, fog: int | None) -> BoardView | None:
        """Bring the spectators' copy of a board up to what they may see; ``None`` if unchanged."""
        if racer.shown is None:
            racer.shown = Game(self._stock, self.options.ruleset, self.seed)
        visible = self._visible_moves(racer, fog)
        if racer.shown.cards_played >= visible:
            return None
        for move in racer.game.moves[racer.shown.cards_played : visible]:
            racer.shown.play(move)
        return board_view(racer.racer_id, racer.shown)

    def _fogged_board(self, racer: _Racer, fog: int | None) -> BoardView:
        """Racer's board as a new spectator may see it: its first visible moves, replayed
        on a fresh game unless the last one built, or the spectators' copy, is that far."""
        visible = self._visible_moves(racer, fog)
        kept = racer.fogged
        if kept is not None and kept.cards_played == visible:
            return kept
        shown = racer.shown
        if shown is not None and shown.cards_played == visible:
            view = board_view(racer.racer_id, shown)
        else:
            game = Game(self._stock, self.options.ruleset, self.seed)
            for move in racer.game.moves[:visible]:
                game.play(move)
            view = board_view(racer.racer_id, game)
        racer.fogged = view
        return view

    def _finish(self, now: float) -> list[Send]:
        self.phase = Phase.FINISHED
        self.result = RaceResult.build(
            self.race_id,
            self.seed,
            self.options.ruleset,
            [self._racer_result(racer) for racer in self._racers.values()],
            started_at=round((self.started_at or now) * 1000),
            ended_at=round(now * 1000),
        )
        # Nothing is hidden any more: every line held back shows as it is.
        for racer in self._racers.values():
            if racer.line_stage < racer.game.cards_played:
                self._dirty.setdefault(racer.racer_id, None)
        self._sweep_left = 0
        sends = self._flush(now, boards=False)
        sends.append(Send(Audience.EVERYONE, RaceFinished(self.result)))
        if self._spectators:
            # After the result, as the protocol says: every board, whole.
            every_board = tuple(board_view(r.racer_id, r.game) for r in self._racers.values())
            sends.append(Send(Audience.SPECTATORS, Boards(every_board, None)))
        sends.append(self._changed(now))
        return sends

    @staticmethod
    def _racer_result(racer: _Racer) -> RacerResult:
        game = racer.game
        assert racer.outcome is not None
        return RacerResult(
            racer_id=racer.racer_id,
            name=racer.name,
            bot=racer.bot,
            outcome=racer.outcome,
            score=game.score,
            finish_time=racer.finish_time,
            cards_played=game.cards_played,
            face_up=game.face_up,
            face_down=game.face_down,
            moves=tuple(game.moves),
            move_ms=tuple(racer.move_ms),
        )
