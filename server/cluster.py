"""A node of a cluster: the races it runs, the leases that say so, and failover.

Every node of a cluster (``foursquare serve --cluster redis://... --db postgresql://...``)
runs a socket tier and a race tier, and takes any connection. Each race is run by exactly
one node, the holder of the race's **lease** (a row of the store's ``leases`` table, held
for ``lease_ttl`` seconds and renewed :data:`RENEWALS_PER_LEASE` times in that time), and
every write of the race carries that lease's epoch (the store's fence).
:class:`ClusterNode` runs this:

- **Where races run.** A private race, and a tournament, runs on the node where it was
  asked for. The **lobby** (quick races and public races, the list of
  races) runs on the node that holds the lease of :data:`LOBBY_LEASE`, the *leader*: a
  quick race fills from players on every node. A node makes a race under a lease it took
  beforehand (:data:`RESERVED_RACE_IDS` race ids are leased in advance, so opening a race
  never waits for the store); a tournament's code is leased before it is made, and its
  races are opened under its lease. The bus carries each command to the holder of its
  race's or tournament's lease (a tournament's race not placed: its tournament's,
  :meth:`ClusterNode.owners`; :mod:`server.redis_bus`).
- **Placing races.** The leader hands each race its lobby opened that fills from every
  node (quick races, public races, daily rooms), as soon as it starts, to the node with
  the fewest unfinished races (the lobby's choice, from the load map the leader reads
  from the ``leases`` table every turn, :meth:`~PostgresStore.node_loads`): it holds the
  race's commands, stops the race with everything journaled committed, lets its lease
  go, and tells the chosen node (:class:`~server.bus.TakeRace`), which takes the lease
  and rebuilds the race from the store as in a takeover; the held commands follow the
  lease. A chosen node that is gone or slow takes nothing: the race's lease has lapsed,
  so whichever node takes lapsed races over first (see *Taking over*, the leader too)
  runs it; the lease admits one owner whoever it is.
- **Placing tournament rounds.** A tournament's node hands the races of each round it
  opens (seated, counting down), which share a deal and so always run together, to the
  node with the fewest unfinished races, the same way: it stops them with everything
  committed and gives them leases of their own held by the chosen node, in one
  statement fenced by the tournament's lease (:meth:`~PostgresStore.place_races`), then
  tells that node, which takes them all in one statement. The round's node journals
  their results as any race's; the tournament's node (or whichever node takes the
  tournament over) reads them from the store at each of its looks for lapsed leases and
  counts them. A round's leases are made, renewed, released and taken together, so a
  round is never split between nodes.
- **Renewal.** Every ``lease_ttl / RENEWALS_PER_LEASE`` a node renews all its leases in
  one statement. It handles a command only while its leases are surely still its own by
  its own clock (``lease_ttl`` from the moment it asked for the last renewal, less a
  tenth); past that it holds commands until a renewal answers. A lease found taken drops
  its race alone, or its tournament with the tournament's races (held commands for them
  go on to their new owner); the lobby's found taken makes the node lead no more.
- **Taking over.** A node looks for unfinished races and tournaments whose lease has
  lapsed (their node died, stopped, or let them go) when the first lease another node
  holds expires, as read at its last look, or a renewal period after that look if
  sooner; it acquires all it finds in one statement (:data:`TAKEN_AT_ONCE` at most, the
  rest right after), which decides the winner of each. It reads them from the store,
  rebuilds them as a restarted server does (every racer still racing gets a fresh
  reconnect grace), and tells every node to send their racers, spectators and entrants
  again (a move that was in flight on the old owner, and never answered, is sent again by
  the client on seeing its card). Renewals and takeovers run as two tasks, so a renewal
  never waits for a takeover's reads.
- **No split brain.** Whatever a node still writes after another took a lease over (a
  race's clock, a command held while it was stopped) carries the old epoch and is
  refused whole by the store: nothing of it is stored, so nothing of it is acknowledged.
  The race whose write was refused is dropped (with its tournament, if it has one); a
  race whose write failed otherwise is dropped too, and its lease let go for the store's
  copy to be taken up again.
- **The store down.** A write or renewal that fails with
  :class:`~server.store.StoreUnavailable` *suspends* the node: its race tier is dropped
  (its memory may be ahead of the store), and every request is refused at once with
  ``unavailable`` until the store is back. Then the node starts afresh and takes races
  over like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Collection, Container, Coroutine, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, TypeVar

from protocol import CreateRace, DailyRace, ErrorCode, QuickRace
from server.bus import Command, Request, TakeRace, tournament_of_race
from server.config import ServerConfig
from server.journal_file import JournalRefused
from server.lobby import least_loaded
from server.logs import failure, log_event
from server.metrics import Metrics
from server.postgres import PostgresStore
from server.race_tier import Ownership, RaceTier, Refused
from server.redis_bus import LOBBY_LEASE, RedisBus, placement, undelivered
from server.store import Lease, LeaseHeld, LeaseLost, StoreError, StoreUnavailable

#: The share of ``lease_ttl`` a node trusts its leases for, counted from when it asked for
#: the last renewal: a lease's expiry is counted on the database's clock from a moment
#: after that, so this leaves room for clocks that do not tick quite alike.
TRUSTED_SHARE = 0.9

T = TypeVar("T")

#: Race ids a node holds the lease of before it needs them (a new race takes one at once;
#: a quarter used, as many are leased again in one statement).
RESERVED_RACE_IDS = 64

#: Races and tournaments a node acquires in one statement and rebuilds together at most
#: (the rest right after, in the same turn): it bounds one read of the store.
TAKEN_AT_ONCE = 1000

#: Renewals of a lease in one lease's time: a node renews all its leases every
#: ``lease_ttl / RENEWALS_PER_LEASE`` seconds, and so survives a pause (of its process, or
#: of the database) of up to about ``lease_ttl * (1 - 1 / RENEWALS_PER_LEASE)`` without
#: losing its races. A lease lapses ``lease_ttl`` after its last renewal, so it lapses
#: between ``lease_ttl * (1 - 1 / RENEWALS_PER_LEASE)`` and ``lease_ttl`` after its node
#: dies: the renewals' cadence changes the best case, never the worst.
RENEWALS_PER_LEASE = 4


def new_node_id() -> str:
    """A node id for a node started now: its host, its process id and a random part, so
    that a node restarted on the same host is never taken for the one before it (whose
    leases must lapse, or be taken over, like anyone else's)."""
    return f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


def _may_open_a_race(command: Command) -> bool:
    """Whether ``command`` may make a race (which takes a race id leased ahead)."""
    return isinstance(command, Request) and isinstance(
        command.message, QuickRace | CreateRace | DailyRace
    )


def _first_races(races: list[str], most: int) -> tuple[list[str], list[str]]:
    """The first ``most`` of ``races`` and the rest, but with every race of a tournament
    in the part of its first one (a placed round's races are rebuilt together, in one
    deal, or one of them could finish before the others are in it).

    >>> _first_races(["A", "T-R1-0", "B", "T-R1-1", "C"], 2)
    (['A', 'T-R1-0', 'T-R1-1'], ['B', 'C'])
    """
    first: list[str] = []
    taken: set[str] = set()
    for race_id in races:
        tournament = tournament_of_race(race_id)
        if len(first) < most or (tournament is not None and tournament in taken):
            first.append(race_id)
            if tournament is not None:
                taken.add(tournament)
    chosen = set(first)
    return first, [race_id for race_id in races if race_id not in chosen]


class Look(Enum):
    """Why a node looked for lapsed leases when it did (said in its takeovers' log)."""

    START = "start"
    """Its first look, as it starts."""
    AT_EXPIRY = "at_expiry"
    """At the expiry of a lease, read at its last look, that another node held."""
    PERIODIC = "periodic"
    """A renewal period after its last look (no lease of another's expired sooner)."""
    HANDED = "handed"
    """Not a look: the leader handed it a race it placed here (:class:`~server.bus.TakeRace`)."""


@dataclass(frozen=True, slots=True)
class Taking:
    """How a node came to take races over, for its ``races_taken_over`` log line."""

    looked: Look
    lapsed_ms: int | None
    """How long after the last of the leases lapsed it saw them lapsed (the database's
    clock against this node's: alike on one machine)."""
    acquire_ms: int
    """How long acquiring them took."""


class NodeRole(Enum):
    """What a node does in its cluster now."""

    FOLLOWER = "follower"
    """Runs its races; campaigns for the lobby's lease."""
    LEADER = "leader"
    """Runs the lobby and the tournaments too."""
    SUSPENDED = "suspended"
    """The store became unreachable: refuses requests until it is back."""


class ClusterNode:
    """The race tier's side of one node of a cluster (start it with :meth:`start`)."""

    def __init__(
        self,
        config: ServerConfig,
        store: PostgresStore,
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
        """The race tier (none while suspended)."""
        self._leases: dict[str, Lease] = {}
        """The leases this node holds: its races', race ids kept for new races, the
        lobby's."""
        self._reserved: list[str] = []
        """Race ids leased for races not made yet."""
        self._covered: dict[str, str] = {}
        """The races of tournaments, each written under its tournament's lease."""
        self._taking: set[str] = set()
        """Resources being taken over: their commands wait until they are rebuilt."""
        self._trusted_until = float("-inf")
        """Loop time until which the leases are surely this node's."""
        self._held: list[Command] = []
        """Commands that came while the leases were not surely this node's."""
        self._short: list[Command] = []
        """Requests that may open a race, come while no race id was leased ahead."""
        self._renewing: asyncio.Task[None] | None = None
        self._reserving: asyncio.Task[None] | None = None
        self._campaign: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._changing = asyncio.Lock()
        """Held while the node takes something over or starts afresh."""
        self._stopping = False
        self._live: set[str] = set()
        """The nodes holding a lease not lapsed, at the last look."""

    @property
    def _ttl(self) -> float:
        return self.config.lease_ttl

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Run a race tier, and begin leasing, taking over and campaigning."""
        self.tier = self._new_tier()
        self._bus.serve(self.handle, self.owns, self.owners)
        self._campaign = self._loop.create_task(self._run(), name="cluster-campaign")

    async def stop(self) -> None:
        """Stop cleanly: every race's journaled state sent, then every lease released so
        that other nodes take the races over at once."""
        self._stopping = True
        if self._campaign is not None:
            self._campaign.cancel()
            await asyncio.gather(self._campaign, return_exceptions=True)
        tier = self.tier
        self._bus.serve(None)
        if tier is not None:
            await tier.drain()
            tier.stop()
        if self.role is not NodeRole.SUSPENDED:
            await self._let_go_all()
        self.tier = None

    def _new_tier(self) -> RaceTier:
        tier = RaceTier(
            self.config, self._store, self._bus, self._metrics, self._tier_failed,
            Ownership(
                new_race_id=self._reserved_race_id,
                cover=self._cover,
                lease=self._lease_tournament,
                gone=self._gone,
                race_failed=self._race_failed,
                place=self._place,
                seats=True,
                place_round=self._place_round,
                count_tournaments=self._store.count_tournaments,
            ),
        )
        tier.start()
        tier.tournaments.start_clock()  # tournaments come as they are made or taken over
        return tier

    # ------------------------------------------------------------- commands

    def owns(self, resource: str) -> bool:
        """Whether this node runs ``resource`` (a race, a tournament, or the lobby), or
        is taking it over (its commands then wait here)."""
        return resource in self._leases or resource in self._covered or resource in self._taking

    async def owners(self, resources: Collection[str]) -> dict[str, str]:
        """The node holding each of ``resources``' leases, as the store says (``""``:
        none does nor will: no such race, or one over, answered where it was asked)."""
        # A tournament's race has no lease of its own until its round is placed: until
        # then its tournament's lease holder runs it.
        tournaments = {resource: tournament for resource in resources
                       if (tournament := tournament_of_race(resource)) is not None}
        leases = await self._store.read_leases({*resources, *tournaments.values()})
        found = {}
        for resource in resources:
            lease = leases.get(resource)
            if lease is None and resource in tournaments:
                lease = leases.get(tournaments[resource])
            found[resource] = "" if lease is None or lease.expires_at is None else lease.owner
        return found

    def handle(self, command: Command) -> None:
        """A command for this node's race tier (from its own socket tier, or from
        another node through the bus)."""
        tier = self.tier
        if isinstance(command, TakeRace):
            self._background(self._take_placed(command.race_ids))
            return
        if self.role is NodeRole.SUSPENDED or tier is None:
            self._bus.publish(undelivered(command))  # nothing can be stored now
            return
        place = placement(command)
        if isinstance(place, str) and place in self._taking:
            self._held.append(command)  # handled once the race is rebuilt
            return
        if not self._reserved and _may_open_a_race(command):
            self._short.append(command)  # handled once race ids are leased again
            self._reserve_soon()
            return
        if self._loop.time() < self._trusted_until:
            tier.handle(command)
            return
        # Not surely ours any more (the node was stopped, or renewals went unanswered):
        # hold it until a renewal says whose the leases are.
        self._held.append(command)
        self._renew_now()

    def _put_through_held(self) -> None:
        """Hand the held commands on: here if this node still runs their place, else to
        the place's owner now."""
        held, self._held = self._held, []
        for command in held:
            place = placement(command)
            if isinstance(place, str) and place in self._taking:
                self._held.append(command)
            elif isinstance(place, str) and not self.owns(place):
                self._bus.forget_owner(place)
                self._bus.send(command)
            else:
                self.handle(command)

    # ------------------------------------------------------------- leases

    def _renew_now(self) -> None:
        if self._renewing is None or self._renewing.done():
            self._renewing = self._loop.create_task(self._renew())

    async def _renew(self) -> None:
        """Renew every lease in one statement; drop what was taken over meanwhile."""
        if self.role is NodeRole.SUSPENDED:
            return
        leases = list(self._leases.values())
        asked = self._loop.time()
        try:
            renewed = await self._store.renew_leases(leases, self._ttl)
        except StoreError as error:
            if self._loop.time() >= self._trusted_until:
                await self._suspend(error)
            return
        lapsed = asked >= self._trusted_until + self._ttl * (1 - TRUSTED_SHARE)
        self._trusted_until = asked + self._ttl * TRUSTED_SHARE
        if lapsed and self.tier is not None:
            # The other nodes may have seen this one gone meanwhile (its leases lapsed)
            # and forgotten who is connected here: they hear it again.
            self._bus.attach_all_again()
        kept = {lease.resource_id: lease for lease in renewed}
        lost = []
        for lease in leases:
            if self._leases.get(lease.resource_id) is not lease:
                continue  # let go meanwhile
            if lease.resource_id in kept:
                self._leases[lease.resource_id] = kept[lease.resource_id]
            else:
                lost.append(lease.resource_id)
        if lost:
            await self._lose(lost, "the lease was taken over")
        self._put_through_held()

    async def _lose(self, resources: Collection[str], reason: str) -> None:
        """These leases are no longer this node's: drop their races and tournaments (the
        lobby's: lead no more)."""
        if LOBBY_LEASE in resources and self.role is NodeRole.LEADER:
            # Another node runs the lobby now; this one keeps its races (each has its own
            # lease), and takes no new quick race.
            self.role = NodeRole.FOLLOWER
            log_event("leader_stepped_down", logging.WARNING, node=self.node_id, reason=reason)
            if self.tier is not None:
                self.tier.nodes_loaded(self.node_id, {})  # places no race any more
        tier = self.tier
        # A race of a lost tournament placed here has a lease of its own: it runs on.
        races = [] if tier is None else tier.drop_tournaments(resources, keep=self._leases)
        for race_id in races:
            self._covered.pop(race_id, None)
        for resource in resources:
            self._leases.pop(resource, None)
            self._bus.forget_owner(resource)
            if resource in self._reserved:
                self._reserved.remove(resource)
        self._store.let_go([*resources, *races])
        if tier is not None:
            tier.drop(resources)
        log_event("races_lost", logging.WARNING, node=self.node_id, races=sorted(resources),
                  reason=reason)

    def _reserved_race_id(self, taken: Container[str]) -> str:
        """The id of a new race: one this node leased beforehand."""
        while self._reserved:
            race_id = self._reserved.pop()
            if race_id not in taken and race_id in self._leases:
                self._reserve_soon()
                return race_id
        self._reserve_soon()
        raise Refused(
            ErrorCode.UNAVAILABLE,
            "this node of the cluster cannot lease a new race right now: send it again shortly",
        )

    def _reserve_soon(self) -> None:
        if len(self._reserved) < RESERVED_RACE_IDS * 3 // 4 and (
            self._reserving is None or self._reserving.done()
        ):
            self._reserving = self._loop.create_task(self._reserve())

    async def _reserve(self) -> None:
        """Lease race ids for the races this node will make (fresh ids, never leased),
        as many as are missing in one statement."""
        while len(self._reserved) < RESERVED_RACE_IDS and not self._suspended():
            taken = set(self._leases) | (set(self.tier.hosts) if self.tier else set())
            fresh: set[str] = set()
            while len(fresh) < RESERVED_RACE_IDS - len(self._reserved):
                fresh.add(self.config.race_ids(taken | fresh))
            try:
                leases = await self._store.lease_fresh(fresh, self.node_id, self._ttl)
            except StoreError:
                return  # the store is down: the renewal says so
            if self._suspended():  # (let go meanwhile: they lapse unused)
                return
            for lease in leases:
                self._leases[lease.resource_id] = lease
                self._reserved.append(lease.resource_id)
            short, self._short = self._short, []
            for command in short:
                self.handle(command)

    def _suspended(self) -> bool:
        return self.role is NodeRole.SUSPENDED

    def _cover(self, race_id: str, tournament_id: str) -> None:
        """A race of a tournament is written under its tournament's lease."""
        lease = self._leases.get(tournament_id)
        if lease is not None:
            self._store.cover(race_id, lease)
            self._covered[race_id] = tournament_id

    async def _lease_tournament(self, tournament_id: str) -> bool:
        """Take the lease of a new tournament (made on this node)."""
        try:
            lease = await self._store.acquire_lease(tournament_id, self.node_id, self._ttl)
        except StoreError:  # (LeaseHeld: another node has one of that code)
            return False
        if self._suspended():
            return False
        self._leases[tournament_id] = lease
        return True

    def _gone(self, resource: str) -> None:
        """A race or tournament is over and forgotten: its lease is kept for good (nobody
        takes it over), and renewed no more."""
        lease = self._leases.pop(resource, None)
        if self._covered.pop(resource, None) is not None:
            self._store.let_go((resource,))
        if lease is not None:
            self._background(self._retire(lease))

    async def _retire(self, lease: Lease) -> None:
        with contextlib.suppress(StoreError):
            await self._store.renew_lease(lease, None)
        self._store.let_go((lease.resource_id,))

    # ------------------------------------------------------------- campaign

    async def _run(self) -> None:
        """Keep this node's leases, and take others' over, each on its own schedule (a
        renewal never waits for a takeover's reads)."""
        await asyncio.gather(self._keep_leases(), self._take_over_when_lapsed())

    async def _keep_leases(self) -> None:
        while not self._stopping:
            await self._outliving(self._renewal_turn())
            await asyncio.sleep(self._ttl / RENEWALS_PER_LEASE)

    async def _renewal_turn(self) -> None:
        if self.role is NodeRole.SUSPENDED:
            await self._store.available()
            await self._resume()
        await self._renew()
        if self.role is not NodeRole.SUSPENDED:
            self._reserve_soon()

    async def _take_over_when_lapsed(self) -> None:
        """Look for lapsed leases as soon as one can have lapsed: when the first lease of
        another node's that this one may take over expires unrenewed (its node died, or
        stopped), or a renewal period after the last look (a lease let go, or made since,
        lapses without expiring as read)."""
        looked = Look.START
        while not self._stopping:
            next_in = await self._outliving(self._takeover_turn(looked))
            pause, looked = self._ttl / RENEWALS_PER_LEASE, Look.PERIODIC
            if next_in is not None and next_in <= pause:
                pause, looked = next_in, Look.AT_EXPIRY
            await asyncio.sleep(pause)

    async def _takeover_turn(self, looked: Look) -> float | None:
        if self.role is NodeRole.SUSPENDED:
            return None  # the renewals resume it
        if self.role is NodeRole.FOLLOWER:
            await self._try_to_lead()
        await self._read_loads()
        next_in = await self._take_over_lapsed(looked)
        await self._collect_results()
        return next_in

    async def _outliving(self, turn: Coroutine[Any, Any, T]) -> T | None:
        """``turn``'s result; ``None`` if it failed (the campaign outlives any failure)."""
        try:
            return await turn
        except Exception as error:
            log_event("internal_error", logging.ERROR, error=failure(error))
            return None

    async def _try_to_lead(self) -> None:
        asked = self._loop.time()
        try:
            lease = await self._store.acquire_lease(LOBBY_LEASE, self.node_id, self._ttl)
        except (LeaseHeld, StoreError):
            return  # another node leads, or the store is down: next turn
        await self._lead(lease, asked)

    async def _lead(self, lease: Lease, asked: float) -> None:
        """Run the lobby (quick races and public races, the list) from now on."""
        self._leases[LOBBY_LEASE] = lease
        self._trusted_until = min(self._trusted_until, asked + self._ttl * TRUSTED_SHARE)
        self.role = NodeRole.LEADER
        log_event("leader", node=self.node_id, epoch=lease.epoch)
        self._bus.resync([LOBBY_LEASE], ())  # every node reads the lobby's owner again

    async def _take_over_lapsed(self, looked: Look) -> float | None:
        """Acquire the lapsed leases of unfinished races and tournaments, and run them
        here, :data:`TAKEN_AT_ONCE` at a time without a pause; the seconds until the next
        lease another node holds can lapse (``None``: none can, or the store cannot say)."""
        try:
            lapsed = await self._store.lapsed(self.node_id, LOBBY_LEASE)
        except (StoreError, JournalRefused):
            return None
        lapsed_ms = (None if lapsed.lapsed_at is None
                     else round((time.time() - lapsed.lapsed_at) * 1000))
        # (A race handed over here is taken by _take_placed, which marks it as taking.)
        races = [race_id for race_id in lapsed.races
                 if not self.owns(race_id) and race_id not in self._taking]
        tournaments = [code for code in lapsed.tournaments if not self.owns(code)]
        while (races or tournaments) and not self._suspended():
            some_races, races = _first_races(races, TAKEN_AT_ONCE)
            room = TAKEN_AT_ONCE - len(some_races)
            some_tournaments, tournaments = tournaments[:room], tournaments[room:]
            asked = self._loop.time()
            try:
                leases = await self._store.acquire_lapsed(
                    [*some_races, *some_tournaments], self.node_id, self._ttl
                )
            except StoreError:
                break  # the store is down: the renewals say so
            # One handed over here while the statement ran is _take_placed's to bring back.
            leases = [lease for lease in leases if lease.resource_id not in self._taking]
            for lease in leases:
                self._leases[lease.resource_id] = lease
                self._taking.add(lease.resource_id)
            won = {lease.resource_id for lease in leases}  # another node won the others
            await self._bring_back(
                [race_id for race_id in some_races if race_id in won],
                [code for code in some_tournaments if code in won],
                Taking(looked, lapsed_ms, round((self._loop.time() - asked) * 1000)),
            )
        return lapsed.next_in

    async def _bring_back(
        self, race_ids: list[str], tournament_ids: list[str], taking: Taking
    ) -> None:
        """Rebuild the races and tournaments (with their races) whose leases this node
        has just taken, and have their racers, spectators and entrants sent where they
        stand (``taking``: how it took them, for the log line)."""
        if not race_ids and not tournament_ids:
            return
        async with self._changing:
            started = self._loop.time()
            tier = self.tier
            taken = [*race_ids, *tournament_ids]
            of_tournaments: list[tuple[str, str]] = []
            try:
                if tier is None:
                    raise StoreUnavailable("the node is suspended")
                races_of = await self._store.races_of(tournament_ids)
                # A race of theirs placed on a node runs there (under its own lease).
                placed = {race_id for race_id, _, elsewhere in races_of if elsewhere}
                of_tournaments = [(race_id, tournament_id)
                                  for race_id, tournament_id, _ in races_of
                                  if race_id not in placed]
                for race_id, tournament_id in of_tournaments:
                    self._cover(race_id, tournament_id)
                    self._taking.add(race_id)
                recovered = await self._store.read_races(
                    [*race_ids, *(race_id for race_id, _ in of_tournaments)]
                )
                stored = [
                    kept for code in tournament_ids
                    for kept in await self._store.read_tournaments(code, include_finished=False)
                ]
                read = self._loop.time()
                sessions = tier.take_over(recovered)
                sessions.extend(await tier.tournaments.take_over(stored, placed))
            except Exception as error:  # nothing may stay half taken: let them all go
                covered = [race_id for race_id, _ in of_tournaments]
                if tier is not None:
                    tier.drop_tournaments(tournament_ids, keep=self._leases)
                    tier.drop([*race_ids, *covered])
                for race_id in covered:
                    self._covered.pop(race_id, None)
                self._store.let_go(covered)
                self._taking.difference_update([*taken, *covered])
                for resource in taken:
                    lease = self._leases.pop(resource, None)
                    if lease is not None:
                        self._background(self._release(lease))
                log_event("takeover_failed", logging.ERROR, node=self.node_id,
                          error=failure(error))
                return
            kept = {kept.opened.tournament_id for kept in stored}
            for resource in [*taken, *(race_id for race_id, _ in of_tournaments)]:
                self._taking.discard(resource)
                self._bus.forget_owner(resource)
                if resource in race_ids and resource not in tier.hosts:
                    self._gone(resource)  # over, or nobody left in it: kept for good
                elif resource in tournament_ids and resource not in kept:
                    self._gone(resource)  # finished meanwhile
        rebuilt = self._loop.time()
        sessions = list(dict.fromkeys(sessions))
        self._bus.resync([*taken, *(race_id for race_id, _ in of_tournaments)], sessions)
        self._put_through_held()
        log_event("races_taken_over", node=self.node_id, races=race_ids,
                  tournaments=tournament_ids, sessions=len(sessions),
                  looked=taking.looked.value, lapsed_ms=taking.lapsed_ms,
                  acquire_ms=taking.acquire_ms,
                  read_ms=round((read - started) * 1000),
                  rebuild_ms=round((rebuilt - read) * 1000),
                  resync_ms=round((self._loop.time() - rebuilt) * 1000))

    # ------------------------------------------------------------- placing

    async def _read_loads(self) -> None:
        """Read which nodes live (hold a lease not lapsed) and the races each runs: the
        leader's lobby places new races by it, and every race tier forgets the presence
        of the sessions connected to a node seen live before and not any more (it died,
        or was cut from the store, so its leases lapsed)."""
        try:
            loads = await self._store.node_loads()
        except (StoreError, JournalRefused):
            return  # placed by the last map meanwhile; nobody's presence changes
        gone = self._live - set(loads) - {self.node_id}
        self._live = set(loads)
        if self.tier is None:
            return
        if gone:
            log_event("nodes_gone", node=self.node_id, gone=sorted(gone))
            self.tier.nodes_gone(gone)
        if self.role is NodeRole.LEADER:
            self.tier.nodes_loaded(self.node_id, loads)

    def _place(self, race_id: str, node: str) -> None:
        """The lobby placed a started race on ``node``: from now on its commands wait
        here until it is handed over, then follow its lease."""
        if race_id in self._leases and race_id not in self._taking:
            self._taking.add(race_id)
            self._background(self._hand_over(race_id, node))

    async def _hand_over(self, race_id: str, node: str) -> None:
        """Stop race ``race_id`` with all of it stored, let its lease go, and tell
        ``node`` to take it. Whoever takes the lapsed lease runs it if ``node`` does not."""
        tier = self.tier
        handed = False
        try:
            try:
                async with asyncio.timeout(self._ttl):
                    handed = tier is not None and await tier.hand_over(race_id)
            except TimeoutError:
                # Its last writes did not answer in time: it is dropped and its lease let
                # go, as after a failed write, for its stored state to be taken up.
                lease = self._leases.get(race_id)
                await self._lose([race_id], "its hand-over did not finish in time")
                if lease is not None:
                    await self._release(lease)
                return
            lease = self._leases.get(race_id)
            if handed and lease is not None and self.tier is tier:
                await self._release(lease)
                self._bus.send_to(node, TakeRace(race_id))
                log_event("race_placed", race=race_id, node=node)
        finally:
            self._taking.discard(race_id)
            self._bus.forget_owner(race_id)
            self._put_through_held()

    async def _take_placed(self, race_ids: tuple[str, ...]) -> None:
        """Take the leases of races handed over to this node (one, or a tournament
        round's) and run them, if nobody has taken them yet. A round's are taken in one
        statement: all of them, or none if another node was quicker."""
        if any(self.owns(race_id) for race_id in race_ids) or self._suspended() or (
            self.tier is None
        ):
            return
        self._taking.update(race_ids)  # (the takeover of lapsed races leaves them to this)
        asked = self._loop.time()
        try:
            leases = await self._store.acquire_lapsed(race_ids, self.node_id, self._ttl)
        except StoreError:  # the store is down
            leases = []
        if self._suspended():
            return  # (let go on suspending: they lapse for another node)
        for lease in leases:
            self._leases[lease.resource_id] = lease
        won = {lease.resource_id for lease in leases}  # (another node was quicker: none)
        self._taking.difference_update(set(race_ids) - won)
        acquire_ms = round((self._loop.time() - asked) * 1000)
        if won:
            await self._bring_back([race_id for race_id in race_ids if race_id in won], [],
                                   Taking(Look.HANDED, None, acquire_ms))
        else:
            self._put_through_held()

    def _place_round(self, tournament_id: str, race_ids: Sequence[str]) -> None:
        """A tournament of this node opened these races (seated, counting down), which
        share a deal: hand them together to the node running the fewest races."""
        if tournament_id in self._leases and race_ids and all(
            race_id in self._covered and race_id not in self._taking for race_id in race_ids
        ):
            self._background(self._hand_round_over(tournament_id, tuple(race_ids)))

    async def _hand_round_over(self, tournament_id: str, race_ids: tuple[str, ...]) -> None:
        """Stop a tournament round's races with all of them stored, give them leases of
        their own held by the chosen node (fenced by the tournament's lease), and tell
        that node to take them (:class:`~server.bus.TakeRace`). A round chosen to stay
        here runs here, as in one process. If the hand-over fails half way, the
        tournament is let go with its races, for its stored state to be taken up."""
        try:
            loads = await self._store.node_loads()
        except (StoreError, JournalRefused):
            return  # it runs here
        tier = self.tier
        tournament = self._leases.get(tournament_id)
        if not loads or tier is None or tournament is None or self._suspended():
            return
        node = least_loaded(loads, here=self.node_id)
        if node == self.node_id or not all(
            race_id in self._covered and race_id not in self._taking for race_id in race_ids
        ):
            return
        self._taking.update(race_ids)  # their commands wait here meanwhile
        placed = False
        try:
            async with asyncio.timeout(self._ttl):
                if not await tier.hand_over(*race_ids):
                    return  # one is gone already (a round of one race that ended): here
                # Renewals replace the held lease with a new object: the same epoch
                # means still held (a takeover bumps it), so compare epochs.
                now_held = self._leases.get(tournament_id)
                if self.tier is not tier or now_held is None or now_held.epoch != tournament.epoch:
                    raise LeaseLost((tournament_id,))  # lost meanwhile, and dropped
                for race_id in race_ids:
                    self._covered.pop(race_id, None)
                self._store.let_go(race_ids)
                await self._store.place_races(race_ids, tournament, node, self._ttl)
                placed = True
        except StoreUnavailable as error:
            await self._suspend(error)
            return
        except (TimeoutError, StoreError) as error:
            reason = f"its round could not be placed ({error or 'no answer in time'})"
            await self._lose([tournament_id], reason)
            if not isinstance(error, LeaseLost):
                await self._release(tournament)
            return
        finally:
            if placed:  # (told ahead of the held commands, which follow the leases there)
                self._bus.send_to(node, TakeRace(race_ids[0], race_ids[1:]))
                log_event("round_placed", tournament=tournament_id, races=list(race_ids),
                          node=node)
            self._taking.difference_update(race_ids)
            for race_id in race_ids:
                self._bus.forget_owner(race_id)
            self._put_through_held()

    async def _collect_results(self) -> None:
        """Count in this node's tournaments the results of their races placed on other
        nodes, as stored (the store is the truth: a result committed there is counted
        once here, and by whichever node takes the tournament over if this one dies)."""
        tier = self.tier
        placed = [] if tier is None else tier.tournaments.placed_races()
        if not placed:
            return
        try:
            results = await self._store.read_results(placed)
        except (StoreError, JournalRefused):
            return  # read again next turn
        if results and self.tier is tier and tier is not None:
            tier.tournaments.results_stored(results.values())

    # ------------------------------------------------------------- failures

    def _race_failed(self, race_id: str, error: Exception) -> None:
        """A write of race ``race_id`` failed (its outbox sends nothing more)."""
        if isinstance(error, StoreUnavailable):
            self._background(self._suspend(error))
            return
        owner = self._covered.get(race_id, race_id)  # a tournament goes with its races
        lost = set(error.resources) if isinstance(error, LeaseLost) else set()
        round_ = self._round_of(race_id) if owner == race_id else []
        if len(round_) > 1:
            # A placed round's races share a deal: they go together, and their leases
            # (renewed together) lapse together, to be taken over together by one node.
            self._background(self._lose(lost | set(round_), str(error)))
            return
        # Its lease, if still this node's, is let go: its stored state is taken up again.
        lease = self._leases.get(owner)
        self._background(self._lose(lost | {owner}, str(error)))
        if lease is not None:
            self._background(self._release(lease))

    def _round_of(self, race_id: str) -> list[str]:
        """The races this node runs under leases of their own that share race
        ``race_id``'s deal (a tournament round placed here), ``race_id`` among them."""
        tier = self.tier
        if tier is None or tournament_of_race(race_id) is None:
            return [race_id]
        return [other for other in tier.dealt_with(race_id)
                if other in self._leases and other not in self._covered]

    def _tier_failed(self, error: Exception) -> None:
        """A write of the lobby or a tournament failed."""
        if isinstance(error, StoreUnavailable):
            self._background(self._suspend(error))
        elif isinstance(error, LeaseLost):
            self._background(self._lose(error.resources, str(error)))
        else:
            self._background(self._start_afresh(str(error)))

    async def _suspend(self, error: Exception) -> None:
        """The store cannot be written: drop the race tier (its memory may be ahead of
        the store) and refuse requests until the store is back."""
        async with self._changing:
            if self.role is NodeRole.SUSPENDED or self._stopping:
                return
            log_event("node_suspended", logging.ERROR, node=self.node_id, error=str(error))
            self.role = NodeRole.SUSPENDED
            held, self._held = [*self._held, *self._short], []
            self._short = []
            self._drop_tier()
            self._store.let_go(list(self._leases) + list(self._covered))
            self._leases, self._covered, self._reserved = {}, {}, []
            self._taking.clear()
            for command in held:
                self._bus.publish(undelivered(command))

    async def _resume(self) -> None:
        """The store is back: a new race tier, with no race (they are taken over as any
        node takes them)."""
        async with self._changing:
            if self.role is not NodeRole.SUSPENDED or self._stopping:
                return
            self.tier = self._new_tier()
            self.role = NodeRole.FOLLOWER
            log_event("node_resumed", node=self.node_id)
            self._bus.attach_all_again()  # (the other nodes saw this one gone)

    async def _start_afresh(self, reason: str) -> None:
        """The lobby's lease (or a tournament's write) was lost: drop every race, let
        every lease go, and run a new race tier with none."""
        async with self._changing:
            if self.role is NodeRole.SUSPENDED or self._stopping:
                return
            log_event("leader_stepped_down" if self.role is NodeRole.LEADER
                      else "node_restarted", logging.WARNING, node=self.node_id, reason=reason)
            self.role = NodeRole.FOLLOWER
            self._drop_tier()
            await self._let_go_all()
            self.tier = self._new_tier()
            self._put_through_held()

    def _drop_tier(self) -> None:
        tier, self.tier = self.tier, None
        if tier is not None:
            tier.stop()
            self._background(tier.close_searches())

    async def _let_go_all(self) -> None:
        """Release every lease (their races are taken over at once by other nodes), in
        one statement: a placed round's races lapse together, to be taken together."""
        leases = list(self._leases.values())
        self._store.let_go(list(self._leases) + list(self._covered))
        self._leases, self._covered, self._reserved = {}, {}, []
        self._taking.clear()
        with contextlib.suppress(StoreError):
            await self._store.release_leases(leases)

    async def _release(self, lease: Lease) -> None:
        """Fence nothing more with ``lease``, and let it expire now if it is still ours."""
        self._leases.pop(lease.resource_id, None)
        with contextlib.suppress(StoreError):
            await self._store.release_lease(lease)

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as a task of its own (held, so it is not lost)."""
        task = self._loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
