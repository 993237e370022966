"""The lobby as a pure state machine: which races there are, which are open, who sits where.

:class:`Lobby` is to the server's races what :class:`~server.race.Race` is to one race:
commands in (:meth:`Lobby.apply`), events out, no I/O and no clock. It decides

- **matching**: a quick race seats a player in the first open public race with the quick
  options, or opens a new one; a daily race does the same among the day's rooms;
- **race ids**: a new race gets an id no race has now (ids double as private races'
  join codes), drawn from an injected source;
- **listing**: the open public races, at most :data:`LISTED_RACES`, oldest first;
- **seating**: the race each session races in (one at a time: its latest), and when a
  lobby everyone left is closed;
- **placement** (a cluster's lobby only): the node that runs a race it matched racers
  into (a quick race, a daily room) or listed (a public race) once the race has started
  and takes nobody more: the node
  with the fewest races in the load map it was last given (:class:`NodesLoaded`,
  :func:`least_loaded`); a lobby given no load map (one process) places nothing.

The race tier (:mod:`server.race_tier`) carries the events out: it opens the races
(:class:`RaceToOpen`), seats racers in them (:class:`JoinRace`, answered with
:class:`Seated` or :class:`JoinRefused`), and reports how each race stands
(:class:`RaceUpdated`) as it changes. Whether a race takes a racer is the race's own
decision; the lobby only chooses where to ask.

>>> lobby = Lobby(RaceOptions(max_racers=2), new_id=lambda taken: f"R{len(taken) + 1}")
>>> opened, join = lobby.apply(QuickRace("ann"))
>>> opened.race_id, join
('R1', JoinRace(session_id='ann', race_id='R1'))
>>> lobby.apply(Seated("ann", "R1"))
[SeatChanged(session_id='ann', previous=None, race_id='R1')]
>>> lobby.apply(RaceUpdated(Listing("R1", lobby.quick_options, Phase.LOBBY, 1, True)))
[]
>>> lobby.apply(QuickRace("bob"))  # the open race first
[JoinRace(session_id='bob', race_id='R1')]
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass, field

from server.codes import new_code
from server.race import Phase, RaceOptions

#: At most this many open races in one ``races`` answer: a lobby shows a page, not a census.
LISTED_RACES = 100

#: Race ids double as the codes people type to join a private race.
RACE_CODE_LENGTH = 8


RaceIdSource = Callable[[Container[str]], str]
"""Gives a race id that is not among the ids given (the races the caller holds)."""


def new_race_id(taken: Container[str]) -> str:
    """A random race id that no race has (the lobby's default id source)."""
    return new_code(RACE_CODE_LENGTH, taken)


def least_loaded(loads: Mapping[str, int], here: str) -> str:
    """The node to run a new race: the one with the fewest races in ``loads`` (node id
    to races it runs); on a tie a node other than ``here`` (the lobby's own, which also
    runs the lobby), then the first id in order, so that equal nodes take turns.

    >>> least_loaded({"n1": 3, "n2": 1, "n3": 1}, here="n2")
    'n3'
    >>> least_loaded({"n1": 0}, here="n1")
    'n1'
    """
    return min(loads, key=lambda node: (loads[node], node == here, node))


@dataclass(frozen=True, slots=True)
class Listing:
    """How a race stands, as far as the lobby cares."""

    race_id: str
    options: RaceOptions
    phase: Phase
    racers: int
    open: bool
    """Whether a new racer may join now (:attr:`~server.race.Race.is_open`)."""


# ------------------------------------------------------------------ commands


@dataclass(frozen=True, slots=True)
class QuickRace:
    """Seat ``session_id`` in an open quick race, or in a new one."""

    session_id: str


@dataclass(frozen=True, slots=True)
class DailyRace:
    """Seat ``session_id`` in the open room of the day ``options`` are of (their
    ``daily``), or in a new one."""

    session_id: str
    options: RaceOptions


@dataclass(frozen=True, slots=True)
class CreateRace:
    """Open a race with ``options`` and seat ``session_id`` in it first."""

    session_id: str
    options: RaceOptions


@dataclass(frozen=True, slots=True)
class Seated:
    """The race took ``session_id``: it races there from now on."""

    session_id: str
    race_id: str


@dataclass(frozen=True, slots=True)
class JoinRefused:
    """The race refused ``session_id`` (full, started): a race opened for it and left
    empty is closed."""

    session_id: str
    race_id: str


@dataclass(frozen=True, slots=True)
class Unseated:
    """``session_id`` left its seat in ``race_id`` (before the start, or its connection
    dropped in the lobby)."""

    session_id: str
    race_id: str


@dataclass(frozen=True, slots=True)
class RaceUpdated:
    """A race (new, recovered, or changed) stands as ``listing`` says."""

    listing: Listing


@dataclass(frozen=True, slots=True)
class RaceGone:
    """The server has forgotten a race (finished and lingered, or closed, or placed on
    another node)."""

    race_id: str


@dataclass(frozen=True, slots=True)
class NodesLoaded:
    """The nodes of the cluster that may run races, each with how many it runs now
    (``loads``; empty: place nothing), and which of them runs this lobby (``here``)."""

    here: str
    loads: Mapping[str, int] = field(default_factory=dict)


Command = (
    QuickRace | DailyRace | CreateRace | Seated | JoinRefused | Unseated | RaceUpdated | RaceGone
    | NodesLoaded
)


# -------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class RaceToOpen:
    """Open a new race ``race_id`` with ``options``."""

    race_id: str
    options: RaceOptions


@dataclass(frozen=True, slots=True)
class JoinRace:
    """Ask race ``race_id`` to take ``session_id`` (answer :class:`Seated` or
    :class:`JoinRefused`)."""

    session_id: str
    race_id: str


@dataclass(frozen=True, slots=True)
class SeatChanged:
    """``session_id`` races in ``race_id`` now (``None``: nowhere), no longer in
    ``previous``."""

    session_id: str
    previous: str | None
    race_id: str | None


@dataclass(frozen=True, slots=True)
class RaceClosed:
    """A lobby everyone left: forget the race."""

    race_id: str


@dataclass(frozen=True, slots=True)
class RaceToPlace:
    """Hand race ``race_id`` (started, and taking nobody more) to node ``node``, which
    runs it from now on. The lobby has forgotten it, and the seats in it."""

    race_id: str
    node: str


Event = RaceToOpen | JoinRace | SeatChanged | RaceClosed | RaceToPlace


class Lobby:
    """Every race the server holds, as the lobby sees them, and every seat."""

    def __init__(
        self,
        quick_options: RaceOptions,
        new_id: RaceIdSource = new_race_id,
        listed: int = LISTED_RACES,
    ) -> None:
        self.quick_options = quick_options
        """The options of every quick race."""
        self._new_id = new_id
        self._listed = listed
        self._races: dict[str, Listing] = {}
        """By id, in the order they opened."""
        self._seats: dict[str, str] = {}
        """The race each session races in."""
        self._seated: dict[str, set[str]] = {}
        """The sessions seated in each race (to free them when it is forgotten)."""
        self._placeable: set[str] = set()
        """The races this lobby opened that fill from every node (quick and public races,
        daily rooms), not started yet: placed once started."""
        self._here = ""
        self._loads: dict[str, int] = {}
        """Races each node runs, as last given, plus those placed since."""

    # ------------------------------------------------------------- reading

    def seat_of(self, session_id: str) -> str | None:
        """The race ``session_id`` races in (its latest), if any."""
        return self._seats.get(session_id)

    def open_races(self) -> list[Listing]:
        """The open public races, oldest first, at most ``listed``."""
        found: list[Listing] = []
        for listing in self._races.values():
            if len(found) >= self._listed:
                break
            if listing.open and listing.options.public:
                found.append(listing)
        return found

    def __contains__(self, race_id: object) -> bool:
        return race_id in self._races

    # ------------------------------------------------------------ commands

    def apply(self, command: Command) -> list[Event]:
        """Carry out ``command``; the events say what the race tier must do."""
        match command:
            case QuickRace(session_id):
                return self._match(session_id, self.quick_options)
            case DailyRace(session_id, options):
                return self._match(session_id, options)
            case CreateRace(session_id, options):
                return self._open_for(session_id, options)
            case Seated(session_id, race_id):
                return self._seat(session_id, race_id)
            case JoinRefused(_, race_id):
                return self._close_if_empty(race_id)
            case Unseated(session_id, race_id):
                if self._seats.get(session_id) != race_id:
                    return []
                self._unseat(session_id)
                return [SeatChanged(session_id, race_id, None)]
            case RaceUpdated(listing):
                had = self._races.get(listing.race_id)
                self._races[listing.race_id] = listing
                if listing.race_id in self._placeable and listing.phase is Phase.RUNNING:
                    return self._place(listing.race_id)
                if had is not None and had.racers > 0:
                    return self._close_if_empty(listing.race_id)
                return []
            case RaceGone(race_id):
                self._forget(race_id)
                return []
            case NodesLoaded(here, loads):
                self._here, self._loads = here, dict(loads)
                return []
        raise TypeError(f"not a lobby command: {command!r}")

    # ------------------------------------------------------------ internal

    def _match(self, session_id: str, options: RaceOptions) -> list[Event]:
        """Seat ``session_id`` in the first open race with ``options``, or a new one."""
        for listing in self._races.values():
            if listing.open and listing.options == options:
                return [JoinRace(session_id, listing.race_id)]
        return self._open_for(session_id, options)

    def _open_for(self, session_id: str, options: RaceOptions) -> list[Event]:
        race_id = self._new_id(self._races)
        self._races[race_id] = Listing(race_id, options, Phase.LOBBY, 0, open=True)
        if options.public or options.daily is not None:
            self._placeable.add(race_id)
        return [RaceToOpen(race_id, options), JoinRace(session_id, race_id)]

    def _place(self, race_id: str) -> list[Event]:
        """A race this lobby fills from every node has started: the node with the fewest races
        runs it (counted as one more there until the next load map). Placed here, it
        stays; placed elsewhere, the lobby forgets it."""
        self._placeable.discard(race_id)
        if not self._loads:
            return []
        node = least_loaded(self._loads, self._here)
        self._loads[node] += 1
        if node == self._here:
            return []
        self._forget(race_id)
        return [RaceToPlace(race_id, node)]

    def _forget(self, race_id: str) -> None:
        self._races.pop(race_id, None)
        self._placeable.discard(race_id)
        for session_id in self._seated.pop(race_id, set()):
            del self._seats[session_id]

    def _seat(self, session_id: str, race_id: str) -> list[Event]:
        previous = self._seats.get(session_id)
        if previous == race_id:
            return []
        if previous is not None:
            self._unseat(session_id)
        self._seats[session_id] = race_id
        self._seated.setdefault(race_id, set()).add(session_id)
        return [SeatChanged(session_id, previous, race_id)]

    def _unseat(self, session_id: str) -> None:
        race_id = self._seats.pop(session_id)
        seated = self._seated.get(race_id)
        if seated is not None:
            seated.discard(session_id)
            if not seated:
                del self._seated[race_id]

    def _close_if_empty(self, race_id: str) -> list[Event]:
        listing = self._races.get(race_id)
        if listing is None or listing.racers > 0 or listing.phase is not Phase.LOBBY:
            return []
        self._forget(race_id)
        return [RaceClosed(race_id)]
