"""A node of a cluster: who runs the race tier, the lease that says so, and failover.

Every node of a cluster (``foursquare serve --cluster redis://... --db postgresql://...``)
runs a socket tier and takes any connection. One node at a time, the **leader**, runs the
race tier: every race, tournament and the lobby. It holds the lease of
:data:`~server.store.EVERY_RESOURCE` in the shared store, for ``lease_ttl`` seconds
renewed every third of that, and every write of its race tier carries that lease's epoch
(the store's fence). :class:`ClusterNode` runs this:

- **Campaign.** A node that does not lead tries, every ``lease_ttl / 3`` seconds, to
  acquire the lease. It succeeds once the leader's lease has lapsed (a leader killed,
  stopped, cut off, or one that stopped cleanly and released it).
- **Taking over.** The new leader reads everything from the store (players are the
  socket tiers'; races, tournaments and what sessions watch), rebuilds its race tier from
  it exactly as a restarted server does (every racer still racing gets a fresh reconnect
  grace), subscribes to the command channel, and announces itself: every node then sends
  the leader each of its connected sessions again, so the leader learns who is present and
  every racer and spectator is sent where it stands (a move that was in flight on the old
  leader, and never answered, is sent again by the client on seeing its card again).
- **No split brain.** The leader handles a command only while its lease is surely still
  its own by its own clock (``lease_ttl`` from the moment it asked for the last renewal,
  less a tenth); past that it holds commands until a renewal answers. Whatever it still
  writes after another node took over (a race's clock, a command held while it was
  stopped) carries the old epoch and is refused whole by the store: nothing of it is
  stored, so nothing of it is acknowledged. A leader that finds its lease taken (a
  renewal or a write refused with :class:`~server.store.LeaseLost`) stops its race tier
  and goes back to campaigning.
- **The store down.** A write that fails with
  :class:`~server.store.StoreUnavailable` *suspends* the leader: its race tier is
  dropped (its memory may be ahead of the store), and every request is refused at once
  with ``unavailable`` until the store is back. Then the node takes its lease again
  (a new epoch) and rebuilds the race tier from the store, as a new leader would, unless
  another node was quicker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from enum import Enum

from server.bus import Command
from server.config import ServerConfig
from server.logs import failure, log_event
from server.metrics import Metrics
from server.race_tier import RaceTier
from server.redis_bus import RedisBus, undelivered
from server.store import EVERY_RESOURCE, Lease, LeaseHeld, LeaseLost, Store, StoreError

#: The share of ``lease_ttl`` a leader trusts its lease for, counted from when it asked
#: for the last renewal: the lease's expiry is counted on the database's clock from a
#: moment after that, so this leaves room for clocks that do not tick quite alike.
TRUSTED_SHARE = 0.9


def new_node_id() -> str:
    """A node id for a node started now: its host, its process id and a random part, so
    that a node restarted on the same host is never taken for the one before it (whose
    lease must lapse, or be taken over, like anyone else's)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


class NodeRole(Enum):
    """What a node does in its cluster now."""

    FOLLOWER = "follower"
    """Runs a socket tier only; campaigns for the lease."""
    LEADER = "leader"
    """Runs the race tier too."""
    SUSPENDED = "suspended"
    """Led until the store became unreachable: refuses requests until it is back."""


class ClusterNode:
    """The race tier's side of one node of a cluster (start it with :meth:`start`)."""

    def __init__(
        self,
        config: ServerConfig,
        store: Store,
        bus: RedisBus,
        metrics: Metrics,
        node_id: str,
    ) -> None:
        self.config = config
        self.node_id = node_id
        self._store = store
        self._bus = bus
        self._metrics = metrics
        self._loop = asyncio.get_running_loop()
        self.role = NodeRole.FOLLOWER
        self.tier: RaceTier | None = None
        """The race tier while this node leads."""
        self._lease: Lease | None = None
        self._trusted_until = float("-inf")
        """Loop time until which the lease is surely this node's."""
        self._held: list[Command] = []
        """Commands that came while the lease was not surely this node's."""
        self._renewing: asyncio.Task[None] | None = None
        self._campaign: asyncio.Task[None] | None = None
        self._changing = asyncio.Lock()
        """Held while the node takes over or steps down (one change at a time)."""
        self._stopping = False

    @property
    def _ttl(self) -> float:
        return self.config.lease_ttl

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Begin campaigning (and leading, once the lease is won)."""
        self._campaign = self._loop.create_task(self._run(), name="cluster-campaign")

    async def stop(self) -> None:
        """Stop leading cleanly: every race's journaled state sent, then the lease
        released so that another node takes over at once."""
        self._stopping = True
        if self._campaign is not None:
            self._campaign.cancel()
            await asyncio.gather(self._campaign, return_exceptions=True)
        tier, lease = self.tier, self._lease
        self._bus.serve(None)
        if tier is not None:
            await tier.drain()
            tier.stop()
        if lease is not None and self.role is NodeRole.LEADER:
            with contextlib.suppress(StoreError):
                await self._store.release_lease(lease)
        self.tier, self._lease = None, None

    # ------------------------------------------------------------- commands

    def handle(self, command: Command) -> None:
        """A command from any node (the bus hands them here while this node leads)."""
        tier = self.tier
        if self.role is NodeRole.LEADER and tier is not None:
            if self._loop.time() < self._trusted_until:
                tier.handle(command)
                return
            # Not surely ours any more (the node was stopped, or renewals went unanswered):
            # hold it until a renewal says whose the lease is.
            self._held.append(command)
            self._renew_now()
            return
        self._bus.publish(undelivered(command))  # suspended: nothing can be stored now

    def _renew_now(self) -> None:
        if self._renewing is None or self._renewing.done():
            self._renewing = self._loop.create_task(self._renew())

    async def _renew(self) -> None:
        lease = self._lease
        if lease is None or self.role is not NodeRole.LEADER:
            return
        asked = self._loop.time()
        try:
            self._lease = await self._store.renew_lease(lease, self._ttl)
        except LeaseLost as lost:
            await self._step_down(lost)
            return
        except StoreError as error:
            if self._loop.time() >= self._trusted_until:
                await self._suspend(error)
            return
        self._trusted_until = asked + self._ttl * TRUSTED_SHARE
        held, self._held = self._held, []
        tier = self.tier
        for command in held:
            if tier is not None and self.tier is tier:
                tier.handle(command)

    # ------------------------------------------------------------- campaign

    async def _run(self) -> None:
        while not self._stopping:
            try:
                if self.role is NodeRole.LEADER:
                    await self._renew()
                else:
                    await self._try_to_lead()
            except Exception as error:  # the campaign must outlive any one failure
                log_event("internal_error", logging.ERROR, error=failure(error))
            await asyncio.sleep(self._ttl / 3)

    async def _try_to_lead(self) -> None:
        if self.role is NodeRole.SUSPENDED:
            await self._store.available()
        asked = self._loop.time()
        try:
            lease = await self._store.acquire_lease(EVERY_RESOURCE, self.node_id, self._ttl)
        except LeaseHeld:
            if self.role is NodeRole.SUSPENDED:
                await self._step_down(None)  # another node leads now
            return
        except StoreError:
            return  # the store is down: try again at the next turn
        await self._lead(lease, asked)

    async def _lead(self, lease: Lease, asked: float) -> None:
        """Take every race and tournament over from the store, and lead."""
        async with self._changing:
            self._lease = lease
            self._trusted_until = asked + self._ttl * TRUSTED_SHARE
            try:
                recovered = await self._store.recover()
                tier = RaceTier(self.config, self._store, self._bus, self._metrics,
                                self._tier_failed)
                await tier.recover(recovered)
            except Exception as error:
                log_event("leader_failed", logging.ERROR, node=self.node_id,
                          error=failure(error))
                await self._let_go(lease)
                self.role = NodeRole.SUSPENDED
                return
            tier.start()
            self.tier, self.role = tier, NodeRole.LEADER
            self._bus.serve(self.handle)
            with contextlib.suppress(TimeoutError):  # Redis down: announced once it is back
                await asyncio.wait_for(self._bus.serving(), self._ttl)
        log_event("leader", node=self.node_id, epoch=lease.epoch, races=len(tier.hosts))
        self._bus.announce_leader()

    # ------------------------------------------------------------- failures

    def _tier_failed(self, error: Exception) -> None:
        """A write of the race tier failed (the outbox sends nothing more of it)."""
        if isinstance(error, LeaseLost):
            self._loop.create_task(self._step_down(error))
        else:
            self._loop.create_task(self._suspend(error))

    async def _suspend(self, error: Exception) -> None:
        """The store cannot be written: drop the race tier (its memory may be ahead of
        the store) and refuse requests until the store is back."""
        async with self._changing:
            if self.role is not NodeRole.LEADER:
                return
            log_event("leader_suspended", logging.ERROR, node=self.node_id, error=str(error))
            self.role = NodeRole.SUSPENDED
            held = self._held
            await self._drop_tier()
            for command in held:
                self._bus.publish(undelivered(command))

    async def _step_down(self, lost: LeaseLost | None) -> None:
        """Another node leads now: stop serving, drop the race tier."""
        async with self._changing:
            if self.role is NodeRole.FOLLOWER:
                return
            log_event("leader_stepped_down", logging.WARNING, node=self.node_id,
                      reason=str(lost) if lost is not None else "another node leads")
            self.role = NodeRole.FOLLOWER
            self._bus.serve(None)
            held = self._held  # never applied here: the new leader takes them
            await self._drop_tier()
            for command in held:
                self._bus.send(command)
            if self._lease is not None:
                await self._let_go(self._lease)
            self._lease = None

    async def _drop_tier(self) -> None:
        tier, self.tier = self.tier, None
        self._held = []
        if tier is not None:
            tier.stop()
            await tier.close_searches()

    async def _let_go(self, lease: Lease) -> None:
        """Fence nothing more with ``lease`` (lost, or about to be taken): released, so
        that the store forgets it at once (and the database too, if it is still ours)."""
        with contextlib.suppress(StoreError):
            await self._store.release_lease(lease)
