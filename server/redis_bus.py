"""The bus between the nodes of a cluster, over Redis pub/sub (``--cluster redis://...``).

Every node runs a socket tier; one node at a time, the *leader*, also runs the race tier
(:mod:`server.cluster`). :class:`RedisBus` is the :class:`~server.bus.Bus` of one node:

- **Commands.** On the leader, :meth:`send` hands a command to the race tier at once, as
  the in-process bus does. On any other node it is published on the cluster's command
  channel, which only the leader subscribes to. Redis says how many subscribers a
  message reached: none means nobody leads right now (a failover is under way), so the
  command is published again, in order, every :data:`RETRY_INTERVAL` seconds; a command
  still undelivered after ``failover_wait`` seconds is answered here instead (a request
  with ``unavailable``, an :class:`~server.bus.Attach` with its
  :class:`~server.bus.Done`): never both, never half.
- **Events.** :meth:`publish` hands the events of channels this node's connections follow
  to the local socket tier at once, and publishes each run of events of one channel as one
  message on that channel (a session's own channel is not published when the session is
  connected here: nobody else has it). A node subscribes in Redis to exactly the channels
  its socket tier follows (:meth:`subscribe`), so each update of a race reaches each node
  with listeners once, whatever its number of spectators. Messages a node published
  itself come back to it from Redis and are dropped unread (each starts with its
  publisher's node id).
- **Leadership.** A node that becomes the leader says so on the leader channel
  (:meth:`announce_leader`); every node then calls its ``on_resync`` callback, which sends
  the new leader every connected session again (presence, and where each stands: what
  was in flight on the old leader is sent again). The same happens after a node's own
  connection to Redis comes back, since what was published meanwhile is lost.

The connection to Redis is watched: a lost one is logged (``bus_unavailable``), and the
node connects again from :data:`RECONNECT_FIRST` seconds up to every :data:`RECONNECT_LAST`
(``bus_available``), subscribing again to everything its socket tier follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis.asyncio as redis
from redis.exceptions import RedisError

from protocol import ErrorCode
from server.bus import (
    Attach,
    CheckExpiry,
    Command,
    CommandHandler,
    Done,
    Event,
    EventHandler,
    ExpiryChecked,
    Follow,
    Refuse,
    Request,
    channel_of,
)
from server.bus_codec import pack, unpack
from server.logs import failure, log_event

#: Seconds between two tries of a command that reached no leader.
RETRY_INTERVAL = 0.2
#: Seconds before the first attempt to reach Redis again after the connection was lost...
RECONNECT_FIRST = 0.1
#: ...doubling after each failed attempt up to this.
RECONNECT_LAST = 2.0
#: Messages published in one pipeline at most.
PUBLISHED_AT_ONCE = 1000

#: The refusal of a request that reached no leader in time.
NO_LEADER = (
    "no node of the cluster serves races right now (another node is taking them over, or "
    "the cluster's Redis cannot be reached), so nothing was done: send it again shortly"
)


class BusUnreachable(ValueError):
    """Redis could not be reached when the node started (a sentence). A ``ValueError``,
    like a certificate that cannot be used: ``serve`` says it and exits with 2."""


@dataclass(slots=True)
class _Outgoing:
    command: Command
    data: bytes
    at: float
    """Loop time it was first sent."""


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
        self._commands_channel = self._name("cluster:commands")
        self._leader_channel = self._name("cluster:leader")
        self._own_channel = self._name(f"cluster:node:{node_id}")
        self._serve: CommandHandler | None = None
        self._events: EventHandler | None = None
        self._on_resync: Callable[[], None] = lambda: None
        self._origin: str | None = None
        """The node the command being handled came from (``None``: this one)."""
        self._following: set[str] = set()
        """Bus channels this node's socket tier follows."""
        self._wanted: set[str] = {self._leader_channel, self._own_channel}
        """Redis channels to be subscribed to."""
        self._subscribed: set[str] = set()
        self._events_out: list[tuple[str, bytes]] = []
        self._commands_out: deque[_Outgoing] = deque()
        self._retry_at = 0.0
        self._wake = asyncio.Event()
        self._resubscribe = asyncio.Event()
        self._available = True
        self._closed = False
        self._tasks: list[asyncio.Task[None]] = []
        self._redis: redis.Redis | None = None
        self._pubsub: redis.client.PubSub | None = None
        self._loop = asyncio.get_running_loop()
        self.published = 0
        """Messages published (each a run of events of one channel, or one command)."""

    def _name(self, channel: str) -> str:
        return f"{self._prefix}:{channel}"

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Connect, subscribe to the leader's and this node's channels, and start reading
        and writing. Raises :class:`BusUnreachable` when Redis cannot be reached."""
        self._redis = redis.Redis.from_url(self.url, socket_connect_timeout=2.0)
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

    def on_resync(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when a node became the leader, or after this node's
        connection to Redis came back: its sessions must be sent to the leader again."""
        self._on_resync = callback

    def serve(self, commands: CommandHandler | None) -> None:
        """This node leads from now on (``commands`` takes every node's commands), or no
        longer does (``None``)."""
        self._serve = commands
        if commands is None:
            self._wanted.discard(self._commands_channel)
        else:
            self._wanted.add(self._commands_channel)
        self._resubscribe.set()

    async def serving(self) -> None:
        """Return once Redis has confirmed the subscription to the command channel (the
        leader then announces itself)."""
        while self._commands_channel not in self._subscribed and not self._closed:
            await asyncio.sleep(0.01)

    def announce_leader(self) -> None:
        """Tell every node that this one leads now (each sends its sessions again)."""
        self._events_out.append((self._leader_channel, self._tag))
        self._wake.set()
        self._on_resync()

    # ------------------------------------------------------------- the bus

    def send(self, command: Command) -> None:
        """See :meth:`server.bus.Bus.send`."""
        serve = self._serve
        if serve is not None:
            serve(command)
            return
        data = self._tag + pack([command])
        self._commands_out.append(_Outgoing(command, data, self._loop.time()))
        self._wake.set()

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
            if isinstance(event, ExpiryChecked) and self._origin is not None:
                target = f"cluster:node:{self._origin}"  # to the node that asked
            elif isinstance(event, ExpiryChecked) or channel in following:
                local.append(event)
                if isinstance(event, ExpiryChecked) or channel.startswith("session:"):
                    continue  # the session is connected here: no other node has it
                target = channel
            else:
                target = channel
            if target != run_channel and run:
                self._events_out.append((self._name(run_channel), self._tag + pack(run)))
                run = []
            run_channel = target
            run.append(event)
        if run:
            self._events_out.append((self._name(run_channel), self._tag + pack(run)))
            self._wake.set()
        if local and self._events is not None:
            self._events(local)

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
        if channel == self._commands_channel:
            serve = self._serve
            if serve is None:
                return
            (command,) = unpack(body)
            self._origin = None if origin == self._tag[:-1] else origin.decode()
            try:
                serve(command)
            finally:
                self._origin = None
        elif channel == self._leader_channel:
            if origin != self._tag[:-1]:
                self._on_resync()
        elif origin != self._tag[:-1] and self._events is not None:
            self._events(unpack(body))

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
        self._resubscribe.set()
        self._wake.set()
        if self._serve is not None:
            self.announce_leader()
        else:
            self._on_resync()

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

    async def _write(self) -> None:
        """Publish what was queued: events as they come, commands in order until one
        reaches nobody, then again every :data:`RETRY_INTERVAL`."""
        delay = RECONNECT_FIRST
        while not self._closed:
            timeout = None
            if self._commands_out:
                timeout = max(0.0, self._retry_at - self._loop.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            self._wake.clear()
            try:
                await self._publish_events()
                if self._commands_out and self._loop.time() >= self._retry_at:
                    await self._publish_commands()
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

    async def _publish_events(self) -> None:
        assert self._redis is not None
        while self._events_out:
            batch = self._events_out[:PUBLISHED_AT_ONCE]
            del self._events_out[:PUBLISHED_AT_ONCE]
            pipe = self._redis.pipeline(transaction=False)
            for channel, data in batch:
                pipe.publish(channel, data)
            await pipe.execute()
            self.published += len(batch)

    async def _publish_commands(self) -> None:
        assert self._redis is not None
        batch = list(self._commands_out)[:PUBLISHED_AT_ONCE]
        pipe = self._redis.pipeline(transaction=False)
        for item in batch:
            pipe.publish(self._commands_channel, item.data)
        received = await pipe.execute()
        self.published += len(batch)
        for count in received:
            if count == 0:  # nobody leads: this one and those after it, again shortly
                self._retry_at = self._loop.time() + RETRY_INTERVAL
                return
            self._commands_out.popleft()

    def _answer_undelivered(self) -> None:
        """Answer here the commands that reached no leader within ``failover_wait``."""
        cutoff = self._loop.time() - self._failover_wait
        answers: list[Event] = []
        while self._commands_out and self._commands_out[0].at <= cutoff:
            answers.extend(undelivered(self._commands_out.popleft().command))
        if answers and self._events is not None:
            self._events(answers)


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
