"""Load test: the race server against a bare websockets echo server (the floor), same load.

    make bench-load
    python -m bench.load --racers 1000 --race-size 4 --think 1.0 --spectators 20 \\
        --duration 30 --loop uvloop --priority -10 --write

For each target (``server``: ``foursquare serve``; ``echo``: :mod:`bench.echo_server`)
the parent process starts the target as its own process, pinned to CPU 0 where
``taskset`` exists, then a load generator (this module with ``--generate``) pinned to
CPU 1. The generator connects every racer and spectator and says ``hello``; the parent
then reads the target's idle memory; then the generator races for ``--duration``
seconds while the parent samples the target's CPU time and memory. ``--loop`` picks the
event loop of all three processes alike (asyncio's default, or uvloop); ``--priority``
runs the target and the generator at a nice value, each in a session of its own so that
the value holds against other sessions' work too (see :func:`prioritise`).

Racers are real websocket clients in races of ``--race-size``: they create or join a
private race, place a legal move (a greedy choice that keeps few cards face down) after
a think time drawn uniformly from 0.5x to 1.5x ``--think``, and start a new race when
theirs finishes. Spectators watch those races. Against the echo server the same
connections send the same ``place`` frames at the same pace, each move chosen the same way
on a game the racer plays on its own (:class:`LocalGame`); each frame comes back to its
sender and is broadcast to the rest of its group, as progress is.

Measured: move round trip (``place`` sent -> next ``card``, or ``placed`` when the move
ends the game; against echo: -> the echo), moves per second, errors, the target's CPU
(percent of one core) and memory per connection when idle, and the delay from a move to
the progress update that shows it, at the other racers and at spectators (the server
coalesces progress to ~10 updates a second per race, so up to ~100 ms of that delay is
by design; the echo server forwards every frame at once).

The generator must not be the bottleneck, so each client reads only what it needs, and
the same rule holds against both targets. A frame's ``type`` is read from its bytes
(:func:`frame_type`) before anything is decoded. Racers decode their own ``card`` and
``placed`` (and against echo, recognise their own frame coming back by its bytes); only
a sample of at most :data:`PROGRESS_SAMPLE` racers decodes the other racers' progress to
time it, while the rest drop those frames undecoded; likewise at most
:data:`SPECTATOR_SAMPLE` spectators a node (every one in a run of 100 or fewer) decode
progress, and the rest only count it (:class:`Watch`, called from the connection's
``data_received``). ``finished`` (which carries every racer's moves) is only matched
against the race id. So in a race of 1,000 the progress delay comes from 100 racers and
up to 100 spectators a node, not from 1,000 racers decoding frames of hundreds of lines
each.

Spectators (``--targets cluster --nodes 2 --racers 1000 --race-size 1000
--spectator-sweep 0,1000,5000,10000 --spectators-on others``): one race of 1,000 racers
made on node 0 (its owner), watched by ``S`` spectators on every node in turn
(``spread``) or on every node but the owner (``others``), one run per ``S``. Each run
reports the spectators' progress delay (by node), the progress updates each spectator
got a second, each node's CPU and the generator's over the measured window only (the
10,000 spectators' snapshots when they start watching fall in the warm-up), each node's
memory per idle connection, and how many messages the owner published on the race's
Redis channel a second, counted by a subscriber of the parent's own
(:func:`spectator_lines`).

Failover (``--targets cluster --nodes 2 --kill-owner-after S``): node 0, which leads and
runs the races its clients made, is SIGKILLed ``S`` seconds after the go; every client
resumes on the next node with its token (:class:`ResumingClient`), and the run reports,
for each racer of node 0's races, the time from the kill to its next acknowledged move,
and how many never moved again (:func:`failover_lines`).

Only loopback addresses are used; every loop is bounded by ``--duration`` and timeouts.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import functools
import gc
import json
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import msgpack

from bench.wire import Closed, Frames, HandshakeFailed, WireClient, connect
from cli.server_commands import LOOPS, event_loop_factory
from client.bot_runner import RATE_LIMIT_PAUSE
from client.connection import DEFAULT_BACKOFF, OPEN_TIMEOUT
from engine.board import Board
from engine.cards import DECK, deal_ids
from protocol import (
    ClaimName,
    CreateRace,
    Hello,
    JoinRace,
    Place,
    QuickRace,
    RaceOptions,
    Role,
    Spectate,
    encode,
)
from protocol.players import encode_players

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
#: What a run can measure: the server with its journal on disk (as deployed), on a RAM
#: disk (the same code without the disk's fsync), or off; the server with its store in
#: PostgreSQL (a database of the run's own, made from ``--postgres``), its commits flushed
#: to the database's disk (PostgreSQL's default) or not (``synchronous_commit=off``: like
#: the journal's ``normal``, they survive the game server's death, not the database's);
#: and the echo floor.
#: ``cluster`` is ``--nodes`` nodes of a cluster (``serve --cluster``: the Redis bus,
#: the store in PostgreSQL, flushed), the clients spread over them in turn.
TARGETS = ("server", "server-ram", "server-no-journal", "server-postgresql",
           "server-postgresql-async", "cluster", "echo")
JOURNALS = {"server": "disk", "server-ram": "ram", "server-no-journal": "off",
            "server-postgresql": "postgresql", "server-postgresql-async": "postgresql-async",
            "cluster": "postgresql"}
#: The Redis a ``cluster`` run's nodes meet on (each run on channels of its own).
REDIS_URL = "redis://127.0.0.1:6379/0"
#: The PostgreSQL whose server a ``server-postgresql`` run makes its database on.
POSTGRES_URL = "postgresql://127.0.0.1:5432/test"
RAM_DIR = Path("/dev/shm")
#: How many racers measure the progress delay (decode every progress frame they get);
#: the others recognise such frames from their bytes and drop them (see :func:`frame_type`).
PROGRESS_SAMPLE = 100
#: Linux's prctl option that sends a signal to a process when its parent dies.
PR_SET_PDEATHSIG = 1
#: Seconds a racer waits before sending a place again that the server refused for rate.
RATE_BACKOFF = 0.1
#: The refusals of a ``place`` after which a racer sends it again, and how many seconds
#: after: for rate, and when races cannot be served for a moment (``unavailable``: the
#: store cannot be reached, the race is being taken over), after the bots' pause.
RESEND_AFTER = {"rate_limited": RATE_BACKOFF, "unavailable": RATE_LIMIT_PAUSE}
#: The msgpack encoding of the ``type`` key (a 4-byte fixstr); its value follows it.
TYPE_KEY = b"\xa4type"
#: What a racer reads in full once it is in a race; anything else is about other racers.
#: (``finished`` is only matched against the race: it carries every racer's moves.)
RACER_READS = frozenset({b"card", b"placed", b"error"})
#: How many spectators on each node time the progress delay (decode every progress frame
#: they get); the others only count progress frames, read by type from their bytes
#: (:class:`Watch`).
SPECTATOR_SAMPLE = 100


@dataclass(frozen=True, slots=True)
class Settings:
    """One load: how many, how fast, how long."""

    racers: int = 1000
    race_size: int = 4
    think: float = 1.0
    spectators: int = 20
    duration: float = 30.0
    warmup: float = 5.0
    """Seconds at the start of the run whose samples are dropped (races forming)."""
    connect_timeout: float = 60.0
    seed: int = 1
    db_dir: str | None = None
    """Where the server's journal goes (default: the system's temporary directory)."""
    loop: str = "asyncio"
    """The event loop of the target, the echo floor and the generator alike (``uvloop``)."""
    priority: int | None = None
    """Nice value for the target and the generator (``None``: leave them as they are)."""
    scrape: float = 0.0
    """Seconds between two ``GET /metrics`` of a server target during the run, as a
    Prometheus would scrape it (0: none; the echo floor has no metrics)."""
    postgres: str = POSTGRES_URL
    """For ``server-postgresql``: the database each run creates its own from (and drops)."""
    nodes: int = 1
    """For ``cluster``: how many node processes; racer *i* (and spectator *i*) connects to
    node ``i % nodes``, and the first node started leads."""
    redis: str = REDIS_URL
    """For ``cluster``: the Redis its nodes meet on."""
    rated: bool = False
    """Against a server: every racer claims its name after ``hello`` and the races are
    rated (``rated: true``), so each finish rates its players (ratings on)."""
    lease_ttl: float | None = None
    """For ``cluster``: the nodes' ``--lease-ttl`` (``None``: the server's default)."""
    quick: bool = False
    """Against a server: racers ask for quick races (``quick_race``), which the server's
    lobby forms (up to its 8 racers, counting down :data:`QUICK_COUNTDOWN`; in a cluster,
    on the leader, which places each started race on a node), rather than private races
    of ``race_size`` made and joined by code."""
    kill_owner_after: float = 0.0
    """For ``cluster`` (two nodes or more): seconds after the go when node 0 is SIGKILLed
    (0: never). Node 0 leads and runs every race whose creator is connected to it; every
    client then resumes on the next node when its connection drops (see
    :class:`ResumingClient`), and the run reports how long each racer of node 0's races
    took from the kill to its next acknowledged move (:meth:`Generator.failover`)."""
    spectator_rate: float = 0.0
    """Spectators who start watching a second, once the first race runs (spectator *i*
    after ``i / spectator_rate`` seconds; 0: all at once)."""
    spectators_on: str = "spread"
    """For ``cluster``: spectator *i* connects to node ``i % nodes`` (``spread``), or to
    node ``1 + i % (nodes - 1)`` (``others``: never node 0, the owner of the races its
    racers make, so that the owner's fan-out is one publish whatever their number)."""


#: Seconds a quick race counts down in a ``--quick`` run (long enough for a burst of
#: racers to fill it, short beside a race).
QUICK_COUNTDOWN = 1.0


# ============================================================ the generator process


@dataclass(slots=True)
class Stats:
    """What the generator saw during the measured window."""

    rtt: list[float] = field(default_factory=list)
    progress_racers: list[float] = field(default_factory=list)
    spectator_updates: int = 0
    """Progress frames (echo: fan-out frames) spectators received in the measured window."""
    moves: int = 0
    starts: list[float] = field(default_factory=list)
    """Seconds from the go to each racer's first card of a race (how long races take to form)."""
    errors: Counter[str] = field(default_factory=Counter)
    error_samples: list[str] = field(default_factory=list)
    connected: int = 0
    races: int = 0
    ratings: int = 0
    """``rating`` frames racers received (``--rated``: each rated finish sends one a
    claimed racer)."""


class CollectorPauses:
    """The generator's own garbage-collection pauses while it measures.

    A pause of the generator delays every answer it is about to read, so it shows in
    the round trips as if the target had been slow; reported beside them, it tells the
    two apart.
    """

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self.by_generation: Counter[int] = Counter()
        self._started = 0.0
        self.measuring = False

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        elif self.measuring:
            self.pauses.append(time.perf_counter() - self._started)
            self.by_generation[info["generation"]] += 1


def quiet_collector() -> None:
    """Keep the generator's garbage collector from pausing it while it measures.

    Left to itself, at 5,000 racers the collector paused the generator about 300 times in
    25 s (2.9 s in all, up to 163 ms at once), and each pause showed in the round trips:
    the echo floor's p99 was 315 ms with its own core less than half busy. The clients
    make no cyclic garbage while they race (a full collection after the run finds none;
    every result reports that count as ``garbage_after``), so the collector has nothing
    to do for the run: what exists now is set aside and automatic collection is off
    until the run ends.
    """
    gc.collect()
    gc.freeze()
    gc.disable()


def greedy_target(
    board: Board, rank: int, targets: Sequence[Sequence[int]], rng: random.Random
) -> tuple[int, int]:
    """Where a racer puts a card of ``rank``: the target (a ``(row, col)``) that leaves the
    fewest cards face down, then the most piles; ties broken at random. Racers against
    both targets choose this way, so the generator does the same work per move for each."""
    best: tuple[tuple[bool, int, int, float], tuple[int, int]] | None = None
    for row, col in targets:
        token = board.place(board.cell((row, col)), rank)
        key = (board.face_down > board.limit, board.face_down, -board.piles, rng.random())
        board.undo(token)
        if best is None or key < best[0]:
            best = (key, (row, col))
    assert best is not None, "a card always has a target while the game goes on"
    return best[1]


class LocalGame:
    """A game an echo racer plays on its own (the echo server knows no rules), so that
    it chooses each move as a server racer does, on a real position: a board and the
    stock dealt from a seed, dealt again from the next seed when the game is over."""

    def __init__(self, seed: str) -> None:
        self._seed, self._deals = seed, 0
        self._new_game()

    def _new_game(self) -> None:
        self.board = Board()
        self._stock = deal_ids(f"{self._seed}-{self._deals}")
        self._deals += 1
        self._drawn = 0

    def _rank_in_hand(self) -> int:
        return DECK[self._stock[self._drawn]].rank

    def choose(self, rng: random.Random) -> tuple[int, int]:
        """Where the card in hand goes (by :func:`greedy_target`)."""
        board = self.board
        targets = [board.position(cell) for cell in board.targets()]
        return greedy_target(board, self._rank_in_hand(), targets, rng)

    def play(self, position: tuple[int, int]) -> None:
        """Place the card in hand at ``position`` (as chosen), and draw the next."""
        board = self.board
        board.place(board.cell(position), self._rank_in_hand())
        self._drawn += 1
        if board.lost() or board.won() or self._drawn == len(self._stock):
            self._new_game()


class Group:
    """One race's worth of racers (and the spectators watching it), across rounds."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.rounds: dict[int, asyncio.Future[tuple[str, str]]] = {}
        self.current = 0

    def race(self, round_number: int) -> asyncio.Future[tuple[str, str]]:
        """The (race id, join code) of round ``round_number``, once its creator knows it."""
        if round_number not in self.rounds:
            self.rounds[round_number] = asyncio.get_running_loop().create_future()
        return self.rounds[round_number]


class ResumingClient(Frames):
    """A client's connection that outlives the death of its node (``--kill-owner-after``):
    when it drops, it connects to the next node and says ``hello`` with the session's
    resume token, as the terminal client does (``client.connection``: the next address,
    after its backoff), then goes on giving the frames that follow (the resume's ``race``,
    ``board`` and ``card``). A frame sent while it is away raises :class:`Closed`, as on a
    closed connection: the racer's place is lost, and the server sends its card again.
    """

    def __init__(self, generator: Generator, ws: WireClient, node: int, hello: Hello) -> None:
        self.generator, self.ws, self.node, self.hello = generator, ws, node, hello
        self.resumes = 0

    async def recv(self) -> bytes:
        """The next frame, resuming on the next node first if the connection dropped."""
        while True:
            try:
                return await self.ws.recv()
            except Closed:
                if not await self._resume():
                    raise

    async def send(self, message: bytes) -> None:
        """Send one frame on the current connection."""
        await self.ws.send(message)

    async def close(self) -> None:
        """Close the current connection."""
        await self.ws.close()

    async def _resume(self) -> bool:
        """Connect to the next nodes in turn until one resumes the session, by the
        terminal client's rules (``client.connection``: its backoff's waits between
        rounds of the nodes, the next node at once within a round, its open timeout);
        whether one did (never once the run is over)."""
        generator = self.generator
        urls = generator.urls
        for delay in DEFAULT_BACKOFF.waits(len(urls)):
            if generator.stop.is_set():
                return False
            self.node = (self.node + 1) % len(urls)
            await asyncio.sleep(delay)
            try:
                ws = await connect(urls[self.node] + "/", OPEN_TIMEOUT)
            except (OSError, HandshakeFailed, Closed, TimeoutError):
                continue
            try:
                await ws.send(encode(self.hello))
                answer = msgpack.unpackb(await asyncio.wait_for(ws.recv(), OPEN_TIMEOUT))
            except (Closed, TimeoutError):
                if ws.transport is not None:
                    ws.transport.abort()  # no answer in time: this attempt failed
                continue
            if answer.get("type") != "welcome":
                generator.error(f"resume:{answer.get('code', answer.get('type'))}")
                return False
            ws.on_message = self.ws.on_message
            self.ws = ws
            self.resumes += 1
            generator.node_of[self] = self.node
            return True
        return False


    @property
    def on_message(self) -> Callable[[bytes], None] | None:
        """The current connection's message hook (see :attr:`WireClient.on_message`),
        carried over to each connection it resumes on."""
        return self.ws.on_message

    @on_message.setter
    def on_message(self, hook: Callable[[bytes], None] | None) -> None:
        self.ws.on_message = hook


#: A client's connection: a plain one, or one that resumes on the next node.
Connection = WireClient | ResumingClient


def _resumed(ws: Connection) -> bool:
    """Whether ``ws`` lost its node and resumed on another."""
    return isinstance(ws, ResumingClient) and ws.resumes > 0


def spectator_node(index: int, nodes: int, spectators_on: str) -> int:
    """The node spectator ``index`` connects to: every node in turn (``spread``), or
    every node but node 0, the owner of the races its racers made (``others``)."""
    if spectators_on == "others" and nodes > 1:
        return 1 + index % (nodes - 1)
    return index % nodes


def connections_by_node(settings: Settings, nodes: int) -> list[int]:
    """How many of the run's clients connect to each node (racer *i* to ``i % nodes``)."""
    counts = [0] * nodes
    for index in range(settings.racers):
        counts[index % nodes] += 1
    for index in range(settings.spectators):
        counts[spectator_node(index, nodes, settings.spectators_on)] += 1
    return counts


async def until_closed(ws: Connection) -> None:
    """Wait until ``ws`` closes for good (raises :class:`Closed`), dropping whatever it
    queued before its :attr:`~WireClient.on_message` hook was set."""
    while True:
        await ws.recv()


class Watch:
    """One spectator's reading of its race's frames, called by its connection for each
    frame as the frame comes in (:attr:`WireClient.on_message`: no task woken per frame).

    In a race of 1,000 watched by 10,000, progress frames are nearly all the generator
    reads, so a spectator reads only a frame's type from its bytes (:func:`frame_type`)
    and counts its progress updates; only a sample of at most :data:`SPECTATOR_SAMPLE`
    spectators decodes them to time each move shown. ``finished`` is matched against the
    race id; boards and the rest are dropped unread.
    """

    __slots__ = ("ended", "generator", "node", "race_id", "sampled", "shown")

    def __init__(self, generator: Generator, node: int, *, sampled: bool) -> None:
        self.generator, self.node, self.sampled = generator, node, sampled
        self.race_id = ""
        self.shown: dict[str, int] = {}
        self.ended: asyncio.Future[None] | None = None

    def start(self, race_id: str) -> asyncio.Future[None]:
        """Watch ``race_id`` from now on: done when its ``finished`` (or an error) comes."""
        self.race_id, self.shown = race_id, {}
        self.ended = asyncio.get_running_loop().create_future()
        return self.ended

    def __call__(self, frame: bytes) -> None:
        kind = frame_type(frame)
        generator = self.generator
        if kind == b"progress":
            now = time.perf_counter()
            if generator.measuring(now):
                generator.stats.spectator_updates += 1
            if not self.sampled:
                return
        elif kind == b"finished":
            if self.race_id and names_race(frame, self.race_id):
                self._end()
            return
        elif kind is not None and kind != b"error":
            return
        now = time.perf_counter()
        message = msgpack.unpackb(frame)
        if message.get("race", self.race_id) != self.race_id:
            return
        if message["type"] == "progress":
            generator.progress_delays(
                self.race_id, message["racers"], "", now,
                generator.spectator_delays.setdefault(self.node, []), self.shown)
        elif message["type"] == "error":
            generator.error(message.get("code", "?"), message.get("message", ""))
            self._end()

    def _end(self) -> None:
        if self.ended is not None and not self.ended.done():
            self.ended.set_result(None)


class Generator:
    """All simulated clients of one run, in one event loop."""

    def __init__(self, settings: Settings, url: str, mode: str) -> None:
        self.settings = settings
        self.url = url
        self.mode = mode
        self.stats = Stats()
        self.sent: dict[tuple[str, str, int], float] = {}
        """(race, racer, move) -> when that move's place was sent (perf_counter)."""
        self.groups = [
            Group(i) for i in range(max(1, -(-settings.racers // settings.race_size)))
        ]
        self.go = asyncio.Event()
        self.first_card = asyncio.Event()
        """Set when a racer gets the first card of a race: the first race runs."""
        self.stop = asyncio.Event()
        self.measure_from = float("inf")
        self.go_time = float("inf")
        self.connections: list[Connection] = []
        self.connect_gate = asyncio.Semaphore(64)
        self.all_connected = asyncio.Event()
        self.expected = settings.racers + settings.spectators
        self.attempts = 0
        self.progress_stride = max(1, -(-settings.racers // PROGRESS_SAMPLE))
        self.spectator_delays: dict[int, list[float]] = {}
        """Progress delays timed by the sampled spectators, by the node they are on."""
        self.spectators_timing: Counter[int] = Counter()
        """How many spectators of each node time progress (at most :data:`SPECTATOR_SAMPLE`)."""
        self.urls = url.split(",")
        """The target's addresses (a cluster's nodes, the leader first)."""
        self.node_of: dict[Connection, int] = {}
        self.node_rtt: dict[int, list[float]] = {}
        """Move round trips by the node the racer is connected to."""
        self.race_node: dict[str, int] = {}
        """The node each race was made on (its creator's, for a private race)."""
        self.racing: dict[Connection, str] = {}
        """The race each racer is in (from the answer to its join to its ``finished``)."""
        self.killed_at: float | None = None
        """When the parent SIGKILLed node 0 (perf_counter: the system's monotonic clock)."""
        self.stranded: set[Connection] = set()
        """The racers that were in a race of node 0 when it was killed."""
        self.back_after: dict[Connection, float] = {}
        """For each of those, seconds from the kill to its first move acknowledged after
        it (of a place sent after the kill, so that only a live owner can have answered)."""
        self.ready_after: dict[Connection, float] = {}
        """For each of those, seconds from the kill to the ``card`` that move placed (the
        moment it could move again: the same less the racer's think), or to the move's
        acknowledgement when that card came before the kill."""

    def measuring(self, sent_at: float) -> bool:
        return sent_at >= self.measure_from and not self.stop.is_set()

    def samples_progress(self, group: Group, seat: int) -> bool:
        """Whether this racer is one of the :data:`PROGRESS_SAMPLE` that time progress."""
        return (group.index * self.settings.race_size + seat) % self.progress_stride == 0

    def progress_delays(
        self, race_id: str, entries: list[dict[str, Any]], skip: str, now: float,
        into: list[float], shown: dict[str, int],
    ) -> None:
        """Add to ``into`` the delay from each move in ``entries`` (but ``skip``'s) to ``now``,
        the first time this receiver sees it (``shown``: the cards played it has seen of each
        racer). A racer's line comes again with the same cards played when its counts catch
        up with the count line (docs/architecture.md, Fairness): that is not the move's
        delay, and timing it would.

        The innermost loop of a big race's fan-out, so it reads its attributes once.
        """
        if self.stop.is_set():
            return
        sent_at, since, seen = self.sent.get, self.measure_from, shown.get
        for entry in entries:
            racer, played = entry["racer"], entry["cards_played"]
            if racer != skip and played > seen(racer, 0):
                shown[racer] = played
                sent = sent_at((race_id, racer, played))
                if sent is not None and sent >= since:
                    into.append(now - sent)

    def error(self, code: str, message: str = "") -> None:
        if not self.stop.is_set():
            self.stats.errors[code] += 1
            if len(self.stats.error_samples) < 10:
                self.stats.error_samples.append(f"{code}: {message}" if message else code)

    async def open(self, path: str, hello: Hello, client: int = 0) -> Connection | None:
        """Connect client number ``client`` (to node ``client % nodes``) and say hello;
        ``None`` (and an error counted) if that fails. With ``kill_owner_after``, the
        connection resumes on the next node when it drops (:class:`ResumingClient`)."""
        node = client % len(self.urls)
        connection: Connection
        try:
            async with self.connect_gate:
                ws = connection = await connect(self.urls[node] + path,
                                                self.settings.connect_timeout)
                self.connections.append(ws)
                frame = encode(hello)
                await ws.send(frame)
                if self.mode == "server":
                    answer = msgpack.unpackb(await ws.recv())
                    if answer.get("type") != "welcome":
                        self.error(f"hello:{answer.get('code', answer.get('type'))}")
                        return None
                    if self.settings.kill_owner_after > 0:
                        connection = ResumingClient(
                            self, ws, node, replace(hello, resume=answer["resume"]))
                        self.connections.remove(ws)
                        self.connections.append(connection)
                else:
                    while await ws.recv() != frame:
                        pass
        except (OSError, HandshakeFailed, Closed, TimeoutError) as failure:
            self.error(f"connect:{type(failure).__name__}")
            return None
        finally:
            self.attempts += 1
            if self.attempts >= self.expected:
                self.all_connected.set()
        self.node_of[connection] = node
        self.stats.connected += 1
        return connection

    # ------------------------------------------------------------- server mode

    async def claim(self, ws: Connection) -> bool:
        """Claim the racer's name (``--rated``): whether the server gave its key."""
        await ws.send(encode_players(ClaimName(id=0)))
        while True:
            answer = msgpack.unpackb(await ws.recv())
            if answer.get("type") == "player_key":
                return True
            if answer.get("type") == "error":
                self.error(f"claim:{answer.get('code')}")
                return False

    async def server_racer(self, group: Group, seat: int) -> None:
        name = f"load-{group.index}-{seat}"
        ws = await self.open("/", Hello(name=name, bot=True, client="bench.load"),
                             group.index * self.settings.race_size + seat)
        if ws is None or (self.settings.rated and not await self.claim(ws)):
            return
        rng = random.Random(self.settings.seed * 1_000_003 + group.index * 1009 + seat)
        await self.go.wait()
        round_number = 0
        with contextlib.suppress(Closed):
            while not self.stop.is_set():
                race = group.race(round_number)
                request = round_number + 1
                if self.settings.quick:
                    # The lobby chooses the race: each racer learns its id from its answer.
                    race = asyncio.get_running_loop().create_future()
                    await ws.send(encode(QuickRace(id=request)))
                elif seat == 0:
                    group.current = round_number
                    options = RaceOptions(
                        max_racers=self.settings.race_size,
                        min_racers=self.settings.race_size,
                        time_limit=3600,
                        public=False,
                        auto_start=True,
                        countdown=0,
                        rated=self.settings.rated,
                    )
                    await ws.send(encode(CreateRace(options=options, id=request)))
                else:
                    _, code = await race
                    await ws.send(encode(JoinRace(race=code, id=request)))
                await self.play_race(ws, race, request, rng, seat == 0 or self.settings.quick,
                                     self.samples_progress(group, seat))
                round_number += 1

    async def play_race(
        self,
        ws: Connection,
        race: asyncio.Future[tuple[str, str]],
        request: int,
        rng: random.Random,
        creator: bool,
        timing_progress: bool,
    ) -> None:
        """Play one race from the join (answering ``request``) to its ``finished``.

        Messages about any other race (a late one from the previous round) are skipped.
        Progress frames are read only if ``timing_progress``: in a big race they are most
        of what arrives, and a racer does not need them to play.
        """
        board = Board()
        race_id, you = "", ""
        shown: dict[str, int] = {}
        waiting_since: float | None = None
        card: dict[str, Any] | None = None
        card_at: dict[int, float] = {}
        """When the card of each move came (the latest, if it came again on a resume)."""
        tasks: set[asyncio.Task[None]] = set()
        async for frame in ws:
            now = time.perf_counter()
            kind_bytes = frame_type(frame)
            if kind_bytes == b"finished" and race_id:
                if names_race(frame, race_id):
                    break
                continue
            if kind_bytes == b"rating":
                self.stats.ratings += 1
                continue
            if kind_bytes is not None and kind_bytes not in RACER_READS and not (
                # The answer to the create/join (a ``race``) comes before anything else.
                (kind_bytes == b"race" and not race_id)
                or (kind_bytes == b"progress" and timing_progress)
            ):
                continue
            message = msgpack.unpackb(frame)
            kind = message["type"]
            if not race_id:
                # Until the create/join is answered, only its answer matters.
                if message.get("reply_to") != request:
                    continue
                if kind == "error":
                    self.error(message.get("code", "?"), message.get("message", ""))
                    await asyncio.sleep(0.1)
                    break
                if kind == "race":
                    race_id, you = message["race"], message.get("you") or ""
                    self.racing[ws] = race_id
                    if creator and not race.done():
                        race.set_result((race_id, message.get("code") or race_id))
                        if race_id not in self.race_node:  # (a quick race's racers all say)
                            self.stats.races += 1
                        self.race_node.setdefault(race_id, self.node_of[ws])
                continue
            if message.get("race", race_id) != race_id:
                continue
            if kind == "card":
                if message["move"] == 1:
                    self.stats.starts.append(now - self.go_time)
                    self.first_card.set()
                if waiting_since is not None and self.measuring(waiting_since):
                    self.round_trip(ws, now - waiting_since)
                waiting_since = None
                card = message
                card_at[message["move"]] = now
                task = asyncio.create_task(self._place(ws, card, board, race_id, you, rng))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            elif kind == "placed":
                card = None  # played: nothing to send again until the next card
                card_id, (row, col) = message["card"], message["position"]
                board.place(board.cell((row, col)), DECK[card_id].rank)
                sent = self.sent.get((race_id, you, message["move"]))
                if self.killed_at is not None:
                    self.back(ws, sent, card_at.get(message["move"]), now)
                if message["status"] != "racing":
                    if sent is not None and self.measuring(sent):
                        self.round_trip(ws, now - sent)
                else:
                    waiting_since = sent
            elif kind == "progress":
                self.progress_delays(race_id, message["racers"], you, now,
                                     self.stats.progress_racers, shown)
            elif kind == "finished":
                break
            elif kind == "error":
                self.error(message.get("code", "?"), message.get("message", ""))
                pause = RESEND_AFTER.get(message.get("code", ""))
                if pause is not None and card is not None:
                    # The place was refused, not played: as a client would, wait a
                    # moment and send it again, rather than wait for a card forever.
                    task = asyncio.create_task(
                        self._place(ws, card, board, race_id, you, rng, pause))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
        self.racing.pop(ws, None)
        for task in tasks:
            task.cancel()

    def killed(self, at: float) -> None:
        """Node 0 was SIGKILLed at ``at``: its races' racers are stranded until they move
        again."""
        self.killed_at = at
        self.stranded = {ws for ws, race in self.racing.items() if self.race_node.get(race) == 0}

    def back(self, ws: Connection, sent: float | None, card_at: float | None,
             now: float) -> None:
        """A move of ``ws`` (its card come at ``card_at``) was acknowledged at ``now``: the
        first since the kill of one sent after it brings a stranded racer back."""
        killed_at = self.killed_at
        assert killed_at is not None
        if (ws in self.stranded and ws not in self.back_after and sent is not None
                and sent > killed_at):
            self.back_after[ws] = now - killed_at
            ready = card_at if card_at is not None and card_at > killed_at else now
            self.ready_after[ws] = ready - killed_at

    def failover(self) -> dict[str, Any] | None:
        """After a kill: how many racers were stranded, the seconds each took to move
        again (p50/p99/max in ms), and how many never did before the run ended."""
        if self.killed_at is None:
            return None
        return {
            "stranded": len(self.stranded),
            "back_ms": summary(list(self.back_after.values())),
            "ready_ms": summary(list(self.ready_after.values())),
            # Racers whose connection died with node 0 (they resumed on another node)
            # and those whose connection lived on (only their race moved).
            "ready_ms_resumed": summary(
                [seconds for ws, seconds in self.ready_after.items() if _resumed(ws)]),
            "ready_ms_stayed": summary(
                [seconds for ws, seconds in self.ready_after.items() if not _resumed(ws)]),
            "never_back": len(self.stranded) - len(self.back_after),
            "resumed_connections": sum(
                ws.resumes for ws in self.connections if isinstance(ws, ResumingClient)),
        }

    def round_trip(self, ws: Connection, seconds: float) -> None:
        """Count one move answered ``seconds`` after it was sent."""
        self.stats.rtt.append(seconds)
        self.stats.moves += 1
        self.node_rtt.setdefault(self.node_of.get(ws, 0), []).append(seconds)

    async def _place(
        self,
        ws: Connection,
        card: dict[str, Any],
        board: Board,
        race_id: str,
        you: str,
        rng: random.Random,
        delay: float | None = None,
    ) -> None:
        """Think (or wait ``delay`` seconds), choose where ``card`` goes, and place it."""
        await asyncio.sleep(self.settings.think * rng.uniform(0.5, 1.5) if delay is None
                            else delay)
        if self.stop.is_set():
            return
        row, col = greedy_target(board, DECK[card["card"]].rank, card["targets"], rng)
        move = card["move"]
        self.sent[(race_id, you, move)] = time.perf_counter()
        with contextlib.suppress(Closed):
            await ws.send(encode(Place(race=card["race"], move=move, row=row, col=col)))

    async def server_spectator(self, index: int) -> None:
        """Watch the races of one group, round after round from when the first race
        runs, each frame read as it comes in by a :class:`Watch` (see there for what is
        read)."""
        node = spectator_node(index, len(self.urls), self.settings.spectators_on)
        ws = await self.open(
            "/", Hello(name=f"watch-{index}", bot=True, role=Role.SPECTATOR, client="bench.load"),
            node,
        )
        if ws is None:
            return
        group = self.groups[index % len(self.groups)]
        sampled = self.spectators_timing[node] < SPECTATOR_SAMPLE
        self.spectators_timing[node] += sampled
        watch = Watch(self, node, sampled=sampled)
        ws.on_message = watch
        # A crowd that comes for the start: in a race of 1,000 every racer's join in the
        # lobby changes what a new spectator is sent, so 10,000 spectators there would
        # slow the lobby's filling rather than measure the race's fan-out.
        await self.first_card.wait()
        if self.settings.spectator_rate > 0:  # they come in at this rate, in turn
            await asyncio.sleep(index / self.settings.spectator_rate)
        with contextlib.suppress(Closed):
            while not self.stop.is_set():
                round_number = group.current
                race_id, _ = await group.race(round_number)
                ended = watch.start(race_id)
                await ws.send(encode(Spectate(race=race_id)))
                # The connection's recv only returns (raises) when it closes for good.
                closed = asyncio.ensure_future(until_closed(ws))
                try:
                    await asyncio.wait((ended, closed), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    closed.cancel()  # a no-op once it is done: then its end is read here
                    if closed.done() and not closed.cancelled() and closed.exception():
                        raise Closed("closed")
                while group.current == round_number and not self.stop.is_set():
                    await asyncio.sleep(0.05)

    # --------------------------------------------------------------- echo mode

    async def echo_racer(self, group: Group, seat: int) -> None:
        name = f"load-{group.index}-{seat}"
        path = f"/g{group.index}"
        ws = await self.open(path, Hello(name=name, bot=True, client="bench.load"))
        if ws is None:
            return
        rng = random.Random(self.settings.seed * 1_000_003 + group.index * 1009 + seat)
        race_id, you = path, str(seat)
        timing_progress = self.samples_progress(group, seat)
        await self.go.wait()
        move = 0
        waiting_since: float | None = None
        # The last frame this racer sent: it names the seat and move, so the echo of it is
        # the only frame equal to it, and is recognised without decoding.
        mine = b""
        game = LocalGame(f"{self.settings.seed}-{group.index}-{seat}")
        chosen = (0, 0)

        async def place_next() -> None:
            nonlocal move, waiting_since, mine, chosen
            await asyncio.sleep(self.settings.think * rng.uniform(0.5, 1.5))
            if self.stop.is_set():
                return
            move = move % 40 + 1
            chosen = game.choose(rng)
            mine = encode(Place(race=group_code(group), move=move, row=chosen[0],
                                col=chosen[1], id=seat))
            waiting_since = self.sent[(race_id, you, move)] = time.perf_counter()
            with contextlib.suppress(Closed):
                await ws.send(mine)

        tasks = {asyncio.create_task(place_next())}
        with contextlib.suppress(Closed):
            async for frame in ws:
                now = time.perf_counter()
                if frame == mine:
                    if waiting_since is not None and self.measuring(waiting_since):
                        self.stats.rtt.append(now - waiting_since)
                        self.stats.moves += 1
                    waiting_since = None
                    game.play(chosen)  # as a server racer does once its move is placed
                    task = asyncio.create_task(place_next())
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                elif timing_progress:
                    # Another racer's move: this floor's progress update.
                    message = msgpack.unpackb(frame)
                    if message.get("type") == "place":
                        self.progress_delays(
                            race_id, [{"racer": str(message.get("id")),
                                       "cards_played": message["move"]}],
                            you, now, self.stats.progress_racers, {})
        for task in tasks:
            task.cancel()

    async def echo_spectator(self, index: int) -> None:
        group = self.groups[index % len(self.groups)]
        path = f"/g{group.index}"
        ws = await self.open(path, Hello(name=f"watch-{index}", bot=True, role=Role.SPECTATOR))
        if ws is None:
            return
        with contextlib.suppress(Closed):
            async for frame in ws:
                now = time.perf_counter()
                message = msgpack.unpackb(frame)
                if message.get("type") == "place":
                    if self.measuring(now):
                        self.stats.spectator_updates += 1
                    self.progress_delays(
                        path, [{"racer": str(message.get("id")), "cards_played": message["move"]}],
                        "", now, self.spectator_delays.setdefault(0, []), {})

    # ------------------------------------------------------------------ a run

    async def run(self, ready: asyncio.Future[None]) -> dict[str, Any]:
        """Connect everyone, wait for ``ready`` (the parent's go), race, report."""
        settings = self.settings
        racer, spectator = (
            (self.server_racer, self.server_spectator)
            if self.mode == "server"
            else (self.echo_racer, self.echo_spectator)
        )
        tasks = [
            asyncio.create_task(racer(self.groups[i // settings.race_size], i % settings.race_size))
            for i in range(settings.racers)
        ]
        tasks += [asyncio.create_task(spectator(i)) for i in range(settings.spectators)]
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.all_connected.wait(), settings.connect_timeout)
        print(json.dumps({"connected": self.stats.connected}), flush=True)
        await ready
        cpu_start, wall_start = time.process_time(), time.perf_counter()
        wait_start = run_queue_wait(os.getpid())
        self.measure_from = wall_start + settings.warmup
        self.go_time = wall_start
        pauses = CollectorPauses()
        gc.callbacks.append(pauses)
        quiet_collector()
        self.go.set()
        await asyncio.sleep(settings.warmup)
        pauses.measuring = True
        cpu_window, wall_window = time.process_time(), time.perf_counter()
        await asyncio.sleep(max(0.0, settings.duration - settings.warmup))
        self.stop.set()
        gc.callbacks.remove(pauses)
        gc.enable()
        cpu, wall = time.process_time() - cpu_start, time.perf_counter() - wall_start
        cpu_window = time.process_time() - cpu_window
        wall_window = time.perf_counter() - wall_window
        waited = run_queue_wait(os.getpid()) - wait_start
        await asyncio.gather(
            *(ws.close() for ws in self.connections), return_exceptions=True
        )
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        window = max(wall - settings.warmup, 1e-9)
        stats = self.stats
        return {
            "moves": stats.moves,
            "moves_per_second": stats.moves / window,
            "rtt_ms": summary(stats.rtt),
            "rtt_by_node_ms": {
                str(node): summary(samples) for node, samples in sorted(self.node_rtt.items())
            },
            "progress_racers_ms": summary(stats.progress_racers),
            "progress_spectators_ms": summary(
                [delay for delays in self.spectator_delays.values() for delay in delays]),
            "progress_spectators_by_node_ms": {
                str(node): summary(delays)
                for node, delays in sorted(self.spectator_delays.items())
            },
            "updates_per_spectator_per_second": (
                stats.spectator_updates / settings.spectators / window
                if settings.spectators else None
            ),
            "errors": sum(stats.errors.values()),
            "error_codes": dict(stats.errors),
            "error_samples": stats.error_samples,
            "connected": stats.connected,
            "races_started": stats.races,
            "ratings_received": stats.ratings,
            "failover": self.failover(),
            "first_card_s": summary(stats.starts),
            "generator_cpu_percent": 100 * cpu / wall,
            "generator_cpu_window_percent": 100 * cpu_window / max(wall_window, 1e-9),
            "generator_cpu_wait_percent": 100 * waited / wall,
            "generator_gc_pause_ms": {
                "count": len(pauses.pauses),
                "total": round(1000 * sum(pauses.pauses), 2),
                "max": round(1000 * max(pauses.pauses, default=0.0), 2),
                "by_generation": dict(pauses.by_generation),
                "garbage_after": gc.collect(),
            },
        }


def group_code(group: Group) -> str:
    return f"g{group.index}"


def frame_type(frame: bytes | str) -> bytes | None:
    """The ``type`` of a frame (a msgpack map), read from its bytes without decoding it.

    ``None`` when it cannot be read that way; the caller then decodes the frame. The
    search is from the end because :func:`protocol.encode` writes the key last, and no
    message has a nested ``type`` key, so the match is the top-level one.

    >>> frame_type(encode(Place(race="AB12", move=3, row=0, col=1)))
    b'place'
    """
    if isinstance(frame, str):
        return None
    at = frame.rfind(TYPE_KEY)
    if at < 0 or at + 5 >= len(frame) or frame[at + 5] & 0xE0 != 0xA0:  # not a fixstr value
        return None
    start = at + 6
    return frame[start:start + (frame[at + 5] & 0x1F)]


def names_race(frame: bytes | str, race_id: str) -> bool:
    """Whether the frame's ``race`` field is ``race_id``, read from its bytes.

    No nested map has a ``race`` key, and race ids are not racer names, so the encoded
    pair is found only as the message's own field.

    >>> names_race(encode(Place(race="AB12", move=3, row=0, col=1)), "AB12")
    True
    """
    return isinstance(frame, bytes) and b"\xa4race" + msgpack.packb(race_id) in frame


def summary(samples: Sequence[float]) -> dict[str, float | int | None]:
    """p50/p90/p99/max in milliseconds (nearest rank), and the count."""
    if not samples:
        return {"count": 0, "p50": None, "p90": None, "p99": None, "max": None}
    ordered = sorted(samples)

    def rank(q: float) -> float:
        return round(1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {
        "count": len(ordered),
        "p50": rank(0.50),
        "p90": rank(0.90),
        "p99": rank(0.99),
        "max": round(1000 * ordered[-1], 2),
    }


async def generate(settings: Settings, url: str, mode: str) -> dict[str, Any]:
    """The generator process's whole life: the parent says go on stdin."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    generator = Generator(settings, url, mode)

    def on_stdin() -> None:
        # "go", then (with --kill-owner-after) "killed <perf_counter>" once node 0 is dead.
        line = sys.stdin.readline()
        if not ready.done():
            ready.set_result(None) if line else ready.set_exception(EOFError())
        elif line.startswith("killed "):
            generator.killed(float(line.split()[1]))
        if not line or not settings.kill_owner_after:
            loop.remove_reader(sys.stdin.fileno())

    loop.add_reader(sys.stdin.fileno(), on_stdin)
    return await generator.run(ready)


# ================================================================ the parent process


def raise_file_limit() -> None:
    """Thousands of sockets need thousands of descriptors (children inherit the limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def pinned(cpu: int, command: list[str]) -> list[str]:
    """``command`` pinned to ``cpu`` with taskset, when there is taskset and that CPU."""
    if shutil.which("taskset") and (os.cpu_count() or 1) > cpu:
        return ["taskset", "-c", str(cpu), *command]
    return command


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the target exited with status {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.1)
    raise RuntimeError(f"nothing listened on port {port} within {timeout:.0f} s")


def prioritise(pid: int, nice: int) -> None:
    """Give ``pid`` the nice value ``nice``, and give its session's autogroup the same.

    Where the kernel groups processes by session (``sched_autogroup``), a nice value only
    ranks a process against others of its own session, and each session gets an equal
    share of a CPU: another terminal's work would still take half of the target's core.
    So the children run in sessions of their own, and each session is given the nice
    value too (negative ones need root; without permission the process nice still holds).
    """
    os.setpriority(os.PRIO_PROCESS, pid, nice)
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/autogroup").write_text(f"{nice}\n")


def die_with_parent() -> None:
    """In a child before it runs its command: be sent SIGTERM when the parent dies.

    A child in a session of its own gets no terminal signal and is not in a killed process
    group, so without this a target could outlive a killed run, pinned and at high priority.
    """
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start(cpu: int, command: list[str], settings: Settings, **popen: Any) -> subprocess.Popen[Any]:
    """``command`` started pinned to ``cpu``, at ``settings.priority`` when there is one."""
    own_session = settings.priority is not None
    process = subprocess.Popen(pinned(cpu, command), cwd=ROOT, start_new_session=own_session,
                               preexec_fn=die_with_parent if own_session else None, **popen)
    if settings.priority is not None:
        prioritise(process.pid, settings.priority)
    return process


def scrape_seconds(port: int) -> float:
    """One ``GET /metrics`` of the target on ``port``: seconds until the whole answer."""
    started = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        response.read()
    return time.perf_counter() - started


class ChannelCounter:
    """Counts the messages published on the Redis channels matching ``pattern`` (a
    cluster's race channels), from a subscriber of its own on a thread; as a context
    manager, subscribed inside it."""

    def __init__(self, url: str, pattern: str) -> None:
        import redis

        self._client = redis.Redis.from_url(url)
        self._pubsub = self._client.pubsub(  # type: ignore[no-untyped-call]  # unannotated
            ignore_subscribe_messages=True)
        self._pubsub.psubscribe(**{pattern: self._count})
        self.times: list[float] = []
        """When each message came (``time.monotonic``)."""
        self._thread = self._pubsub.run_in_thread(sleep_time=0.05, daemon=True)

    def _count(self, message: dict[str, Any]) -> None:
        self.times.append(time.monotonic())

    def rate(self, start: float, end: float) -> float:
        """Messages a second between ``start`` and ``end`` (``time.monotonic``)."""
        return sum(start <= at < end for at in self.times) / max(end - start, 1e-9)

    def __enter__(self) -> ChannelCounter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._thread.stop()
        self._thread.join(timeout=5)
        self._pubsub.close()
        self._client.close()


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def database_cpu_seconds(db: Path | str) -> float | None:
    """CPU seconds used so far by the PostgreSQL backends serving the database ``db``
    names (``None`` for a journal file): the store's side of each commit, which the
    server's own CPU does not show. The database's shared background processes (WAL
    writer, checkpointer) are not counted."""
    if not isinstance(db, str):
        return None
    import urllib.parse

    import psycopg

    name = urllib.parse.urlsplit(db).path.lstrip("/")
    with psycopg.connect(db, autocommit=True) as connection:
        pids = [row[0] for row in connection.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )]
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += cpu_seconds(pid)
    return total


def run_queue_wait(pid: int) -> float:
    """Seconds the process's main thread spent runnable but waiting for a CPU (schedstat)."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


@functools.cache
def server_help() -> str | None:
    """``foursquare serve --help``, or ``None`` while the command does not exist."""
    probe = subprocess.run(
        [sys.executable, "-m", "cli.main", "serve", "--help"],
        capture_output=True,
        cwd=ROOT,
        timeout=60,
        check=False,
        text=True,
    )
    return probe.stdout if probe.returncode == 0 else None


def target_command(
    target: str, port: int, db: Path | str, loop: str, cluster: str | None = None
) -> list[str]:
    """How to start ``target`` on ``port`` (for ``cluster``: one node, ``cluster`` being
    ``--cluster``'s arguments joined by spaces)."""
    if target == "echo":
        return [sys.executable, "-m", "bench.echo_server", "--port", str(port), "--loop", loop]
    # Every racer comes from 127.0.0.1: no per-address caps; and a node may hold more
    # than the default cap in all (10,000 spectators on one node, and racers).
    command = [sys.executable, "-m", "cli.main", "serve", "--host", "127.0.0.1",
               "--port", str(port), "--db", str(db), "--loop", loop,
               "--max-connections", "0",
               "--max-connections-per-address", "0", "--new-sessions-per-minute", "0"]
    if JOURNALS[target] == "off":
        command.append("--no-journal")
    if cluster is not None:
        command += cluster.split(" ")
    return command


def unavailable(target: str, loop: str = "asyncio") -> str | None:
    """Why ``target`` cannot run on ``loop`` in this tree, or ``None`` if it can."""
    try:
        event_loop_factory(loop)
    except ValueError as error:
        return str(error)
    if target == "echo":
        return None
    help_text = server_help()
    if help_text is None:
        return "`foursquare serve` is not available in this tree"
    if JOURNALS[target] == "off" and "--no-journal" not in help_text:
        return "`foursquare serve` has no `--no-journal` option yet"
    if "--loop" not in help_text:
        return "`foursquare serve` has no `--loop` option yet"
    if JOURNALS[target] == "ram" and not RAM_DIR.is_dir():
        return f"there is no RAM disk at {RAM_DIR}"
    if JOURNALS[target].startswith("postgresql") and "postgresql://" not in help_text:
        return "`foursquare serve` takes no postgresql:// store yet"
    if target == "cluster" and "--cluster" not in help_text:
        return "`foursquare serve` has no `--cluster` option yet"
    return None


@contextlib.contextmanager
def run_database(target: str, settings: Settings, workdir: Path) -> Iterator[Path | str]:
    """The store a run of ``target`` uses: a journal in ``workdir``, or for the
    ``server-postgresql`` targets a database of the run's own on ``settings.postgres``'s
    server, dropped after the run."""
    journal = JOURNALS.get(target, "")
    if not journal.startswith("postgresql"):
        yield workdir / "load.db"
        return
    import urllib.parse

    import psycopg

    name = f"foursquare_load_{os.getpid()}_{int(time.time())}"
    with psycopg.connect(settings.postgres, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            parts = urllib.parse.urlsplit(settings.postgres)._replace(path="/" + name)
            if journal == "postgresql-async":
                options = "options=-csynchronous_commit%3Doff"
                parts = parts._replace(query="&".join(filter(None, [parts.query, options])))
            yield urllib.parse.urlunsplit(parts)
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def run_target(target: str, settings: Settings) -> dict[str, Any]:
    """Start ``target``, drive the load at it, and return the measurements."""
    nodes = settings.nodes if target == "cluster" else 1
    ports = [free_port() for _ in range(nodes)]
    port = ports[0]
    db_dir = str(RAM_DIR) if JOURNALS.get(target) == "ram" else settings.db_dir
    workdir = Path(tempfile.mkdtemp(prefix="foursquare-load-", dir=db_dir))
    log = (workdir / "target.log").open("wb")
    database = contextlib.ExitStack()
    db = database.enter_context(run_database(target, settings, workdir))
    prefix = f"load-{os.getpid()}-{int(time.time())}"
    processes: list[subprocess.Popen[Any]] = []
    generator: subprocess.Popen[str] | None = None
    killed_wall: float | None = None
    takeovers: list[dict[str, Any]] = []
    try:
        for index, node_port in enumerate(ports):
            cluster = (f"--cluster {settings.redis} --cluster-prefix {prefix} "
                       f"--node-id load-{index}") if target == "cluster" else None
            if cluster is not None and settings.lease_ttl is not None:
                cluster += f" --lease-ttl {settings.lease_ttl:g}"
            command = target_command(target, node_port, db, settings.loop, cluster)
            if settings.quick and target != "echo":
                command += ["--quick-countdown", f"{QUICK_COUNTDOWN:g}"]
            processes.append(start(0, command, settings, stdout=log, stderr=subprocess.STDOUT))
            wait_for_port(node_port, processes[-1], 30)
            if cluster is not None and index == 0:
                time.sleep(2.0)  # the first node leads before the others start
        target_process = processes[0]
        time.sleep(0.5)
        node_rss_empty = [rss_bytes(process.pid) for process in processes]
        rss_empty = node_rss_empty[0]
        race_channels = (database.enter_context(ChannelCounter(settings.redis, f"{prefix}:race:*"))
                         if target == "cluster" else None)
        generator_command = [
            sys.executable, "-m", "bench.load", "--generate",
            "echo" if target == "echo" else "server",
            "--url", ",".join(f"ws://127.0.0.1:{node_port}" for node_port in ports),
            "--settings", json.dumps(asdict(settings)),
        ]
        generator = start(1, generator_command, settings,
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert generator.stdin is not None and generator.stdout is not None
        connected = json.loads(generator.stdout.readline() or "{}").get("connected", 0)
        time.sleep(1.0)
        node_rss_idle = [rss_bytes(process.pid) for process in processes]
        rss_idle = node_rss_idle[0]
        database_start = database_cpu_seconds(db)
        node_cpu_start = [cpu_seconds(process.pid) for process in processes]
        node_cpu_window: list[float] | None = None
        """Each node's CPU seconds when the measured window began (after the warm-up)."""
        window_start = 0.0
        wall_start = time.monotonic()
        wait_start, load_start = run_queue_wait(target_process.pid), os.getloadavg()[0]
        generator.stdin.write("go\n")
        generator.stdin.flush()
        rss_peak = rss_idle
        scrapes: list[float] = []
        every = settings.scrape if settings.scrape > 0 and target != "echo" else None
        next_scrape = wall_start + settings.warmup
        kill_at = (wall_start + settings.kill_owner_after
                   if settings.kill_owner_after > 0 and len(processes) > 1 else None)
        while generator.poll() is None and time.monotonic() - wall_start < settings.duration + 60:
            if kill_at is not None and time.monotonic() >= kill_at:
                kill_at = None
                killed_at, killed_wall = time.perf_counter(), time.time()
                processes[0].kill()  # SIGKILL: nothing of node 0 runs after this
                generator.stdin.write(f"killed {killed_at!r}\n")
                generator.stdin.flush()
            rss_peak = max(rss_peak, rss_bytes(target_process.pid))
            if node_cpu_window is None and time.monotonic() >= wall_start + settings.warmup:
                node_cpu_window = [cpu_seconds(process.pid) for process in processes]
                window_start = time.monotonic()
            if every is not None and time.monotonic() >= next_scrape:
                scrapes.append(scrape_seconds(port))
                next_scrape += every
            pause = 0.5 if every is None else max(0.0, next_scrape - time.monotonic())
            time.sleep(min(0.5, pause))
            if time.monotonic() - wall_start >= settings.duration:
                break
        node_cpu_end = [cpu_seconds(process.pid) for process in processes]
        node_cpu = [end - before for end, before in zip(node_cpu_end, node_cpu_start, strict=True)]
        cpu = sum(node_cpu)
        wall = time.monotonic() - wall_start
        window = None
        if node_cpu_window is not None:
            window = time.monotonic() - window_start
            node_cpu_window = [end - before for end, before
                               in zip(node_cpu_end, node_cpu_window, strict=True)]
        database_end = database_cpu_seconds(db)
        database_cpu = (None if database_start is None or database_end is None
                        else database_end - database_start)
        waited = run_queue_wait(target_process.pid) - wait_start
        load_end = os.getloadavg()[0]
        output, _ = generator.communicate(timeout=60)
        measured = json.loads(output.strip().splitlines()[-1])
    finally:
        if generator is not None and generator.poll() is None:
            generator.kill()
        for process in processes:
            process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()
        if killed_wall is not None:
            takeovers = takeovers_in(workdir / "target.log", killed_wall)
        database.close()
        shutil.rmtree(workdir, ignore_errors=True)
    connections = max(connected, 1)
    by_node = connections_by_node(settings, len(processes))
    window_end = window_start + window if window is not None else None
    return {
        "target": target,
        "journal": JOURNALS.get(target),
        **asdict(settings),
        **measured,
        "server_cpu_percent": 100 * cpu / wall,
        "node_cpu_percent": [100 * seconds / wall for seconds in node_cpu],
        "server_cpu_us_per_move": (
            1e6 * cpu / wall / measured["moves_per_second"]
            if measured.get("moves_per_second") else None
        ),
        "database_cpu_us_per_move": (
            1e6 * database_cpu / wall / measured["moves_per_second"]
            if database_cpu is not None and measured.get("moves_per_second") else None
        ),
        "server_cpu_wait_percent": 100 * waited / wall,
        "load_average": [round(load_start, 2), round(load_end, 2)],
        "rss_empty_mib": rss_empty / 2**20,
        "rss_idle_mib": rss_idle / 2**20,
        "rss_peak_mib": rss_peak / 2**20,
        "rss_per_connection_kib": (rss_idle - rss_empty) / connections / 1024,
        "node_cpu_window_percent": (None if window is None or node_cpu_window is None
                                    else [100 * seconds / window for seconds in node_cpu_window]),
        "node_connections": by_node,
        "node_rss_idle_mib": [rss / 2**20 for rss in node_rss_idle],
        "node_rss_per_connection_kib": [
            (idle - empty) / max(count, 1) / 1024
            for idle, empty, count in zip(node_rss_idle, node_rss_empty, by_node, strict=True)
        ],
        "race_channel_messages_per_second": (
            None if race_channels is None or window_end is None
            else race_channels.rate(window_start, window_end)),
        "scrape_ms": summary(scrapes),
        "takeovers": takeovers,
    }


#: The phases of a takeover its node logs (``races_taken_over``), in milliseconds.
TAKEOVER_PHASES = ("lapsed_ms", "acquire_ms", "read_ms", "rebuild_ms", "resync_ms")


def takeovers_in(log: Path, killed_at: float) -> list[dict[str, Any]]:
    """The takeovers the surviving nodes logged (``races_taken_over``) after node 0's kill
    at ``killed_at`` (wall clock): for each, when it was done (seconds after the kill), how
    many races and sessions it took, and its phases (:data:`TAKEOVER_PHASES`)."""
    found = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and event.get("event") == "races_taken_over":
            found.append({
                "done_s": round(event["ts"] - killed_at, 3),
                "races": len(event["races"]),
                "sessions": event.get("sessions"),
                **{phase: event.get(phase) for phase in TAKEOVER_PHASES},
            })
    return found


# ---------------------------------------------------------------- reporting


def _ms(value: float | int | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def table(results: list[dict[str, Any]]) -> str:
    from bench.report import markdown_table

    header = [
        "target", "racers", "moves/s", "move RTT p50 / p90 / p99 / max (ms)",
        "progress → racers p50 / p99", "→ spectators p50 / p99", "errors",
        "target CPU", "CPU/move (µs)", "idle KiB/conn",
    ]
    rows = []
    for r in results:
        rtt, pr, ps = r["rtt_ms"], r["progress_racers_ms"], r["progress_spectators_ms"]
        name = r["target"]
        rows.append([
            name,
            f"{r['racers']:,}",
            f"{r['moves_per_second']:,.0f}",
            " / ".join(_ms(rtt[k]) for k in ("p50", "p90", "p99", "max")),
            f"{_ms(pr['p50'])} / {_ms(pr['p99'])}",
            f"{_ms(ps['p50'])} / {_ms(ps['p99'])}",
            f"{r['errors']:,}",
            f"{r['server_cpu_percent']:.0f}%",
            _ms(r.get("server_cpu_us_per_move")),
            f"{r['rss_per_connection_kib']:.1f}",
        ])
    return markdown_table(header, rows)


def ratios(results: list[dict[str, Any]]) -> list[str]:
    """Server against echo (move p99) and journal on against off (moves/s), per load."""
    lines = []
    by_load: dict[tuple[int, int], dict[str, dict[str, Any]]] = {}
    for r in results:
        by_load.setdefault((r["racers"], r["spectators"]), {})[r["target"]] = r
    for (racers, _), runs in sorted(by_load.items()):
        echo = runs.get("echo")
        for name in ("server", "server-ram", "server-no-journal"):
            server = runs.get(name)
            if server and echo and server["rtt_ms"]["p99"] and echo["rtt_ms"]["p99"]:
                ratio = server["rtt_ms"]["p99"] / echo["rtt_ms"]["p99"]
                lines.append(f"- {racers:,} racers: {name} move p99 is {ratio:.1f}x the echo "
                             "floor's.")
        on, off = runs.get("server"), runs.get("server-no-journal")
        if on and off and off["moves_per_second"]:
            ratio = on["moves_per_second"] / off["moves_per_second"]
            lines.append(f"- {racers:,} racers: journal on runs {ratio:.2f} of the moves/s of "
                         "journal off.")
    return lines


def scrape_lines(results: list[dict[str, Any]]) -> list[str]:
    """One line per run that scraped ``/metrics``: how long a scrape's round trip took."""
    lines = []
    for r in results:
        scrape = r.get("scrape_ms", {})
        if scrape.get("count"):
            lines.append(f"- {r['target']} at {r['racers']:,} racers: {scrape['count']} scrapes "
                         f"of /metrics, round trip p50 {_ms(scrape['p50'])} ms, max "
                         f"{_ms(scrape['max'])} ms.")
    return lines


def write_docs(results: list[dict[str, Any]], command: str, notes: list[str]) -> None:
    from bench.report import PERFORMANCE_DOC, machine_line, update_section

    text = PERFORMANCE_DOC.read_text() if PERFORMANCE_DOC.exists() else "# Performance\n"
    if "<!-- bench:load -->" not in text:
        PERFORMANCE_DOC.write_text(text.rstrip() + "\n\n" + LOAD_INTRO + "\n<!-- bench:load -->\n"
                                   "<!-- /bench:load -->\n")
    first = results[0]
    # A run with the store in PostgreSQL compares the stores, in a section of its own.
    stores = any(r["target"].startswith("server-postgresql") for r in results)
    body = [
        table(results),
        "",
        *(store_lines(results) if stores else ratios(results)),
        *notes,
        "",
        f"Races of {first['race_size']}, think time {first['think']:g} s (uniform 0.5x-1.5x), "
        f"{first['spectators']} spectators, {first['duration']:g} s per target of which the first "
        f"{first['warmup']:g} s are not measured, event loop {first['loop']}. "
        f"Command: `{command}` ({machine_line()}).",
    ]
    update_section("load-store" if stores else "load", "\n".join(body))


COLOURS = {"server": "#c0392b", "server-ram": "#e67e22", "server-no-journal": "#8e44ad",
           "echo": "#2c7fb8"}


def latency_plot(results: list[dict[str, Any]]) -> str:
    """An SVG line chart of move RTT p50 (dashed) and p99 (solid) against racers, log scale."""
    import math

    width, height, left, right, top, bottom = 680, 380, 70, 150, 20, 50
    loads = sorted({r["racers"] for r in results})
    values = [r["rtt_ms"][k] for r in results for k in ("p50", "p99") if r["rtt_ms"][k]]
    low = 10 ** math.floor(math.log10(max(min(values, default=0.1), 0.01)))
    high = 10 ** math.ceil(math.log10(max(values, default=1.0)))

    def x(racers: int) -> float:
        if len(loads) == 1:
            return left + (width - left - right) / 2
        return left + (width - left - right) * loads.index(racers) / (len(loads) - 1)

    def y(ms: float) -> float:
        span = math.log10(high) - math.log10(low)
        return top + (height - top - bottom) * (1 - (math.log10(ms) - math.log10(low)) / span)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
    ]
    tick = low
    while tick <= high * 1.0001:
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" '
                     f'y2="{y(tick):.1f}" stroke="#ddd"/>')
        parts.append(f'<text x="{left - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">'
                     f'{tick:g}</text>')
        tick *= 10
    for racers in loads:
        parts.append(f'<text x="{x(racers):.1f}" y="{height - bottom + 18}" '
                     f'text-anchor="middle">{racers:,}</text>')
    parts.append(f'<text x="{(left + width - right) / 2}" y="{height - 10}" '
                 'text-anchor="middle">racers</text>')
    parts.append(f'<text x="16" y="{(top + height - bottom) / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 16 {(top + height - bottom) / 2})">'
                 'move RTT (ms, log scale)</text>')
    targets = list(dict.fromkeys(r["target"] for r in results))
    for index, target in enumerate(targets):
        colour = COLOURS.get(target, "#333")
        runs = sorted((r for r in results if r["target"] == target), key=lambda r: r["racers"])
        for key, dash in (("p99", ""), ("p50", ' stroke-dasharray="5 4"')):
            points = " ".join(f"{x(r['racers']):.1f},{y(r['rtt_ms'][key]):.1f}"
                              for r in runs if r["rtt_ms"][key])
            parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" '
                         f'stroke-width="2"{dash}/>')
            for r in runs:
                if r["rtt_ms"][key]:
                    parts.append(f'<circle cx="{x(r["racers"]):.1f}" '
                                 f'cy="{y(r["rtt_ms"][key]):.1f}" r="3" fill="{colour}"/>')
        legend_y = top + 16 + 34 * index
        parts.append(f'<text x="{width - right + 12}" y="{legend_y}" fill="{colour}">'
                     f'{target}</text>')
        parts.append(f'<text x="{width - right + 12}" y="{legend_y + 14}" fill="#555">'
                     'p99 solid, p50 dashed</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def write_sweep_docs(results: list[dict[str, Any]], command: str, notes: list[str]) -> None:
    from bench.report import PERFORMANCE_DOC, machine_line, markdown_table, update_section

    plot = PERFORMANCE_DOC.parent / "load-latency.svg"
    plot.write_text(latency_plot(results))
    rows = [
        [r["target"], f"{r['racers']:,}", f"{r['moves_per_second']:,.0f}",
         _ms(r["rtt_ms"]["p50"]), _ms(r["rtt_ms"]["p99"]), f"{r['errors']:,}",
         f"{r['server_cpu_percent']:.0f}%"]
        for r in sorted(results, key=lambda r: (r["racers"], r["target"]))
    ]
    first = results[0]
    body = "\n".join([
        "Move RTT against the number of racers (same settings otherwise):",
        "",
        "![move RTT against racers](load-latency.svg)",
        "",
        markdown_table(["target", "racers", "moves/s", "RTT p50 (ms)", "RTT p99 (ms)",
                        "errors", "target CPU"], rows),
        "",
        *notes,
        *([""] if notes else []),
        f"Races of {first['race_size']}, think {first['think']:g} s, "
        f"{first['spectators']} spectators, {first['duration']:g} s per point, "
        f"event loop {first['loop']}. "
        f"Command: `{command}` ({machine_line()}).",
    ])
    update_section("load-sweep", body)


def _p99(result: dict[str, Any], key: str = "rtt_ms") -> float | None:
    value: float | None = result[key]["p99"]
    return value


def goals(base: Settings) -> list[tuple[str, list[tuple[str, Settings]], Any]]:
    """The goals of the load issue: (goal, runs, check(results) -> (text, ok)), where the
    check gets each target's results in the order its runs are listed.

    Each run is ``base`` (its duration, warm-up, loop and priority) at the goal's load.
    """
    duration = base.duration
    thousand = replace(base, racers=1000, race_size=4, think=1.0, spectators=20)
    crowd = replace(base, racers=5000, race_size=4, think=1.0, spectators=20,
                    connect_timeout=120.0)
    # A race of 1,000 fills in about 10 s and its games last about 40 moves (40 s at this
    # think time): the first 15 s are not measured, so a 20-30 s window sees the race on.
    one_race = replace(base, racers=1000, race_size=1000, think=1.0, spectators=50,
                       duration=duration + 15, warmup=15)
    # Enough racers to keep the server busy while each stays under the server's 20
    # messages a second: once the server did more than 8,000 moves a second, 400 racers
    # without think time went over it (as 200 had at 4,000), and refusals, not the
    # journal, set the pace. At 1,000, each gets under 10 a second.
    flat_out = replace(base, racers=1000, race_size=4, think=0.0, spectators=0)

    # The floor is measured twice, in the order server, echo, echo, server, and each
    # target judged by its best run. This machine's speed drifts from one minute to the
    # next (the same code took 0.37-0.55 ms of CPU a move at 1,000 racers within an hour),
    # and a slow minute lengthens a run's p99: the floor's ranged from 0.6 to 2.1 ms in
    # one session. One run of each put the ratio anywhere from 2.5x to 3.8x, and an
    # average of two lets one disturbed run decide the verdict; the best run of each is
    # the one the machine disturbed least, for either target alike.
    thousand_again = replace(thousand, seed=thousand.seed + 1)

    def floor_ratio(r: dict[str, list[dict[str, Any]]]) -> tuple[str, bool | None]:
        servers = [p99 for run in r["server"] if (p99 := _p99(run))]
        echoes = [p99 for run in r["echo"] if (p99 := _p99(run))]
        if len(servers) < len(r["server"]) or len(echoes) < len(r["echo"]):
            return "no samples", None
        server, echo = min(servers), min(echoes)
        errors = sum(run["errors"] for run in r["server"])
        ratio = server / echo
        return (f"p99 {' and '.join(f'{p99:,.1f}' for p99 in servers)} ms vs echo "
                f"{' and '.join(f'{p99:,.1f}' for p99 in echoes)} ms (run in the order "
                f"server, echo, echo, server); best of each: {server:,.1f} vs {echo:,.1f} ms "
                f"= {ratio:.1f}x, {errors} errors"), ratio <= 2 and errors == 0

    def crowd_p99(r: dict[str, list[dict[str, Any]]]) -> tuple[str, bool | None]:
        run = r["server"][0]
        p99 = _p99(run)
        if p99 is None:
            return "no samples", None
        # The server runs this load near its core's capacity, so how fast the machine ran
        # that minute decides much of it: the CPU a move took shows which minute it was.
        cpu_per_move = 10 * run["server_cpu_percent"] / max(run["moves_per_second"], 1e-9)
        return (f"p99 {p99:,.1f} ms, {run['connected']:,} connected, "
                f"{run['moves_per_second']:,.0f} moves/s at {cpu_per_move:.3f} ms of CPU a "
                "move"), p99 < 100 and run["connected"] >= 5000

    def memory(r: dict[str, list[dict[str, Any]]]) -> tuple[str, bool | None]:
        kib = r["server"][0]["rss_per_connection_kib"]
        return f"{kib:.1f} KiB per connection", kib <= 20

    def fan_out(r: dict[str, list[dict[str, Any]]]) -> tuple[str, bool | None]:
        run = r["server"][0]
        p99, rate = _p99(run, "progress_spectators_ms"), run["updates_per_spectator_per_second"]
        if p99 is None:
            started = run["first_card_s"]["count"]
            return (f"no progress measured: {started} of 1,000 racers got a first card in "
                    f"{run['duration']:g} s"), False
        return (f"spectators p99 {p99:,.1f} ms, {rate:.1f} updates/s each"), p99 <= 250 and (
            rate is not None and rate <= 12)

    def journal(r: dict[str, list[dict[str, Any]]]) -> tuple[str, bool | None]:
        on_run, off_run = r["server"][0], r["server-no-journal"][0]
        on, off = on_run["moves_per_second"], off_run["moves_per_second"]
        refused = on_run["errors"] + off_run["errors"]
        text = f"{on:,.0f} vs {off:,.0f} moves/s = {on / off if off else 0.0:.2f}"
        if refused:  # the racers' pace was set by the server's refusals: no comparison
            return f"{text}, but {refused:,} messages refused", None
        return text, off > 0 and on / off >= 0.8

    return [
        ("1,000 racers, 1 s think: move p99 within 2x of the echo floor, no errors",
         [("server", thousand), ("echo", thousand), ("echo", thousand_again),
          ("server", thousand_again)], floor_ratio),
        ("5,000 racers (races of 4, 1 s think): move p99 under 100 ms",
         [("server", crowd)], crowd_p99),
        ("idle memory at most 20 KiB per connected racer (the 1,000-racer run)",
         [("server", thousand)], memory),
        ("one race of 1,000 racers: progress coalesced, spectators p99 within 250 ms",
         [("server", one_race)], fan_out),
        ("journal on vs off (1,000 racers, no think time): at least 0.8 of the moves/s",
         [("server", flat_out), ("server-no-journal", flat_out)], journal),
    ]


def run_goals(base: Settings) -> tuple[list[list[str]], list[dict[str, Any]]]:
    """Run every goal's runs (sharing identical ones) and judge them."""
    done: dict[tuple[str, Settings], dict[str, Any]] = {}
    rows, results = [], []
    for name, runs, check in goals(base):
        measured: dict[str, list[dict[str, Any]]] = {}
        missing = next(filter(None, (unavailable(target, base.loop) for target, _ in runs)), None)
        for target, settings in [] if missing else runs:
            if (target, settings) not in done:
                print(f"goal run: {target}, {settings.racers} racers in races of "
                      f"{settings.race_size}, think {settings.think:g} s ...",
                      file=sys.stderr, flush=True)
                done[(target, settings)] = run_target(target, settings)
                results.append(done[(target, settings)])
            measured.setdefault(target, []).append(done[(target, settings)])
        if missing:
            rows.append([name, f"not run: {missing}", "—"])
            continue
        text, ok = check(measured)
        rows.append([name, text, "—" if ok is None else ("met" if ok else "**not met**")])
    return rows, results


LOAD_INTRO = """## Load
`bench/load.py` drives the same load at three targets, one after the other: the race server
(`foursquare serve`) with its journal on disk, as deployed (`server`); the same server with
its journal on a RAM disk (`server-ram`: the same code and commits, without the disk's
fsync); and, as the floor, a bare websockets echo server (`bench/echo_server.py`: same
library, compression off, each frame echoed to its sender and broadcast to its group). Each
target runs alone, pinned to CPU 0; the load generator runs on CPU 1; all three run on the
event loop `--loop` names (asyncio's own, or uvloop). Racers are real websocket clients in
private races, placing greedy legal moves after a think time; spectators watch the same
races. Against the echo, each racer plays a game of its own (the echo knows no rules) and
chooses its moves the same way, so the generator does the same work per move for both.
The generator's clients speak RFC 6455 through a lean asyncio protocol
(`bench/wire.py`) and read only what they need, by the same rule against both targets: a
frame's type is read from its bytes, racers decode their own `card` and `placed`, and only
a sample of at most 100 racers, and of at most 100 spectators a node, decode progress to
time it (the others count it). Move RTT
is `place` sent to the next `card` received (to the echo, against the floor). The progress
delay runs from a move's `place` to the progress update showing it; the server coalesces
progress to ~10 updates a second per race, so up to ~100 ms of it is by design. Memory is
the target's resident set after everyone has connected and said hello, less before, per
connection. Target CPU is the share of one core over the whole run. `--priority -10` (as
root) runs the target and the generator at nice -10, each in a session of its own given
the same value: where the kernel groups processes by session (autogroup, as on this
machine), it shares a CPU equally between sessions, and a process's nice value alone would
not keep another session's work off its core.

`make bench` runs the five goals at 20 s a run, after the engine, solver and bot samples
(under ten minutes in all: about six here, half of it the goals); `make bench-load` runs
the 1,000-racer table and the goals at full length (30 s a run, about six minutes). Both
pass `--priority -10 --loop uvloop`.
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = Settings()
    parser.add_argument("--racers", type=int, default=defaults.racers)
    parser.add_argument("--race-size", type=int, default=defaults.race_size)
    parser.add_argument("--think", type=float, default=defaults.think)
    parser.add_argument("--spectators", type=int, default=defaults.spectators)
    parser.add_argument("--duration", type=float, default=defaults.duration)
    parser.add_argument("--warmup", type=float, default=defaults.warmup)
    parser.add_argument("--priority", type=int, default=None, metavar="NICE",
                        help="run the target and generator at this nice value (a negative "
                        "one, as root, keeps a shared machine's other work from skewing "
                        "the figures)")
    parser.add_argument("--loop", choices=LOOPS, default=defaults.loop,
                        help="event loop of the server, the echo floor and the load generator "
                        f"alike (default {defaults.loop})")
    parser.add_argument("--goals", action="store_true",
                        help="run the five goal scenarios (about four minutes at 30 s a run) "
                        "and judge them")
    parser.add_argument("--sweep", help="comma-separated racer counts: one run per count and "
                        "target, and a plot of latency against racers")
    parser.add_argument("--db-dir", help="directory for the server's journal (e.g. /dev/shm)")
    parser.add_argument("--postgres", default=os.environ.get("DATABASE_URL") or POSTGRES_URL,
                        metavar="URL",
                        help="for the server-postgresql target: the PostgreSQL each run "
                        "creates a database of its own on, and drops after (default "
                        f"DATABASE_URL, else {POSTGRES_URL})")
    parser.add_argument("--nodes", type=int, default=defaults.nodes, metavar="N",
                        help="for the cluster target: N node processes, the clients spread "
                        f"over them in turn (default {defaults.nodes})")
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL") or REDIS_URL,
                        metavar="URL", help="for the cluster target: the Redis its nodes meet "
                        f"on (default REDIS_URL, else {REDIS_URL})")
    parser.add_argument("--lease-ttl", type=float, default=None, metavar="SECONDS",
                        help="for the cluster target: the nodes' --lease-ttl (default: the "
                        "server's)")
    parser.add_argument("--kill-owner-after", type=float, default=defaults.kill_owner_after,
                        metavar="SECONDS",
                        help="for the cluster target with --nodes 2 or more: SIGKILL node 0 "
                        "(the leader, owner of the races its clients made) SECONDS after the "
                        "go; clients resume on the next node, and the run reports each of its "
                        "racers' time from the kill to its next acknowledged move")
    parser.add_argument("--quick", action="store_true",
                        help="racers play quick races, formed by the server's lobby (up to 8 "
                        "a race; in a cluster on the leader, which places each started race "
                        "on a node), not private races of --race-size; no spectators")
    parser.add_argument("--spectators-on", choices=("spread", "others"),
                        default=defaults.spectators_on,
                        help="for the cluster target: spectator i on node i %% N (spread, the "
                        "default), or every spectator on the nodes but node 0, the owner of "
                        "the races its racers make (others)")
    parser.add_argument("--spectator-rate", type=float, default=defaults.spectator_rate,
                        metavar="PER_SECOND",
                        help="spectators start watching at this rate once the first race "
                        "runs (default: all at once); the warm-up and the duration are "
                        "lengthened by the time they take to come")
    parser.add_argument("--spectator-sweep", metavar="S,S,...",
                        help="comma-separated spectator counts: one run per count and target "
                        "(instead of --spectators), and a line per run on the spectators")
    parser.add_argument("--rated", action="store_true",
                        help="ratings on: racers claim their names and race rated races "
                        "(against a server target)")
    parser.add_argument("--scrape", type=float, default=defaults.scrape, metavar="SECONDS",
                        help="GET the server's /metrics every SECONDS of the measured window, "
                        "as Prometheus would (default: never); the round trips are reported")
    parser.add_argument(
        "--targets", default="server,server-ram,echo",
        help="comma-separated, from: " + ", ".join(TARGETS),
    )
    parser.add_argument("--json", type=Path, default=RESULTS / "load.json",
                        help="where to write the results")
    parser.add_argument("--write", action="store_true",
                        help="update the Load section of docs/performance.md")
    parser.add_argument("--generate", choices=TARGETS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--settings", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.generate:
        settings = Settings(**json.loads(args.settings))
        # The generator runs on the targets' loop too: the same client costs against both.
        with asyncio.Runner(loop_factory=event_loop_factory(settings.loop)) as runner:
            result = runner.run(generate(settings, args.url, args.generate))
        print(json.dumps(result), flush=True)
        return 0

    raise_file_limit()
    if args.priority is not None:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, args.priority)  # the parent samples on time, too
        except PermissionError:
            print(f"note: --priority {args.priority} is not permitted here (a negative nice "
                  "value needs root); running at the normal priority", file=sys.stderr)
            args.priority = None
    settings = Settings(
        racers=args.racers, race_size=args.race_size, think=args.think,
        spectators=args.spectators, duration=args.duration,
        warmup=min(args.warmup, args.duration / 2), db_dir=args.db_dir,
        loop=args.loop, priority=args.priority, scrape=args.scrape, postgres=args.postgres,
        nodes=args.nodes, redis=args.redis, rated=args.rated,
        kill_owner_after=args.kill_owner_after, lease_ttl=args.lease_ttl, quick=args.quick,
        spectators_on=args.spectators_on, spectator_rate=args.spectator_rate,
    )
    if settings.quick and (settings.spectators or settings.kill_owner_after):
        parser.error("--quick takes no spectators (--spectators 0) and no --kill-owner-after")
    if settings.kill_owner_after and (args.targets != "cluster" or settings.nodes < 2):
        parser.error("--kill-owner-after needs --targets cluster and --nodes 2 or more")
    if args.goals:
        rows, results = run_goals(settings)
        from bench.report import machine_line, markdown_table, update_section

        text = "\n".join([markdown_table(["goal", "measured", "verdict"], rows), "",
                          *caveats(results)]).rstrip()
        print(text)
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.with_name("load-goals.json").write_text(
            json.dumps({"goals": rows, "results": results}, indent=2) + "\n")
        if args.write:
            shown = " ".join(["python -m bench.load", *(argv if argv is not None
                                                        else sys.argv[1:])])
            update_section("load-goals", f"### Goals\n\n{text}\n\n{args.duration:g} s per run, "
                           f"event loop {settings.loop}. Command: "
                           f"`{shown}` ({machine_line()}).")
        return 0
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    loads = [int(n) for n in args.sweep.split(",")] if args.sweep else [settings.racers]
    watchers = ([int(n) for n in args.spectator_sweep.split(",")] if args.spectator_sweep
                else [settings.spectators])
    notes: list[str] = []
    results = []
    for racers, spectators, target in (
        (n, s, t) for n in loads for s in watchers for t in targets
    ):
        if target not in TARGETS:
            parser.error(f"unknown target {target!r}")
        if note_once(notes, unavailable(target, settings.loop), target):
            continue
        load = replace(settings, racers=racers, spectators=spectators)
        if load.spectator_rate > 0:  # measured once the last of them watches
            coming = spectators / load.spectator_rate
            load = replace(load, warmup=load.warmup + coming, duration=load.duration + coming)
        print(f"{target}: {load.racers} racers, {load.spectators} spectators, "
              f"{load.duration:g} s ...", file=sys.stderr, flush=True)
        results.append(run_target(target, load))
    if not results:
        print("nothing ran", file=sys.stderr)
        return 1
    notes += caveats(results)
    print(table(results))
    for line in (ratios(results) + store_lines(results) + cluster_lines(results)
                 + failover_lines(results) + spectator_lines(results)
                 + scrape_lines(results) + rating_lines(results, settings) + notes):
        print(line)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"settings": asdict(settings), "results": results},
                                    indent=2) + "\n")
    if args.write:
        shown = " ".join(["python -m bench.load", *(argv if argv is not None else sys.argv[1:])])
        if args.sweep:
            write_sweep_docs(results, shown, notes)
        else:
            write_docs(results, shown, notes)
    return 0


def rating_lines(results: list[dict[str, Any]], settings: Settings) -> list[str]:
    """With ``--rated``: how many ``rating`` frames each run's racers received (a rated
    finish sends one to each claimed racer), so a run says that ratings were on."""
    if not settings.rated:
        return []
    return [f"- {r['target']} at {r['racers']:,} racers, ratings on: the racers received "
            f"{r.get('ratings_received', 0):,} `rating` frames in the run"
            for r in results if r["target"] != "echo"]


def by_load(results: list[dict[str, Any]]) -> list[tuple[int, dict[str, dict[str, Any]]]]:
    """The runs of each load (racers, then spectators), by target, smallest load first."""
    grouped: dict[tuple[int, int], dict[str, dict[str, Any]]] = {}
    for r in results:
        grouped.setdefault((r["racers"], r["spectators"]), {})[r["target"]] = r
    return [(racers, runs) for (racers, _), runs in sorted(grouped.items())]


def store_lines(results: list[dict[str, Any]]) -> list[str]:
    """The store in PostgreSQL against the journal in SQLite on disk, per load: the server's
    CPU per move (and the database's own), and the move's p99."""
    lines = []
    for racers, runs in by_load(results):
        sqlite = runs.get("server")
        for name in ("server-postgresql", "server-postgresql-async"):
            postgres = runs.get(name)
            if sqlite is None or postgres is None:
                continue
            lines.append(
                f"- {racers:,} racers, {name} against server (SQLite): the server's CPU per "
                f"move {_ms(postgres['server_cpu_us_per_move'])} against "
                f"{_ms(sqlite['server_cpu_us_per_move'])} µs, plus "
                f"{_ms(postgres['database_cpu_us_per_move'])} µs in the database's backends; "
                f"move p99 {_ms(postgres['rtt_ms']['p99'])} against "
                f"{_ms(sqlite['rtt_ms']['p99'])} ms."
            )
    return lines


def cluster_lines(results: list[dict[str, Any]]) -> list[str]:
    """A cluster's nodes against one server (in-process bus, SQLite; and PostgreSQL) at
    the same load: CPU per move (every node's together) and move p99; and, with several
    nodes, the racers on the leader (node 0, which runs the races) against those on the
    others."""
    lines = []
    for racers, runs in by_load(results):
        cluster = runs.get("cluster")
        if cluster is None:
            continue
        for name in ("server", "server-postgresql"):
            single = runs.get(name)
            if single is None or not single["server_cpu_us_per_move"]:
                continue
            cpu = cluster["server_cpu_us_per_move"] / single["server_cpu_us_per_move"]
            p99 = cluster["rtt_ms"]["p99"] / single["rtt_ms"]["p99"]
            lines.append(
                f"- {racers:,} racers, cluster of {cluster['nodes']} against {name}: CPU per "
                f"move {_ms(cluster['server_cpu_us_per_move'])} against "
                f"{_ms(single['server_cpu_us_per_move'])} µs ({cpu:.2f}x), move p99 "
                f"{_ms(cluster['rtt_ms']['p99'])} against {_ms(single['rtt_ms']['p99'])} ms "
                f"({p99:.2f}x)."
            )
        by_node = cluster.get("rtt_by_node_ms", {})
        if len(by_node) > 1:
            leader, *others = (by_node[node] for node in sorted(by_node))
            lines.append(
                f"- {racers:,} racers, cluster of {cluster['nodes']}: move p50/p99 of racers "
                f"on the leader {_ms(leader['p50'])}/{_ms(leader['p99'])} ms, on the other "
                "nodes " + ", ".join(f"{_ms(o['p50'])}/{_ms(o['p99'])}" for o in others)
                + " ms; each node's CPU "
                + ", ".join(f"{percent:.0f}%" for percent in cluster["node_cpu_percent"]) + "."
            )
    return lines


#: The failover goal (issue 18): from the owner's SIGKILL to every racer of its races
#: moving again, p99 under this many milliseconds.
FAILOVER_P99_MS = 5000.0


def failover_lines(results: list[dict[str, Any]]) -> list[str]:
    """With ``--kill-owner-after``: the racers of node 0's races at its kill, how long they
    took to move again (p50/p99/max), how many never did, and the goal's verdict (every
    racer back, and p99 under :data:`FAILOVER_P99_MS`)."""
    lines = []
    for r in results:
        failover = r.get("failover")
        if not failover:
            continue
        back, ready = failover["back_ms"], failover["ready_ms"]
        met = (failover["never_back"] == 0 and back["p99"] is not None
               and back["p99"] < FAILOVER_P99_MS)
        lines.append(
            f"- {r['racers']:,} racers, cluster of {r['nodes']} (lease "
            f"{r['lease_ttl'] or 'default'}{' s' if r['lease_ttl'] else ''}), node 0 SIGKILLed "
            f"{r['kill_owner_after']:g} s after the go: {failover['stranded']:,} racers were in "
            f"its races; {back['count']:,} moved again, from the kill to their next "
            f"acknowledged move p50/p99/max {_seconds(back['p50'])}/{_seconds(back['p99'])}/"
            f"{_seconds(back['max'])} s (to the card of that move, less the racer's think: "
            f"{_seconds(ready['p50'])}/{_seconds(ready['p99'])}/{_seconds(ready['max'])} s); "
            f"{failover['never_back']:,} never did before the run "
            f"ended ({failover['resumed_connections']:,} connections resumed on another node). "
            f"Goal (p99 under {FAILOVER_P99_MS / 1000:g} s, every racer back): "
            + ("met" if met else "**not met**") + "."
        )
        resumed, stayed = failover.get("ready_ms_resumed"), failover.get("ready_ms_stayed")
        if resumed and stayed and resumed["count"] and stayed["count"]:
            lines.append(
                f"  - to the card, p50/p99: {_seconds(resumed['p50'])}/"
                f"{_seconds(resumed['p99'])} s for the {resumed['count']:,} racers who resumed "
                f"on another node, {_seconds(stayed['p50'])}/{_seconds(stayed['p99'])} s for "
                f"the {stayed['count']:,} whose connection lived on."
            )
        for taken in r.get("takeovers", []):
            phases = ", ".join(f"{phase.removesuffix('_ms')} {taken[phase]} ms"
                               for phase in TAKEOVER_PHASES if taken[phase] is not None)
            lines.append(
                f"  - a takeover of {taken['races']:,} races ({taken['sessions']:,} sessions "
                f"sent their state) done {taken['done_s']:.2f} s after the kill: {phases}."
            )
    return lines


def spectator_lines(results: list[dict[str, Any]]) -> list[str]:
    """For each cluster run with a single race (``--race-size`` at least ``--racers``): its
    spectators, where they were, their progress delay (by node) and updates a second,
    each node's CPU and the generator's over the measured window, each node's memory per
    idle connection, and the owner's publishes a second on the race's channel."""
    lines = []
    for r in results:
        if r["target"] != "cluster" or r["race_size"] < r["racers"]:
            continue
        delays = r["progress_spectators_ms"]
        by_node = ", ".join(
            f"node {node} {_ms(d['p50'])}/{_ms(d['p99'])}"
            for node, d in r.get("progress_spectators_by_node_ms", {}).items())
        rate = r["updates_per_spectator_per_second"]
        cpu = r["node_cpu_window_percent"] or r["node_cpu_percent"]
        publishes = r["race_channel_messages_per_second"]
        lines.append(
            f"- one race of {r['racers']:,}, {r['spectators']:,} spectators "
            f"({r['spectators_on']}, {r['connected']:,} connected): progress to spectators "
            f"p50/p99 {_ms(delays['p50'])}/{_ms(delays['p99'])} ms ({by_node or 'none timed'}), "
            + ("" if rate is None else f"{rate:.1f} updates/s each, ")
            + "node CPU " + ", ".join(f"{percent:.0f}%" for percent in cpu)
            + f", generator {r['generator_cpu_window_percent']:.0f}%; race channel "
            + ("—" if publishes is None else f"{publishes:.1f}") + " messages/s; idle KiB per "
            "connection " + ", ".join(f"{kib:.1f}" for kib in r["node_rss_per_connection_kib"])
            + f"; load average {r['load_average'][0]:.1f} → {r['load_average'][1]:.1f}."
        )
    return lines


def _seconds(milliseconds: float | None) -> str:
    return "—" if milliseconds is None else f"{milliseconds / 1000:.2f}"


def caveats(results: list[dict[str, Any]]) -> list[str]:
    """Lines saying which runs a busy machine or a saturated generator made slower."""
    notes = []
    for r in results:
        if max(r["server_cpu_wait_percent"], r["generator_cpu_wait_percent"]) > 10:
            notes.append(
                f"- {r['target']} at {r['racers']:,} racers: the machine was busy (load average "
                f"{r['load_average'][0]:.1f} to {r['load_average'][1]:.1f}): the target waited for "
                f"its CPU {r['server_cpu_wait_percent']:.0f}% of the run and the generator "
                f"{r['generator_cpu_wait_percent']:.0f}%, so these latencies are worse than "
                "the code's."
            )
        if r["generator_cpu_percent"] > 85:
            notes.append(
                f"- {r['target']} at {r['racers']:,} racers: the load generator used "
                f"{r['generator_cpu_percent']:.0f}% of its core, so its own queueing is in "
                "these latencies."
            )
    return notes


def note_once(notes: list[str], reason: str | None, target: str) -> bool:
    """Record (once) that ``target`` is skipped for ``reason``; whether it is skipped."""
    if reason is None:
        return False
    note = f"- {target}: skipped, {reason}."
    if note not in notes:
        print(note.removeprefix("- "), file=sys.stderr)
        notes.append(note)
    return True


if __name__ == "__main__":
    raise SystemExit(main())
