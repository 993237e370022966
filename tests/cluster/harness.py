"""Three real node processes on one PostgreSQL database and one Redis, racers and
spectators on them, and what the journal holds afterwards.

A cluster here is ``foursquare serve --cluster`` run three times (named ``n1`` to ``n3``)
with a short lease, on a database and a Redis channel prefix of the test's own. Racers are
the real client's bots (:class:`~client.bot_runner.Bot` on a
:class:`~client.connection.Connection` given every node's address, its own node first),
which record everything they are sent; a spectator is a connection that watches.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from client.bot_runner import Bot
from client.bots import get_strategy
from client.connection import Backoff, Connection, ConnectionFailed
from protocol import (
    CreateRace,
    Error,
    JoinRace,
    MovePlaced,
    QuickRace,
    RaceFinished,
    Role,
    ServerMessage,
    Spectate,
    Welcome,
)
from protocol.result import RaceResult, verify_result
from server.cluster import RENEWALS_PER_LEASE
from tests.conftest import ServerProcess, run_server_process

#: Seconds a node's lease lasts unrenewed in these tests (the default too).
LEASE_TTL = 2.0

#: Seconds a test waits for something that should come (a leader, a race's end).
PATIENCE = 60.0

#: Reconnection for the tests' clients: quick, and long enough to outlast a failover.
BACKOFF = Backoff(first=0.2, ceiling=1.0, attempts=60)


@dataclass
class Cluster:
    """Three nodes, by name."""

    nodes: dict[str, ServerProcess]
    db: str
    lease_ttl: float = LEASE_TTL

    def addresses(self, first: str) -> list[str]:
        """Every node's address, ``first``'s first."""
        names = list(self.nodes)
        at = names.index(first)
        return [self.nodes[name].url for name in names[at:] + names[:at]]

    def leader(self) -> str | None:
        """The node that holds the lobby's lease now, by the store."""
        return self.owner("lobby")

    def owner(self, resource: str) -> str | None:
        """The node that holds ``resource``'s lease now (a race's id), by the store."""
        with psycopg.connect(self.db, autocommit=True) as connection:
            row = connection.execute(
                "SELECT owner FROM leases WHERE resource_id = %s"
                " AND expires_at > extract(epoch FROM clock_timestamp())", (resource,)
            ).fetchone()
        return None if row is None else str(row[0])

    async def wait_for_every_node_live(self) -> None:
        """Once every node holds a lease (as each does once it has leased race ids
        ahead), and the leader has looked at the leases twice since: its map of the nodes'
        loads, where it places races, then names them all."""
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            with psycopg.connect(self.db, autocommit=True) as connection:
                live = {str(row[0]) for row in connection.execute(
                    "SELECT DISTINCT owner FROM leases"
                    " WHERE expires_at > extract(epoch FROM clock_timestamp())"
                )}
            if live >= set(self.nodes):
                await asyncio.sleep(2 * self.lease_ttl / RENEWALS_PER_LEASE)
                return
            await asyncio.sleep(0.05)
        raise AssertionError(f"not every node holds a lease: {sorted(live)}")

    def log(self, name: str) -> list[dict[str, object]]:
        """Node ``name``'s log lines so far."""
        path = self.nodes[name].db_path.with_suffix(".log")
        lines = []
        for line in path.read_text().splitlines():
            with contextlib.suppress(ValueError):
                lines.append(json.loads(line))
        return lines

    async def wait_for_owner(self, resource: str, other_than: str | None = None) -> str:
        """The node that holds ``resource``'s lease, once one other than ``other_than``
        does."""
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            owner = self.owner(resource)
            if owner is not None and owner != other_than:
                return owner
            await asyncio.sleep(0.05)
        raise AssertionError(f"no node other than {other_than} took {resource} up")

    def logged(self, name: str, event: str) -> list[dict[str, object]]:
        """Node ``name``'s log lines of ``event``."""
        return [line for line in self.log(name) if line.get("event") == event]

    def recovered(self, names: Iterable[str]) -> list[object]:
        """The races nodes ``names`` rebuilt from the store (taken up or over), in turn."""
        return [line["race"] for name in names for line in self.logged(name, "race_recovered")]

    async def wait_for_leader(self, other_than: str | None = None) -> str:
        """The node that leads, once one does (and has said so), other than ``other_than``."""
        deadline = time.monotonic() + PATIENCE
        while time.monotonic() < deadline:
            for name in self.nodes:
                if name != other_than and any(
                    line.get("event") == "leader" for line in self.log(name)
                ) and self.leader() == name:
                    return name
            await asyncio.sleep(0.1)
        raise AssertionError("no node became the leader")


@contextlib.contextmanager
def running_cluster(
    tmp_path: Path, db: str, redis_url: str, prefix: str, count: int = 3,
    lease_ttl: float = LEASE_TTL, extra: Sequence[str] = (),
) -> Iterator[Cluster]:
    """``count`` nodes (``n1``...), started in order, stopped (or killed) at the end, each
    holding its leases for ``lease_ttl`` seconds; ``extra``: more options of ``foursquare
    serve`` for each."""
    with contextlib.ExitStack() as stack:
        nodes = {
            f"n{index}": stack.enter_context(run_server_process(
                tmp_path / f"n{index}.db", "--cluster", redis_url, "--cluster-prefix", prefix,
                "--node-id", f"n{index}", "--lease-ttl", str(lease_ttl), *extra, db=db,
            ))
            for index in range(1, count + 1)
        }
        yield Cluster(nodes, db, lease_ttl)


class Racer(Bot):
    """A bot that keeps everything it is sent. It plays greedy, whose games last: a random
    player's game can be lost in a few cards, before the fault a test makes mid-race."""

    def __init__(
        self, addresses: Sequence[str], name: str, pace: float,
        request: QuickRace | CreateRace | JoinRace | None = None,
    ) -> None:
        """A racer on ``addresses[0]`` (the others in turn when it is gone) who sends
        ``request`` (a quick race unless given) and plays."""
        super().__init__(
            Connection(addresses, name, bot=True, backoff=BACKOFF), request or QuickRace(),
            get_strategy("greedy"), pace=pace,
        )
        self.seen: list[ServerMessage] = []

    async def receive(self, message: ServerMessage) -> str | None:
        """Keep ``message``, then play."""
        self.seen.append(message)
        return await super().receive(message)

    def acknowledged(self) -> dict[int, tuple[int, int]]:
        """Every move the server acknowledged (``placed``), by move number."""
        return {m.move: m.position for m in self.seen if isinstance(m, MovePlaced)}

    def errors(self) -> list[Error]:
        """Every error the racer was sent."""
        return [m for m in self.seen if isinstance(m, Error)]

    def welcomes(self) -> int:
        """How many times the racer was welcomed (1, then one per resume)."""
        return sum(isinstance(m, Welcome) for m in self.seen)


@dataclass
class Spectator:
    """A connection that watches one race through every reconnection."""

    addresses: Sequence[str]
    race: str
    seen: list[ServerMessage] = field(default_factory=list)

    async def run(self) -> RaceFinished:
        """Watch until the race's ``finished``."""
        connection = Connection(
            self.addresses, "watcher", role=Role.SPECTATOR, backoff=BACKOFF
        )
        async for message in connection.messages():
            self.seen.append(message)
            if isinstance(message, Welcome) and not message.resumed:
                await connection.send(Spectate(race=self.race))
            if isinstance(message, RaceFinished):
                await connection.close()
                return message
        raise ConnectionFailed("the spectator's connection ended before the race did")


async def race_of(racers: Sequence[Racer]) -> str:
    """The race the racers are seated in, once all are in the same one."""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        races = {racer.tracker.race for racer in racers}
        if len(races) == 1 and None not in races:
            race = races.pop()
            assert race is not None
            return race
        await asyncio.sleep(0.05)
    raise AssertionError(f"the racers are not in one race: {[r.tracker.race for r in racers]}")


async def moves_made(racer: Racer, count: int) -> None:
    """Wait until ``racer`` has ``count`` moves acknowledged."""
    deadline = time.monotonic() + PATIENCE
    while len(racer.acknowledged()) < count:
        assert time.monotonic() < deadline, "the racer stopped moving"
        await asyncio.sleep(0.02)


def stored_moves(db: str, race: str) -> dict[str, list[int]]:
    """The move numbers of each racer's ``place`` commands in the journal, in order."""
    with psycopg.connect(db, autocommit=True) as connection:
        rows = connection.execute(
            "SELECT command FROM race_commands WHERE race_id = %s ORDER BY seq", (race,)
        ).fetchall()
    moves: dict[str, list[int]] = {}
    for (text,) in rows:
        command = json.loads(text)
        if command["kind"] == "place":
            moves.setdefault(command["racer_id"], []).append(command["move_number"])
    return moves


def check_result(db: str, race: str, racers: Sequence[Racer], tmp_path: Path) -> RaceResult:
    """What every racer saw against what the journal holds: the stored result verifies
    (``foursquare result`` then ``foursquare verify``, as commands), holds every move each
    racer had acknowledged, and the journal holds each move once."""
    printed = subprocess.run(
        [sys.executable, "-m", "cli.main", "result", race, "--db", db],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    path = tmp_path / f"{race}.json"
    path.write_text(printed)
    verified = subprocess.run(
        [sys.executable, "-m", "cli.main", "verify", str(path)],
        capture_output=True, text=True, timeout=60,
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr
    result = RaceResult.from_json(printed)
    assert verify_result(result).ok
    by_racer = {entry.racer_id: entry for entry in result.racers}
    journal = stored_moves(db, race)
    for racer in racers:
        you = racer.tracker.you
        assert you is not None
        entry = by_racer[you]
        for move, position in racer.acknowledged().items():
            assert tuple(entry.moves[move - 1]) == tuple(position), (you, move)
        numbers = journal.get(you, [])
        assert numbers == list(range(1, len(numbers) + 1)), f"{you}: {numbers}"
        assert len(numbers) == len(entry.moves)
        finished = racer.tracker.finished  # what the racer was told is what is stored
        assert finished is not None and finished.seed == result.seed
        assert [s.moves for s in finished.standings] == [r.moves for r in result.racers]
    return result


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class ThrowawayRedis:
    """A ``redis-server`` of the test's own on a free port (from the binary on the
    machine), to stop and start again: the machine's shared Redis is never touched."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            raise AssertionError(
                "redis-server is not on this machine: install it (apt-get install redis-server)"
            )
        self.binary = binary
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start it, and wait until it answers."""
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                assert time.monotonic() < deadline, "the throwaway redis-server did not start"
                time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: every connection to it is cut, nothing of it is kept."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


async def foursquare(*argv: str) -> tuple[int, str]:
    """Run ``foursquare`` as a command of its own: its exit status and what it printed."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "cli.main", *argv,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), PATIENCE)
    assert process.returncode is not None
    return process.returncode, out.decode()
