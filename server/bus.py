"""The bus: the one way between the socket tier and the race tier.

The server is two tiers. The *socket tier* (:mod:`server.socket_tier`) holds the
connections: it says hello, decodes, rate-limits, and writes frames to local connections.
The *race tier* (:mod:`server.race_tier`) holds the races, the tournaments, the lobby and
the journal. Neither holds a reference into the other: the socket tier sends
**commands** (:data:`Command`) and the race tier publishes **events** (:data:`Event`),
both plain frozen dataclasses of strings, numbers, enums, bytes and :mod:`protocol`
messages, so that a bus between processes can carry them as they are.

Where a command goes is its **route** (:func:`route`): a race's channel, a tournament's,
or the lobby's. Where an event goes is a **channel** too (:func:`channel_of`): one
session's (``session:ID``: a card, an answer), or a *feed* (``race:ID``,
``tournament:CODE``) whose listeners are the members (racers, entrants) and the watchers
(spectators) that follow it. A node learns who follows what from :class:`Follow` and
:class:`Unfollow` events, which go to the session's channel, so it can hold exactly the
subscriptions its own connections need (:meth:`Bus.subscribe`): the owner of a race
publishes each update once per feed, and every node with listeners fans it out to its
own connections.

:class:`InProcessBus` is the bus of one process: a command is handled and its events
delivered in the same call, with nothing copied or encoded on the way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from protocol import (
    ClientMessage,
    CreateRace,
    ErrorCode,
    JoinRace,
    LeaveRace,
    Place,
    Ready,
    Resign,
    Role,
    SeedPolicy,
    Spectate,
)
from protocol.daily import DailyClientMessage, DailyRace
from protocol.players import PlayerClientMessage
from protocol.tournament import (
    CreateTournament,
    ExportTournament,
    HostAction,
    JoinTournament,
    LeaveTournament,
    SetArenaAvailable,
    TournamentClientMessage,
    TournamentControl,
    WatchTournament,
)

#: The route of commands that concern no one race or tournament (quick races, lists,
#: new races, sessions coming and going).
LOBBY = "lobby"


def race_feed(race_id: str) -> str:
    """The channel of race ``race_id``'s racers and spectators."""
    return f"race:{race_id}"


def tournament_feed(code: str) -> str:
    """The channel of tournament ``code``'s entrants and watchers."""
    return f"tournament:{code}"


def tournament_of_race(race_id: str) -> str | None:
    """The tournament whose race ``race_id`` is (``TOURNAMENT-R1-0`` for a round's,
    ``TOURNAMENT-A3`` for an arena's, as :class:`~server.tournament.Tournament` makes
    them), or ``None``: no other race id holds a dash (:func:`server.lobby.new_race_id`).

    >>> tournament_of_race("Q7RT2K-R1-0"), tournament_of_race("K7QX2M9P")
    ('Q7RT2K', None)
    """
    tournament, dash, _ = race_id.partition("-")
    return tournament if dash else None


def session_channel(session_id: str) -> str:
    """The channel of what goes to one session wherever it is connected."""
    return f"session:{session_id}"


# ------------------------------------------------------------------ commands

ClientRequest = (
    ClientMessage | TournamentClientMessage | PlayerClientMessage | DailyClientMessage
)
"""Any message a client may send, decoded."""


@dataclass(frozen=True, slots=True)
class Caller:
    """Who sends a command: a session as it said hello."""

    session_id: str
    name: str
    bot: bool
    role: Role
    player: str | None = None
    """The claimed player the session plays as (rated races rate it); ``None``: a guest."""


@dataclass(frozen=True, slots=True)
class Request:
    """A client's request, decoded and within its rate, for the race tier to answer."""

    caller: Caller
    message: ClientRequest
    received_at: float | None = None
    """When a ``place`` arrived (the socket tier's own loop clock), handed back on the
    ``placed`` that answers it (:attr:`Deliver.received_at`) to time the move."""
    ticket: int | None = None
    """For a request :func:`answered_with_done`: the number its :class:`Done` carries."""


@dataclass(frozen=True, slots=True)
class Attach:
    """A session has a connection now (after its ``welcome``). A resumed one is sent its
    race and the races it watches again; the race tier answers with :class:`Done`."""

    caller: Caller
    resumed: bool
    ticket: int
    """The number the :class:`Done` that answers it carries."""
    since: float = 0.0
    """When the session's connection said hello (wall clock): in a cluster, a node on
    which the session has an older connection closes it (resumed elsewhere)."""
    node: str = ""
    """The node the session is connected to (stamped by a cluster's bus; ``""`` in one
    process): each race tier keeps who is present by node."""


@dataclass(frozen=True, slots=True)
class Detach:
    """A session's connection is gone. ``replaced``: it resumed on another connection,
    and an :class:`Attach` follows (its racer is not counted away meanwhile)."""

    session_id: str
    replaced: bool = False
    node: str = ""
    """The node the connection was on (see :attr:`Attach.node`): a race tier forgets the
    session's presence only if it was present there."""


@dataclass(frozen=True, slots=True)
class CheckExpiry:
    """These sessions have been idle past the expiry: which may be forgotten? Answered
    with :class:`ExpiryChecked`."""

    session_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TakeRace:
    """Node to node in a cluster: race ``race_id`` was handed over to the receiving node
    (by the lobby's node: its lease let go; or by a tournament's node, with the rest of
    its round: leases made for the receiving node), all of it in the store: take its
    lease and run it (:mod:`server.cluster`)."""

    race_id: str
    dealt_with: tuple[str, ...] = ()
    """The other races of its tournament's round, handed over with it: they share a deal
    (:class:`~server.race.SharedDeal`), so they are taken together or not at all."""

    @property
    def race_ids(self) -> tuple[str, ...]:
        """Every race handed over."""
        return (self.race_id, *self.dealt_with)


Command = Request | Attach | Detach | CheckExpiry | TakeRace
"""What the socket tier sends the race tier (and a node of a cluster another)."""


def answered_with_done(message: ClientRequest) -> bool:
    """Whether the race tier answers ``message`` with a :class:`Done` once it is through
    with it: a request that may wait for a winnable deal (a winnable ``create_race``, a
    host starting a tournament, which may deal them) or for a read of the store (a new
    tournament's code is checked against the stored ones; a finished tournament no longer
    in memory is watched or exported from the store; a race no longer in memory is
    answered with its stored result, to replay; a daily race takes its attempt in
    the store first). The socket tier holds the connection's later messages until
    then, so they are still handled in order."""
    if isinstance(message, DailyRace):
        return True
    if isinstance(message, CreateRace):
        return message.options.seed_policy is SeedPolicy.WINNABLE
    if isinstance(message, CreateTournament | WatchTournament | ExportTournament | Spectate):
        return True
    return isinstance(message, TournamentControl) and message.action is HostAction.START

#: Requests routed to their race's channel (the lobby takes the rest: a quick race or a
#: new race has no race yet).
_RACE_REQUESTS = (JoinRace, LeaveRace, Ready, Place, Resign, Spectate)

#: Requests routed to their tournament's channel (a new tournament is the lobby's).
_TOURNAMENT_REQUESTS = (
    JoinTournament, LeaveTournament, SetArenaAvailable, TournamentControl, WatchTournament,
    ExportTournament,
)


def route(command: Command) -> str:
    """The channel a command goes to: its race's, its tournament's, or :data:`LOBBY`.

    >>> from protocol import Place, QuickRace
    >>> ann = Caller("p-1", "ann", False, Role.PLAYER)
    >>> route(Request(ann, Place(race="K7QX", move=1, row=0, col=0)))
    'race:K7QX'
    >>> route(Request(ann, QuickRace()))
    'lobby'
    """
    if isinstance(command, Request):
        message = command.message
        if isinstance(message, _RACE_REQUESTS):
            return race_feed(message.race.upper())
        if isinstance(message, _TOURNAMENT_REQUESTS):
            return tournament_feed(message.tournament.upper())
    return LOBBY


# -------------------------------------------------------------------- events


class Audience(Enum):
    """Who of a feed's listeners an event is for."""

    MEMBERS = "members"
    """A race's racers, a tournament's entrants."""
    WATCHERS = "watchers"
    """A race's spectators, a tournament's watchers."""
    EVERYONE = "everyone"


@dataclass(frozen=True, slots=True)
class ToSession:
    """One session, wherever it is connected (nowhere: the event is dropped)."""

    session_id: str


@dataclass(frozen=True, slots=True)
class ToFeed:
    """Those who follow ``feed`` as ``audience`` says."""

    feed: str
    audience: Audience


Recipient = ToSession | ToFeed


@dataclass(frozen=True, slots=True)
class Deliver:
    """One encoded protocol message for ``to``."""

    to: Recipient
    payload: bytes
    you: bool = False
    """Each member's copy (and a session's own) says ``you``: its session id, put in
    front of ``payload`` (:func:`protocol.codec.with_field`); watchers get it as is."""
    skip: str | None = None
    """A session that gets none: it has its own copy already (a joining racer's answer)."""
    received_at: float | None = None
    """:attr:`Request.received_at` of the move this message acknowledges."""


@dataclass(frozen=True, slots=True)
class Refuse:
    """A request refused: the socket tier answers it with an ``error`` message (counted,
    and logged within the connection's budget)."""

    session_id: str
    code: ErrorCode
    message: str
    in_reply_to: str | None = None
    reply_to: int | None = None
    failure: str | None = None
    """For ``internal_error``: what failed (its type and place), for the log."""


@dataclass(frozen=True, slots=True)
class Follow:
    """``session_id`` listens to ``feed`` from now on, as a member or a watcher (until
    :class:`Unfollow`, or until its connection is gone: an :class:`Attach` follows again
    whatever it should)."""

    session_id: str
    feed: str
    member: bool


@dataclass(frozen=True, slots=True)
class Unfollow:
    """``session_id`` no longer listens to ``feed`` as a member (or as a watcher)."""

    session_id: str
    feed: str
    member: bool


@dataclass(frozen=True, slots=True)
class Done:
    """The race tier is done with the request (or the :class:`Attach`) that holds
    ``session_id``'s later messages: the socket tier may hand it the next."""

    session_id: str
    ticket: int
    """The request's :attr:`Request.ticket` (or :attr:`Attach.ticket`)."""


@dataclass(frozen=True, slots=True)
class ExpiryChecked:
    """The answer to :class:`CheckExpiry`: ``keep`` are still needed (a race not over, a
    tournament), ``forget`` may go."""

    keep: tuple[str, ...]
    forget: tuple[str, ...]


Event = Deliver | Refuse | Follow | Unfollow | Done | ExpiryChecked
"""What the race tier publishes for the socket tier."""


def channel_of(event: Event) -> str:
    """The channel an event is published on (the answer to :class:`CheckExpiry` goes
    to the lobby's, where the node that asked listens).

    >>> channel_of(Deliver(ToFeed(race_feed("K7QX"), Audience.EVERYONE), b""))
    'race:K7QX'
    >>> channel_of(Follow("p-1", race_feed("K7QX"), member=True))
    'session:p-1'
    """
    if isinstance(event, Deliver):
        to = event.to
        return to.feed if isinstance(to, ToFeed) else session_channel(to.session_id)
    if isinstance(event, ExpiryChecked):
        return LOBBY
    return session_channel(event.session_id)


# ----------------------------------------------------------------------- bus


class Bus(Protocol):
    """What each tier sees of the bus."""

    def send(self, command: Command) -> None:
        """Socket tier: hand ``command`` to the race tier (to the owner of its route)."""
        ...

    def publish(self, events: Sequence[Event]) -> None:
        """Race tier: hand ``events``, in order, to whoever listens on their channels.
        One call is one batch: a connection's frames from one batch go in one write."""
        ...

    def subscribe(self, channel: str) -> None:
        """Socket tier: this node has listeners on ``channel`` from now on."""
        ...

    def unsubscribe(self, channel: str) -> None:
        """Socket tier: this node no longer has listeners on ``channel``."""
        ...


CommandHandler = Callable[[Command], None]
EventHandler = Callable[[Sequence[Event]], None]


class InProcessBus:
    """The bus of one process (the default): both tiers in one event loop.

    A command is handled before :meth:`send` returns, and a batch of events is written
    before :meth:`publish` returns: no queue, no task, nothing copied. Subscriptions need
    no bookkeeping, since the only node hears every channel.
    """

    def __init__(self) -> None:
        self._commands: CommandHandler | None = None
        self._events: EventHandler | None = None

    def serve(self, commands: CommandHandler) -> None:
        """The race tier takes the commands from now on."""
        self._commands = commands

    def listen(self, events: EventHandler) -> None:
        """The socket tier takes the events from now on."""
        self._events = events

    def send(self, command: Command) -> None:
        """See :meth:`Bus.send`."""
        if self._commands is None:
            raise RuntimeError("no race tier serves this bus")
        self._commands(command)

    def publish(self, events: Sequence[Event]) -> None:
        """See :meth:`Bus.publish`."""
        if self._events is not None and events:
            self._events(events)

    def subscribe(self, channel: str) -> None:
        """See :meth:`Bus.subscribe` (nothing to do: this node hears everything)."""

    def unsubscribe(self, channel: str) -> None:
        """See :meth:`Bus.unsubscribe`."""
