"""Chaos: a real server SIGKILLed again and again during bursts of moves.

Four racers race in two duels, each sending its next move as soon as the last one is
acknowledged. After a few acknowledgements (a number drawn at random) the server process
gets SIGKILL, right there in the burst. The journal must then hold every move a racer saw
acknowledged (every ``placed``), read from ``race_commands`` with the journal's own
parser. The server restarts on the same journal, the racers resume with their tokens and
carry on from the card they are sent. When both duels have ended a new pair starts, until
every kill is done; the result of every race, as journaled, must verify, and must hold
every acknowledged move where it was acknowledged.

``make test`` runs :data:`KILLS` kills; ``make chaos`` (``--chaos-kills N``) runs more.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from websockets.exceptions import WebSocketException

from engine import Position
from protocol import (
    CardToPlace,
    CreateRace,
    JoinRace,
    MovePlaced,
    Place,
    Progress,
    ProgressEntry,
    RaceFinished,
    RaceOptions,
    RacerStatus,
    RaceSnapshot,
)
from protocol.result import verify_result
from server.journal import Journal, command_from_json
from server.journal_file import read_journal
from server.race import Place as PlaceCommand
from tests.conftest import ServerProcess, run_server_process
from tests.server.wire_client import WireClient

#: Kills in ``make test``: a few seconds each (most of it the server starting again).
KILLS = 4

#: Acknowledged moves between a restart and the next kill: drawn from this range.
ACKS_BEFORE_KILL = (3, 12)

DUEL = RaceOptions(max_racers=2, min_racers=2, countdown=0, public=False, time_limit=600)

#: The statuses of a racer whose game is still going.
PLAYING = (RacerStatus.WAITING, RacerStatus.RACING)


@dataclass(frozen=True)
class Ack:
    """A move a racer saw acknowledged."""

    race: str
    racer: str
    move: int
    position: Position


@dataclass
class Racer:
    """One racer's session across the server's lives."""

    name: str
    client: WireClient
    token: str = field(init=False)
    racer_id: str = field(init=False)

    def __post_init__(self) -> None:
        self.token = self.client.welcome.resume
        self.racer_id = self.client.racer_id


class Chaos:
    """The server, the kills and the racers' acknowledgements."""

    def __init__(self, db: Path, kills: int, rng: random.Random) -> None:
        self.db = db
        self.kills = kills
        self.rng = rng
        self.acks: list[Ack] = []
        self.kills_done = 0
        self.races: list[str] = []
        self.up = asyncio.Event()
        self._server: ServerProcess | None = None
        self._stack = contextlib.ExitStack()
        self._since_start = 0
        self._threshold = rng.randint(*ACKS_BEFORE_KILL)
        self._restarting: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        """Why the server could not be restarted (every racer then gives up)."""

    @property
    def url(self) -> str:
        """Where the server listens now."""
        assert self._server is not None
        return self._server.url

    async def start(self) -> None:
        """Start the server on the journal (again)."""
        self._stack = contextlib.ExitStack()
        self._server = await asyncio.to_thread(
            self._stack.enter_context, run_server_process(self.db)
        )
        self._since_start = 0
        self._threshold = self.rng.randint(*ACKS_BEFORE_KILL)
        self.up.set()

    def close(self) -> None:
        """Stop the server (killed: nothing more to check)."""
        self._stack.close()

    def acknowledged(self, ack: Ack) -> None:
        """Count an acknowledgement; after enough of them, SIGKILL the server at once."""
        self.acks.append(ack)
        self._since_start += 1
        due = self._since_start >= self._threshold and self.kills_done < self.kills
        if due and self.up.is_set():
            assert self._server is not None
            self.up.clear()
            self._server.kill()
            self.kills_done += 1
            self._restarting = asyncio.create_task(self._restart())

    async def _restart(self) -> None:
        try:
            self.check_journal()
            self._stack.close()
            await self.start()
        except BaseException as failure:
            self._failure = failure
            self.up.set()  # wake the racers, to give up
            raise

    async def settled(self) -> None:
        """Wait for a restart under way to finish."""
        if self._restarting is not None:
            await self._restarting

    def journaled_moves(self) -> set[Ack]:
        """Every move in ``race_commands``, read with the journal's own reader and parser.

        Read-only: a read-write connection, the last one to close, would copy the killed
        server's log into the file and delete it, and the next start would refuse a
        journal marked open without its log.
        """
        with read_journal(self.db) as connection:
            rows = connection.execute("SELECT race_id, command FROM race_commands").fetchall()
        moves = set()
        for race, text in rows:
            command = command_from_json(text)
            if isinstance(command, PlaceCommand):
                moves.add(Ack(race, command.racer_id, command.move_number, command.position))
        return moves

    def check_journal(self) -> None:
        """Every acknowledged move is in the journal."""
        missing = set(self.acks) - self.journaled_moves()
        assert not missing, f"acknowledged but not journaled: {sorted(missing, key=str)}"

    async def resume(self, racer: Racer) -> None:
        """Connect again with the racer's token (waiting for the server to be up)."""
        with contextlib.suppress(Exception):
            await racer.client.close()
        while True:
            await self.up.wait()
            if self._failure is not None:
                raise AssertionError("the server could not be restarted") from self._failure
            try:
                racer.client = await WireClient.connect(self.url, racer.name, resume=racer.token)
                return
            except (OSError, WebSocketException, TimeoutError):
                await asyncio.sleep(0.05)  # killed while connecting: wait for the restart

    async def duel(self, ann: Racer, bob: Racer) -> str:
        """Open a duel between two racers; both hold their first card when it returns."""
        create, join = ann.client.next_id(), bob.client.next_id()
        await ann.client.send(CreateRace(options=DUEL, id=create))
        # The answer, not the last race's final snapshot, which may still be on its way.
        race = (await ann.client.expect(RaceSnapshot, reply_to=create)).race
        await bob.client.send(JoinRace(race=race, id=join))
        await bob.client.expect(RaceSnapshot, reply_to=join)
        self.races.append(race)
        return race

    async def race(self, racer: Racer, race: str) -> None:
        """Play ``race`` to the end as fast as the acknowledgements come, through kills."""
        while True:
            try:
                if await self._play(racer, race):
                    return
            except (OSError, WebSocketException, TimeoutError):
                pass  # the server was killed: resume once it is back
            await self.resume(racer)
            if Journal.load_result(self.db, race) is not None:
                return  # it ended while the racer was away (its last move acknowledged
                # to nobody): the race is not recovered, only its result is kept

    async def _play(self, racer: Racer, race: str) -> bool:
        """Play until the game is over (``True``) or the connection drops (raises)."""
        client = racer.client
        while True:
            message = await client.receive()
            if isinstance(message, RaceFinished) and message.race == race:
                return True
            lines: tuple[ProgressEntry, ...] = ()
            if isinstance(message, RaceSnapshot | Progress) and message.race == race:
                lines = message.progress if isinstance(message, RaceSnapshot) else message.racers
            if any(e.racer == racer.racer_id and e.status not in PLAYING for e in lines):
                return True
            if not isinstance(message, CardToPlace) or message.race != race:
                continue
            row, col = self.rng.choice(message.targets)
            request = client.next_id()
            await client.send(Place(race=race, move=message.move, row=row, col=col, id=request))
            placed = await client.expect(MovePlaced, reply_to=request)
            self.acknowledged(Ack(race, racer.racer_id, placed.move, (row, col)))
            if placed.status is not RacerStatus.RACING:
                return True

    def check_results(self) -> None:
        """Every race's journaled result verifies and holds every acknowledged move."""
        for race in self.races:
            result = Journal.load_result(self.db, race)
            assert result is not None, f"race {race} has no result"
            assert verify_result(result).ok, f"the result of {race} does not verify"
            moves = {entry.racer_id: entry.moves for entry in result.racers}
            for ack in (a for a in self.acks if a.race == race):
                assert moves[ack.racer][ack.move - 1] == ack.position, ack


#: Seconds a kill may take, restart and racing up to the next one included, before the
#: test fails rather than hangs.
SECONDS_PER_KILL = 30


async def run_chaos(db: Path, kills: int, seed: int) -> Chaos:
    """Race duels until ``kills`` kills are done; check the journal and every result."""
    chaos = Chaos(db, kills, random.Random(seed))
    await chaos.start()
    try:
        async with asyncio.timeout(SECONDS_PER_KILL * (kills + 1)):
            await _race_through_kills(chaos, kills)
    finally:
        chaos.close()
    return chaos


async def _race_through_kills(chaos: Chaos, kills: int) -> None:
    """Four racers, duel after duel, until the kills are done; then the checks."""
    racers = [
        Racer(name, await WireClient.connect(chaos.url, name, bot=True))
        for name in ("ann", "bob", "cy", "dee")
    ]
    while chaos.kills_done < kills:
        await chaos.settled()
        for racer in racers:  # fresh connections: a kill may have cut any of them
            await chaos.resume(racer)
        pairs = [(racers[0], racers[1]), (racers[2], racers[3])]
        duels = [await chaos.duel(ann, bob) for ann, bob in pairs]
        await asyncio.gather(*(
            chaos.race(racer, race)
            for race, pair in zip(duels, pairs, strict=True)
            for racer in pair
        ))
    await chaos.settled()
    chaos.check_journal()
    chaos.check_results()


async def test_acknowledged_moves_survive_sigkills_during_bursts_and_every_result_verifies(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    kills = int(request.config.getoption("--chaos-kills") or KILLS)
    chaos = await run_chaos(tmp_path / "chaos.db", kills, seed=kills)
    assert chaos.kills_done == kills
    assert len(chaos.acks) >= kills * ACKS_BEFORE_KILL[0]
    unanswered = len(chaos.journaled_moves() - set(chaos.acks))
    print(
        f"\nchaos: {chaos.kills_done} SIGKILLs, {len(chaos.acks)} moves acknowledged, "
        f"all {len(chaos.acks)} in the journal (and {unanswered} journaled whose "
        f"acknowledgement a kill cut off); {len(chaos.races)} races, every result verified"
    )
