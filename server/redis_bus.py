"""The bus between the nodes of a cluster, over Redis pub/sub (``--cluster redis://...``).

Every node runs a socket tier and a race tier; each race and each tournament is run by
one node, the holder of its lease (a tournament's race not placed on a node yet: its
tournament's), and the *lobby* (quick races, public
races, the list of races) by the holder of the lobby's lease (:mod:`server.cluster`).
:class:`RedisBus` is the :class:`~server.bus.Bus` of one node:

- **Commands.** Where a command goes is its *place* (:func:`placement`): this node (a
  private race or a tournament is made where it is asked for, the expiry's question),
  every node (a session coming or going: each race tier keeps who is present), or the
  holder of a lease (a race's, a tournament's, or the lobby's). :meth:`send` hands it
  to the local race tier at once when that is this node, as the in-process bus does;
  otherwise it publishes it on the owner's own channel (``cluster:node:ID``), the owner
  read from the store's ``leases`` table once and kept (the node's ``resolve``
  callback). Redis says how many subscribers a message reached: none means the owner is
  gone (a failover is under way), so the command is sent again, in order behind it the
  later ones of the same place, every :data:`RETRY_INTERVAL` seconds, the owner read
  afresh; one still undelivered
  after ``failover_wait`` seconds is answered here instead (a request with
  ``unavailable``, an :class:`~server.bus.Attach` with its :class:`~server.bus.Done`):
  never both, never half. A node that gets a command for a place it does not hold (its
  sender read an owner that has lost the lease since) sends it on the same way.
- **Events.** :meth:`publish` hands the events of channels this node's connections follow
  to the local socket tier at once, and publishes each run of events of one channel as one
  message on that channel (a session's own channel is not published when the session is
  connected here: nobody else has it). A node subscribes in Redis to exactly the channels
  its socket tier follows (:meth:`subscribe`), so each update of a race reaches each node
  with listeners once, whatever its number of spectators. Messages a node published
  itself come back to it from Redis and are dropped unread (each starts with its
  publisher's node id).
- **Shared payloads.** A message of :data:`SHARED_AT_LEAST` bytes or more sent to
  sessions one by one (the view of a race that every new spectator is sent, about 200 KB
  in a race of 1,000) crosses Redis once: it is published on a channel every node hears
  (``cluster:shared``), numbered, and each session's own message carries only its
  number; each node keeps the last :data:`SHARED_KEPT` and puts the payload back before
  its socket tier sees the event. A thousand spectators starting to watch at once were
  otherwise 200 MB through Redis, and Redis cut the node that received them off (a
  subscriber more than 32 MB behind, Redis's default ``client-output-buffer-limit``).
- **Writing.** One task publishes, in order, on a connection of its own: whatever is
  queued when it wakes (events and commands together, up to :data:`PUBLISHED_AT_ONCE`
  of each) goes in one write, and the counts Redis answers are read before the next
  write, so each channel's messages keep their order.
- **Resync.** A node that took races over says which sessions race in or watch them
  (:meth:`resync`; all of them, after the lobby changed hands); every node then calls its
  ``on_resync`` callback, which sends those of its connected sessions again to every race
  tier (presence, and where each stands: what was in flight on the old owner is sent
  again). The same happens for every session after a node's own connection to Redis
  comes back, since what was published meanwhile is lost.

The connection to Redis is watched: a lost one is logged (``bus_unavailable``), and the
node connects again from :data:`RECONNECT_FIRST` seconds up to every :data:`RECONNECT_LAST`
(``bus_available``), subscribing again to everything its socket tier follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum

import hiredis
import redis.asyncio as redis
from redis.exceptions import RedisError

from protocol import CreateRace, DailyRace, ErrorCode, ListRaces, QuickRace
from server.bus import (
    LOBBY,
    Attach,
    CheckExpiry,
    Command,
    CommandHandler,
    Deliver,
    Detach,
    Done,
    Event,
    EventHandler,
    ExpiryChecked,
    Follow,
    Refuse,
    Request,
    channel_of,
    route,
)
from server.bus_codec import pack, unpack
from server.logs import failure, log_event

#: Seconds between two tries of a command that reached no owner.
RETRY_INTERVAL = 0.2
#: Seconds before the first attempt to reach Redis again after the connection was lost...
RECONNECT_FIRST = 0.1
#: ...doubling after each failed attempt up to this.
RECONNECT_LAST = 2.0
#: Events published in one write at most (and as many commands).
PUBLISHED_AT_ONCE = 1000
#: Owners kept in memory at most (all are forgotten past this; each is read again).
OWNERS_KEPT = 100_000
#: Bytes from which a payload sent to sessions one by one crosses Redis once (see the
#: module's docstring, *Shared payloads*).
SHARED_AT_LEAST = 32 * 1024
#: Shared payloads each node keeps, the newest (and, on the sending side, remembers as
#: already published).
SHARED_KEPT = 32
#: What a shared payload's number follows in an event that refers to it: a byte no
#: msgpack document starts with (every payload is an encoded message, a map).
_SHARED_MARK = b"\xc1"

#: In a resync, in place of session ids: every session (no session id holds a space).
_EVERY_SESSION = " all"

#: The lease of the lobby: quick races, public races and the list.
LOBBY_LEASE = LOBBY

#: The refusal of a request that reached no owner in time.
NO_LEADER = (
    "no node of the cluster runs this right now (another node is taking it over, or "
    "the cluster's Redis cannot be reached), so nothing was done: send it again shortly"
)


class Place(Enum):
    """Where a command goes when it is no lease's (:func:`placement`)."""

    HERE = "here"
    """The race tier of the node where it was sent."""
    EVERYWHERE = "everywhere"
    """Every node's race tier (the sender's first)."""


def placement(command: Command) -> str | Place:
    """Where ``command`` goes: the resource whose lease holder runs it (a race's id, a
    tournament's, or :data:`LOBBY_LEASE`), or a :class:`Place`.

    >>> from protocol import Role
    >>> from server.bus import Caller
    >>> ann = Caller("p-1", "ann", False, Role.PLAYER)
    >>> placement(Request(ann, QuickRace()))
    'lobby'
    >>> placement(Request(ann, DailyRace()))  # the day's rooms fill from every node
    'lobby'
    >>> placement(Detach("p-1"))
    <Place.EVERYWHERE: 'everywhere'>
    """
    if isinstance(command, Attach | Detach):
        return Place.EVERYWHERE
    if not isinstance(command, Request):
        return Place.HERE
    where = route(command)
    if where.startswith("race:"):
        # A tournament's race too: its owner is its tournament's until its round is
        # placed on a node (then the race has a lease of its own), as the store says.
        return where.removeprefix("race:")
    if where.startswith("tournament:"):
        return where.removeprefix("tournament:")  # a tournament's code is its id
    message = command.message
    if isinstance(message, QuickRace | ListRaces | DailyRace):
        return LOBBY_LEASE  # a daily room fills from every node, as a quick race does
    if isinstance(message, CreateRace) and message.options.public:
        return LOBBY_LEASE  # listed: the lobby keeps the list
    return Place.HERE


class BusUnreachable(ValueError):
    """Redis could not be reached when the node started (a sentence). A ``ValueError``,
    like a certificate that cannot be used: ``serve`` says it and exits with 2."""


Owns = Callable[[str], bool]
"""Whether this node holds a resource's lease (or is taking it over)."""
Resolve = Callable[[Collection[str]], Awaitable[dict[str, str]]]
"""The node holding each resource's lease, as the store says; ``""``: none does, nor will
(no such race, or one over), so this node answers."""
Resync = Callable[[Collection[str] | None], None]
"""Send these sessions (``None``: all) again to every race tier."""
AttachedElsewhere = Callable[[Attach], None]
"""A session resumed on another node (its :class:`~server.bus.Attach`, as every node hears it)."""


@dataclass(slots=True)
class _Outgoing:
    command: Command
    data: bytes
    at: float
    """Loop time it was first sent."""
    resource: str | None
    """The lease whose holder takes it (``None``: every node)."""
    not_before: float = 0.0


@dataclass(slots=True)
class _Routed:
    """Where the commands of one write went (:meth:`RedisBus._route_commands`)."""

    now: float
    batch: list[_Outgoing]
    """The commands looked at, from the head of the queue."""
    sent: list[_Outgoing] = field(default_factory=list)
    """Published, in order."""
    kept: list[_Outgoing] = field(default_factory=list)
    """To go again later."""
    here: list[Command] = field(default_factory=list)
    """For this node's race tier (no other node runs their place now)."""


def _everyone(_: str) -> bool:
    return False


async def _nobody(resources: Collection[str]) -> dict[str, str]:
    return dict.fromkeys(resources, "")


class RedisBus:
    """One node's end of the cluster's bus (start it with :meth:`start`)."""

    def __init__(self, url: str, prefix: str, node_id: str, *, failover_wait: float) -> None:
        if "\n" in node_id:
            raise ValueError("a node id cannot hold a line break")
        self.url = url
        self.node_id = node_id
        self._prefix = prefix
        self._failover_wait = failover_wait
        self._tag = node_id.encode() + b"\n"
        self._sessions_channel = self._name("cluster:sessions")
        self._resync_channel = self._name("cluster:resync")
        self._shared_channel = self._name("cluster:shared")
        self._own_channel = self._node_channel(node_id)
        self._serve: CommandHandler | None = None
        self._owns: Owns = _everyone
        self._resolve: Resolve = _nobody
        self._owners: dict[str, str] = {}
        """The node holding each resource's lease, as last read (``""``: this one)."""
        self._events: EventHandler | None = None
        self._on_resync: Resync = lambda sessions: None
        self._on_attached_elsewhere: AttachedElsewhere = lambda attach: None
        self._following: set[str] = set()
        """Bus channels this node's socket tier follows."""
        self._wanted: set[str] = {self._sessions_channel, self._resync_channel,
                                  self._own_channel, self._shared_channel}
        """Redis channels to be subscribed to."""
        self._subscribed: set[str] = set()
        self._events_out: list[tuple[str, bytes]] = []
        self._shared_out: dict[bytes, bytes] = {}
        """Payloads published on the shared channel lately, and the number of each."""
        self._shared_in: dict[bytes, bytes] = {}
        """Payloads heard on the shared channel lately, by number."""
        self._shared_count = 0
        self._shared_prefix = f"{node_id}.{secrets.token_hex(4)}.".encode()
        """What this process's shared payloads are numbered after: its node id, and a
        random part, so that a node started again under the same id reuses no number."""
        self._commands_out: list[_Outgoing] = []
        self._retry_at = 0.0
        self._wake = asyncio.Event()
        self._resubscribe = asyncio.Event()
        self._available = True
        self._closed = False
        self._tasks: list[asyncio.Task[None]] = []
        self._redis: redis.Redis | None = None
        self._pubsub: redis.client.PubSub | None = None
        self._publisher: redis.connection.AbstractConnection | None = None
        """The connection everything is published on, in order (the writer's own)."""
        self._loop = asyncio.get_running_loop()
        self.published = 0
        """Messages published (each a run of events of one channel, or one command)."""

    def _name(self, channel: str) -> str:
        return f"{self._prefix}:{channel}"

    def _node_channel(self, node_id: str) -> str:
        return self._name(f"cluster:node:{node_id}")

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Connect, subscribe to this node's channels, and start reading and writing.
        Raises :class:`BusUnreachable` when Redis cannot be reached."""
        self._redis = redis.Redis.from_url(self.url, socket_connect_timeout=2.0)
        self._publisher = self._redis.connection_pool.make_connection()  # type: ignore[no-untyped-call]
        try:
            await self._redis.ping()
            self._pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            await self._pubsub.subscribe(*self._wanted)
        except (RedisError, OSError) as error:
            await self._redis.aclose()
            raise BusUnreachable(
                f"the cluster's Redis at {self.url} cannot be reached ({error}): start it, or "
                "give its URL with --cluster"
            ) from None
        self._subscribed = set(self._wanted)
        self._tasks = [
            self._loop.create_task(self._read(), name="bus-reader"),
            self._loop.create_task(self._write(), name="bus-writer"),
            self._loop.create_task(self._keep_subscriptions(), name="bus-subscriptions"),
        ]

    async def aclose(self) -> None:
        """Stop reading and writing, and close the connections."""
        self._closed = True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._pubsub is not None:
            with contextlib.suppress(RedisError, OSError):
                await self._pubsub.aclose()  # type: ignore[no-untyped-call]
        if self._publisher is not None:
            with contextlib.suppress(RedisError, OSError):
                await self._publisher.disconnect()
        if self._redis is not None:
            with contextlib.suppress(RedisError, OSError):
                await self._redis.aclose()

    @property
    def available(self) -> bool:
        """Whether the connection to Redis is up (as far as the last use showed)."""
        return self._available

    # ------------------------------------------------------------- wiring

    def listen(self, events: EventHandler) -> None:
        """The socket tier takes the events from now on."""
        self._events = events

    def on_resync(self, callback: Resync) -> None:
        """Call ``callback`` when a node took races over (with their sessions) or the
        lobby (``None``: every session), or after this node's connection to Redis came
        back: those sessions must be sent to the race tiers again."""
        self._on_resync = callback

    def on_attached_elsewhere(self, callback: AttachedElsewhere) -> None:
        """Call ``callback`` with each resumed session's :class:`~server.bus.Attach` that
        another node sends (its socket tier closes an older connection of the session
        here)."""
        self._on_attached_elsewhere = callback

    def serve(self, commands: CommandHandler | None, owns: Owns = _everyone,
              resolve: Resolve = _nobody) -> None:
        """This node's race tier takes the commands placed here from now on (``None``:
        no longer); ``owns`` says which leases it holds, ``resolve`` reads the others'."""
        self._serve = commands
        self._owns, self._resolve = owns, resolve

    def forget_owner(self, resource: str) -> None:
        """Read ``resource``'s owner again before the next command for it."""
        self._owners.pop(resource, None)

    def resync(self, resources: Collection[str], sessions: Collection[str] | None) -> None:
        """Tell every node (this one too) that this node runs ``resources`` now (what they
        read of their owners is stale), and to send these sessions (``None``: all) to
        every race tier again: they race in or watch what this node has just taken over."""
        lines = [" ".join(resources), *(sessions or ())]
        if sessions is None:
            lines.append(_EVERY_SESSION)
        self._events_out.append((self._resync_channel, self._tag + "\n".join(lines).encode()))
        self._wake.set()
        self._on_resync(sessions)

    def attach_all_again(self) -> None:
        """Send every session connected to this node to every race tier again (the other
        nodes took this node for gone, its leases having lapsed)."""
        self._on_resync(None)

    # ------------------------------------------------------------- the bus

    def send(self, command: Command) -> None:
        """See :meth:`server.bus.Bus.send` (a session coming or going is stamped with this
        node's id: every race tier keeps who is present by node)."""
        if isinstance(command, Attach | Detach):
            command = replace(command, node=self.node_id)
        place = placement(command)
        if place is Place.HERE or place is Place.EVERYWHERE or self._owns(place):
            self._here(command)
            if place is not Place.EVERYWHERE:
                return
        resource = place if isinstance(place, str) else None
        if resource is not None and self._owners.get(resource) == "":
            self._here(command)  # no node runs it: this one answers
            return
        data = self._tag + pack([command])
        self._commands_out.append(_Outgoing(command, data, self._loop.time(), resource))
        self._wake.set()

    def send_to(self, node_id: str, command: Command) -> None:
        """Publish ``command`` to node ``node_id``'s race tier, once: no retry, no answer
        (what it asks must come about even if that node never gets it: a race handed over
        is taken over by any node once its lease has lapsed)."""
        self._events_out.append((self._node_channel(node_id), self._tag + pack([command])))
        self._wake.set()

    def _here(self, command: Command) -> None:
        serve = self._serve
        if serve is None:
            self._answer([command])
        else:
            serve(command)

    def publish(self, events: Sequence[Event]) -> None:
        """See :meth:`server.bus.Bus.publish`."""
        local: list[Event] = []
        run: list[Event] = []
        run_channel = ""
        following = self._following
        for event in events:
            channel = channel_of(event)
            if isinstance(event, Follow) and channel in following and event.feed not in following:
                # A connection here follows the feed from this event on: the feed's events
                # after it in this batch are for it too.
                following = {*following, event.feed}
            if isinstance(event, ExpiryChecked) or channel in following:
                local.append(event)
                if isinstance(event, ExpiryChecked) or channel.startswith("session:"):
                    continue  # the session is connected here: no other node has it
            if channel != run_channel and run:
                self._events_out.append((self._name(run_channel), self._tag + pack(run)))
                run = []
            run_channel = channel
            if (isinstance(event, Deliver) and len(event.payload) >= SHARED_AT_LEAST
                    and channel.startswith("session:")):
                event = replace(event, payload=_SHARED_MARK + self._shared(event.payload))
            run.append(event)
        if run:
            self._events_out.append((self._name(run_channel), self._tag + pack(run)))
            self._wake.set()
        if local and self._events is not None:
            self._events(local)

    def _shared(self, payload: bytes) -> bytes:
        """The number of ``payload`` on the shared channel, publishing it there first
        unless it was lately (the same bytes object for every spectator of one view: its
        hash is computed once)."""
        number = self._shared_out.get(payload)
        if number is None:
            self._shared_count += 1
            number = self._shared_prefix + str(self._shared_count).encode()
            self._shared_out[payload] = number
            self._events_out.append((self._shared_channel, self._tag + number + b"\n" + payload))
            if len(self._shared_out) > SHARED_KEPT:
                del self._shared_out[next(iter(self._shared_out))]
        return number

    def _unshared(self, events: list[Event]) -> list[Event]:
        """``events`` with each shared payload put back (an event whose payload is no
        longer kept is dropped: its session is sent everything again on a resync)."""
        kept = []
        for event in events:
            if isinstance(event, Deliver) and event.payload[:1] == _SHARED_MARK:
                payload = self._shared_in.get(event.payload[1:])
                if payload is None:
                    log_event("bus_shared_lost", logging.WARNING, to=channel_of(event))
                    continue
                event = replace(event, payload=payload)
            kept.append(event)
        return kept

    def subscribe(self, channel: str) -> None:
        """See :meth:`server.bus.Bus.subscribe`."""
        self._following.add(channel)
        self._wanted.add(self._name(channel))
        self._resubscribe.set()

    def unsubscribe(self, channel: str) -> None:
        """See :meth:`server.bus.Bus.unsubscribe`."""
        self._following.discard(channel)
        self._wanted.discard(self._name(channel))
        self._resubscribe.set()

    # ------------------------------------------------------------ reading

    async def _read(self) -> None:
        pubsub = self._pubsub
        assert pubsub is not None
        delay = RECONNECT_FIRST
        while not self._closed:
            try:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
            except (RedisError, OSError) as error:
                self._lost(error)
                await asyncio.sleep(delay)
                delay = min(delay * 2, RECONNECT_LAST)
                with contextlib.suppress(RedisError, OSError):
                    await pubsub.connect()  # type: ignore[no-untyped-call]  # subscribes again
                    self._back()
                    delay = RECONNECT_FIRST
                continue
            if message is None or message.get("type") != "message":
                continue
            try:
                self._received(message["channel"].decode(), message["data"])
            except Exception as error:  # one bad message must not stop the node's bus
                log_event("internal_error", logging.ERROR, error=failure(error))

    def _received(self, channel: str, data: bytes) -> None:
        origin, _, body = data.partition(b"\n")
        if origin == self._tag[:-1]:
            return  # this node's own, echoed
        if channel == self._own_channel:
            (command,) = unpack(body)
            place = placement(command)
            if isinstance(place, str) and not self._owns(place):
                # Its sender read an owner that has lost the lease since: on it goes.
                self.forget_owner(place)
                self._commands_out.append(_Outgoing(
                    command, self._tag + body, self._loop.time(), place,
                    self._loop.time() + RETRY_INTERVAL,
                ))
                self._wake.set()
                return
            self._here(command)
        elif channel == self._sessions_channel:
            (command,) = unpack(body)
            if isinstance(command, Attach) and command.resumed:
                self._on_attached_elsewhere(command)
            if self._serve is not None:
                self._serve(command)
        elif channel == self._resync_channel:
            resources, *sessions = body.decode().split("\n")
            for resource in resources.split():
                self.forget_owner(resource)
            self._on_resync(None if sessions[-1:] == [_EVERY_SESSION] else sessions)
        elif channel == self._shared_channel:
            number, _, payload = body.partition(b"\n")
            self._shared_in[number] = payload
            if len(self._shared_in) > SHARED_KEPT:
                del self._shared_in[next(iter(self._shared_in))]
        elif self._events is not None:
            self._events(self._unshared(unpack(body)))

    def _lost(self, error: BaseException) -> None:
        if self._available:
            self._available = False
            log_event("bus_unavailable", logging.ERROR, bus=self.url, error=str(error))

    def _back(self) -> None:
        """Connected again: subscribe to everything wanted, and send every session again
        (whatever was published meanwhile is lost)."""
        if self._available:
            return
        self._available = True
        log_event("bus_available", bus=self.url)
        self._subscribed = set()
        self._owners.clear()
        self._resubscribe.set()
        self._wake.set()
        self._on_resync(None)

    # ------------------------------------------------------------ writing

    async def _keep_subscriptions(self) -> None:
        """Subscribe and unsubscribe in Redis as the wanted channels change."""
        pubsub = self._pubsub
        assert pubsub is not None
        while not self._closed:
            await self._resubscribe.wait()
            self._resubscribe.clear()
            wanted = set(self._wanted)
            more, fewer = wanted - self._subscribed, self._subscribed - wanted
            try:
                if more:
                    await pubsub.subscribe(*more)
                if fewer:
                    await pubsub.unsubscribe(*fewer)
            except (RedisError, OSError) as error:
                self._lost(error)
                continue  # subscribed again once connected (see _back)
            self._subscribed = (self._subscribed | more) - fewer

    async def subscribed(self) -> None:
        """Return once Redis has confirmed this node's own subscriptions."""
        while not self._closed and not {
            self._own_channel, self._sessions_channel, self._resync_channel
        } <= self._subscribed:
            await asyncio.sleep(0.01)

    async def _write(self) -> None:
        """Publish what was queued, each time in one write (one round trip to Redis):
        events as they come, commands in order for each place, one that reached nobody
        again every :data:`RETRY_INTERVAL`. The task sleeps on the wake event alone (a
        timer sets it when a held command is due), so a send costs one task switch."""
        delay = RECONNECT_FIRST
        timer: asyncio.TimerHandle | None = None
        while not self._closed:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self._flush()
            except (RedisError, OSError) as error:
                self._lost(error)
                self._events_out.clear()  # stale by the time it is back: a resync follows
                self._retry_at = self._loop.time() + delay
                delay = min(delay * 2, RECONNECT_LAST)
                with contextlib.suppress(RedisError, OSError):
                    assert self._redis is not None
                    await self._redis.ping()
                    delay = RECONNECT_FIRST
            self._answer_undelivered()
            if timer is not None:
                timer.cancel()
                timer = None
            if self._events_out:  # more than one write's worth
                self._wake.set()
            elif self._commands_out:  # the next command due again (or Redis to try again)
                due = min(item.not_before for item in self._commands_out)
                when = max(due, self._retry_at, self._loop.time() + 0.01)
                timer = self._loop.call_at(when, self._wake.set)

    async def _flush(self) -> None:
        """Publish the queued events and the commands that may go now, in one write."""
        commands_due = bool(self._commands_out) and self._loop.time() >= self._retry_at
        if commands_due:
            await self._read_owners()
        messages = self._events_out[:PUBLISHED_AT_ONCE]
        del self._events_out[:PUBLISHED_AT_ONCE]
        events = len(messages)
        routed = self._route_commands(messages) if commands_due else None
        received = await self._publish(messages) if messages else []
        self.published += len(messages)
        if routed is not None:
            self._commands_routed(routed, received[events:])

    async def _publish(self, messages: Sequence[tuple[str, bytes]]) -> list[int]:
        """``PUBLISH`` each ``(channel, data)`` in order, in one write, and read how many
        subscribers each reached. A connection of its own rather than a pipeline from the
        pool, each command packed by hiredis: a pipeline's bookkeeping and redis-py's
        packing in Python cost more than the publishes themselves."""
        connection = self._publisher
        assert connection is not None
        try:
            await connection.send_packed_command(
                [
                    # (hiredis's stub types the command as a tuple of one item)
                    hiredis.pack_command(("PUBLISH", channel, data))  # type: ignore[arg-type]
                    for channel, data in messages
                ],
                check_health=False,
            )
            return [await connection.read_response() for _ in messages]
        except BaseException:
            # Whatever was half written or half read is dropped with the connection; the
            # next write connects again.
            with contextlib.suppress(RedisError, OSError):
                await connection.disconnect()
            raise

    async def _read_owners(self) -> None:
        """Read from the store the owners of the places of commands due now not known."""
        now = self._loop.time()
        unknown = {
            item.resource for item in self._commands_out
            if item.not_before <= now and item.resource is not None
            and item.resource not in self._owners and not self._owns(item.resource)
        }
        if unknown:
            if len(self._owners) > OWNERS_KEPT:
                self._owners.clear()
            with contextlib.suppress(Exception):  # the store down: read again next time
                self._owners.update(await self._resolve(unknown))

    def _route_commands(self, messages: list[tuple[str, bytes]]) -> _Routed:
        """Add to ``messages`` the commands that may go now, each to its place's owner; a
        place whose command cannot go holds back its later ones."""
        now = self._loop.time()
        routed = _Routed(now, self._commands_out[:PUBLISHED_AT_ONCE])
        held: set[str] = set()
        for item in routed.batch:
            resource = item.resource
            if resource is None:
                messages.append((self._sessions_channel, item.data))
                routed.sent.append(item)
                continue
            owner = None if self._owns(resource) else self._owners.get(resource)
            if resource in held or item.not_before > now:
                held.add(resource)
                routed.kept.append(item)
            elif self._owns(resource) or owner == "":
                routed.here.append(item.command)
            elif owner == self.node_id:  # not taken back yet (or let go): again shortly
                self.forget_owner(resource)
                held.add(resource)
                item.not_before = now + RETRY_INTERVAL
                routed.kept.append(item)
            elif owner is None:  # its owner could not be read: again shortly
                held.add(resource)
                item.not_before = now + RETRY_INTERVAL
                routed.kept.append(item)
            else:
                messages.append((self._node_channel(owner), item.data))
                routed.sent.append(item)
        return routed

    def _commands_routed(self, routed: _Routed, received: Sequence[int]) -> None:
        """The commands are published: keep what must go again (those that reached no
        subscriber too), and hand this node's race tier what is its own."""
        kept = routed.kept
        for item, count in zip(routed.sent, received, strict=True):
            if count == 0 and item.resource is not None:
                # Its owner is gone (a failover is under way): read it again, and send
                # this one and the later ones of its place again shortly.
                self.forget_owner(item.resource)
                item.not_before = routed.now + RETRY_INTERVAL
                kept.append(item)
        kept.sort(key=lambda item: item.at)
        # (Commands sent while the write was out were appended after the batch.)
        self._commands_out = kept + self._commands_out[len(routed.batch):]
        for command in routed.here:
            self._here(command)

    def _answer_undelivered(self) -> None:
        """Answer here the commands that reached no owner within ``failover_wait``."""
        cutoff = self._loop.time() - self._failover_wait
        late = [item.command for item in self._commands_out if item.at <= cutoff]
        if late:
            self._commands_out = [item for item in self._commands_out if item.at > cutoff]
            self._answer(late)

    def _answer(self, commands: Sequence[Command]) -> None:
        answers = [answer for command in commands for answer in undelivered(command)]
        if answers:
            self.publish(answers)


def undelivered(command: Command) -> list[Event]:
    """What answers ``command`` when no race tier could take it: a request is refused
    with ``unavailable``, whatever holds a connection is released, the expiry keeps
    every session it asked about."""
    match command:
        case Request(caller, message, _, ticket):
            events: list[Event] = [Refuse(
                caller.session_id, ErrorCode.UNAVAILABLE, NO_LEADER, message.TYPE, message.id
            )]
            if ticket is not None:
                events.append(Done(caller.session_id, ticket))
            return events
        case Attach(caller, _, ticket):
            return [Done(caller.session_id, ticket)]
        case CheckExpiry(session_ids):
            return [ExpiryChecked(keep=session_ids, forget=())]
    return []
