"""Generated traffic against the message handlers of one real server.

:class:`HandlerMachine` is a hypothesis state machine. :func:`fuzz_server` starts one
server on a free port for a whole run (starting one per example would cost more than the
example); each example connects a few fuzz clients and an honest duel to it. A step is one
of: a well-formed message of any client type with adversarial but type-correct values
(other racers' races, made-up and lower-cased race codes, moves out of turn and out of
range, a second ``hello``, leave, ready and resign in every phase, host tokens that are
not the host's, ``create_race`` and ``create_tournament`` with options at their bounds),
the same from several clients at once, a legal move, a malformed or fragmented or
oversize frame, a dropped connection, a resume, or a stranger's connection.

After every step the checks hold: every frame the server sent decodes with
:func:`protocol.decode_server`; every request is answered (``reply_to``) by the message
``docs/protocol.md`` lists for it or by an ``error`` whose code is in its error-code table,
never ``internal_error``; every close code is in its close-code table, never 1011; the
server logged no internal or journal error and answers ``/healthz``; every card a racer is
sent is the stock's card for that move; no board holds a card that its viewer, while still
racing in that race, has not drawn, nor any beyond the fog line; every ``finished``
verifies. The honest duel, played one move a step alongside, gets every move accepted,
never an error, and a result that verifies.

``make test`` runs a bounded number of examples (``tests/server/test_handler_fuzz.py``);
``make fuzz`` runs it for most of an hour (``tests/fuzz.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from engine import Adjacency, Card, Ruleset, commitment, deal
from protocol import (
    CLIENT_MESSAGES,
    Boards,
    CardToPlace,
    ClientMessage,
    CreateRace,
    CreateTournament,
    Error,
    ErrorCode,
    ExportTournament,
    Hello,
    HostAction,
    JoinRace,
    JoinTournament,
    LeaveRace,
    LeaveTournament,
    ListRaces,
    MovePlaced,
    Ok,
    Ping,
    Place,
    Progress,
    ProtocolError,
    QuickRace,
    RaceFinished,
    RaceList,
    RaceOptions,
    RacerStatus,
    RaceSnapshot,
    RaceState,
    Ready,
    Resign,
    Role,
    SeedPolicy,
    ServerMessage,
    SetArenaAvailable,
    Spectate,
    TournamentControl,
    TournamentCreated,
    TournamentFormat,
    TournamentOptions,
    TournamentState,
    WatchTournament,
    Welcome,
    decode_client,
    decode_server,
    encode,
)
from protocol.daily import DailyRace, GetDaily
from protocol.names import BadName, normalise_name
from protocol.players import Board, ClaimName, GetLeaderboard, GetProfile
from protocol.result import verify_result
from protocol.tournament import (
    TournamentClientMessage,
    TournamentServerMessage,
    encode_tournament,
)
from server.app import RaceServer
from server.logs import logger as server_logger
from server.race import random_seed
from tests.conftest import fast_config

#: Seconds an answer may take on a loaded machine before the step fails: a winnable deal
#: waits for up to a few searches of the server's search budget (3 s) ahead of it.
ANSWER_TIMEOUT = 30.0

DOCS = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"

#: What ``docs/protocol.md`` ("Answers at a glance") says answers each request.
ANSWERS: dict[str, frozenset[str]] = {
    "hello": frozenset({"welcome"}),
    "quick_race": frozenset({"race"}),
    "create_race": frozenset({"race"}),
    "join_race": frozenset({"race"}),
    "leave_race": frozenset({"ok"}),
    "list_races": frozenset({"races"}),
    "ready": frozenset({"ok"}),
    "place": frozenset({"placed"}),
    "resign": frozenset({"ok"}),
    "spectate": frozenset({"race"}),
    "ping": frozenset({"pong"}),
    "create_tournament": frozenset({"tournament_created"}),
    "tournament_control": frozenset({"tournament"}),
    "join_tournament": frozenset({"tournament"}),
    "watch_tournament": frozenset({"tournament"}),
    "leave_tournament": frozenset({"tournament"}),
    "arena_available": frozenset({"tournament"}),
    "export_tournament": frozenset({"tournament_export"}),
    "claim_name": frozenset({"player_key"}),
    "get_leaderboard": frozenset({"leaderboard"}),
    "get_profile": frozenset({"profile"}),
    "daily_race": frozenset({"race"}),
    "get_daily": frozenset({"daily"}),
}

#: The errors a frame that does not decode may get.
DECODE_ERRORS = frozenset(
    {ErrorCode.BAD_FRAME, ErrorCode.BAD_MESSAGE, ErrorCode.UNKNOWN_TYPE, ErrorCode.FRAME_TOO_LARGE}
)

#: Server log events that mean a bug or a failing server, whatever their level.
BAD_EVENTS = frozenset(
    {"internal_error", "journal_error", "server_failing", "par_error", "checkpoint_error"}
)

#: Close code 1006: the connection ended without a close frame (dropped).
ABNORMAL_CLOSURE = 1006

#: A message in more fragments than this closes the connection with 1009.
MAX_FRAGMENTS = 64

RACE_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789abcz019_-"
TOKEN_ALPHABET = "abcdef0123456789ABCXYZ_-"
TOURNAMENT_CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ0123456789"


def _documented(section: str) -> frozenset[str]:
    """The first column of the table under ``## section`` in docs/protocol.md."""
    text = DOCS.read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `?([a-z_0-9]+)`? \|", body, flags=re.MULTILINE)
    return frozenset(rows) - {"code"}  # the header row


DOCUMENTED_ERRORS = _documented("Error codes")
DOCUMENTED_CLOSES = frozenset(int(code) for code in _documented("Close codes"))


# ------------------------------------------------------------------ the server


class SeedBook:
    """The fuzz server's seed source: random seeds, each remembered by its commitment, so
    that the checks can deal the stock of any race from the commitment it publishes."""

    def __init__(self) -> None:
        self._seeds: dict[str, str] = {}
        self._stocks: dict[str, list[Card]] = {}

    def __call__(self) -> str:
        seed = random_seed()
        self._seeds[commitment(seed)] = seed
        return seed

    def stock(self, committed: str) -> list[Card] | None:
        """The stock behind ``committed``, if this book dealt it."""
        if committed not in self._stocks:
            seed = self._seeds.get(committed)
            if seed is None:
                return None
            self._stocks[committed] = deal(seed)
        return self._stocks[committed]


class LogWatch(logging.Handler):
    """Keeps every server log line that reports a bug or a failure."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.found: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        try:
            event = json.loads(line).get("event")
        except ValueError:
            event = None
        if record.levelno >= logging.ERROR or event in BAD_EVENTS:
            self.found.append(line)


@dataclass
class FuzzServer:
    """One real server for a whole run, and the event loop its clients share with it."""

    runner: asyncio.Runner
    server: RaceServer
    seeds: SeedBook
    log: LogWatch
    host: str
    port: int
    tally: Counter[str] = field(default_factory=Counter)
    """Examples, steps, requests sent and answers by kind, over the run."""

    @property
    def url(self) -> str:
        """The websocket URL."""
        return self.server.url

    async def healthz(self) -> bytes:
        """The raw HTTP answer to ``GET /healthz``."""
        reader, writer = await asyncio.open_connection(self.host, self.port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: fuzz\r\nConnection: close\r\n\r\n")
        try:
            return await asyncio.wait_for(reader.read(), ANSWER_TIMEOUT)
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


@contextlib.contextmanager
def fuzz_server(db_path: Path) -> Iterator[FuzzServer]:
    """Start the real server on a free port with a fresh journal, for the whole run.

    Its par searches get a short budget: every example finishes races, and the searches
    would otherwise queue for seconds each. Its log lines at INFO go to a
    :class:`LogWatch` only (some internal errors are logged at INFO).
    """
    seeds = SeedBook()
    config = dataclasses.replace(fast_config(db_path), seed_source=seeds, par_budget=0.05)
    watch = LogWatch()
    saved = server_logger.level, server_logger.propagate
    server_logger.addHandler(watch)
    server_logger.setLevel(logging.INFO)
    server_logger.propagate = False
    runner = asyncio.Runner()
    server = RaceServer(config)
    try:
        runner.run(server.start())
        yield FuzzServer(runner, server, seeds, watch, config.host, server.port)
    finally:
        with contextlib.suppress(Exception):
            runner.run(server.stop())
        runner.close()
        server_logger.removeHandler(watch)
        server_logger.setLevel(saved[0])
        server_logger.propagate = saved[1]


# ------------------------------------------------------------------ the checks


@dataclass
class RaceSeen:
    """What one session has been told about one race."""

    stock: list[Card] | None = None
    committed: str | None = None
    fog: bool = True
    racer: bool = False
    """In the race's latest snapshot's racers."""
    drawn: int = 0
    """Cards this session has drawn in the race (its latest card's move number)."""
    over: bool = False
    """This session's game in the race is over (or the race is)."""
    card: CardToPlace | None = None
    """The card in hand, until it is placed."""


class Wire:
    """Checks every message one session receives, in order: the card rules, the fog line
    and every result. Problems are added to ``problems`` (shared by the run)."""

    def __init__(
        self, me: str, seeds: SeedBook, problems: list[str], tally: Counter[str]
    ) -> None:
        self.me = me
        self.seeds = seeds
        self.problems = problems
        self.tally = tally
        """How many of each check ran."""
        self.races: dict[str, RaceSeen] = {}

    def problem(self, text: str) -> None:
        """Record a broken rule."""
        self.problems.append(f"{self.me}: {text}")

    def dealt(self, race: str, what: str) -> tuple[RaceSeen, list[Card]] | None:
        """What was seen of ``race`` and its stock; ``None`` (a problem) if its snapshot,
        which publishes the commitment, has not come first."""
        seen = self.races.get(race)
        if seen is None or seen.stock is None:
            self.problem(f"{what} for race {race} before its snapshot")
            return None
        return seen, seen.stock

    def feed(self, message: Answer) -> None:
        """Check one message."""
        match message:
            case RaceSnapshot():
                self._snapshot(message)
            case CardToPlace():
                self._card(message)
            case MovePlaced():
                self._placed(message)
            case Progress():
                self._mine(message.race, message.racers)
            case Boards():
                self._boards(message)
            case RaceFinished():
                self._finished(message)
            case Ok(in_reply_to="resign", race=str(race)) if race in self.races:
                self.races[race].over = True

    def _snapshot(self, snapshot: RaceSnapshot) -> None:
        seen = self.races.setdefault(snapshot.race, RaceSeen())
        if seen.committed is not None and seen.committed != snapshot.commitment:
            self.problem(f"race {snapshot.race} changed its commitment")
        seen.committed = snapshot.commitment
        seen.stock = self.seeds.stock(snapshot.commitment)
        if seen.stock is None:
            self.problem(f"race {snapshot.race} commits to a seed the server was not dealt")
        seen.fog = snapshot.options.fog
        seen.racer = any(info.racer == self.me for info in snapshot.racers)
        if snapshot.state is RaceState.FINISHED:
            seen.over = True
        self._mine(snapshot.race, snapshot.progress)

    def _mine(self, race: str, lines: tuple[Any, ...]) -> None:
        seen = self.races.get(race)
        for line in lines:
            if seen is not None and line.racer == self.me and line.status not in (
                RacerStatus.WAITING,
                RacerStatus.RACING,
            ):
                seen.over = True
                seen.card = None

    def _card(self, card: CardToPlace) -> None:
        dealt = self.dealt(card.race, "a card")
        if dealt is None:
            return
        seen, stock = dealt
        self.tally["cards checked"] += 1
        if card.card != stock[card.move - 1]:
            self.problem(f"card {card.move} of {card.race} is {card.card}, not the stock's")
        if seen.over:
            self.problem(f"a card for move {card.move} of {card.race} after the game was over")
        seen.drawn = max(seen.drawn, card.move)
        seen.card = card

    def _placed(self, placed: MovePlaced) -> None:
        dealt = self.dealt(placed.race, "a placed card")
        if dealt is None:
            return
        seen, stock = dealt
        if placed.card != stock[placed.move - 1] or placed.move > seen.drawn:
            self.problem(f"move {placed.move} of {placed.race} placed a card not drawn")
        if seen.card is not None and seen.card.move <= placed.move:
            seen.card = None
        if placed.status is not RacerStatus.RACING:
            seen.over = True

    def _boards(self, message: Boards) -> None:
        dealt = self.dealt(message.race, "a board")
        if dealt is None:
            return
        seen, stock = dealt
        for board in message.boards:
            cards = Counter(card for pile in board.piles for card in pile.cards)
            # A board after n moves holds exactly the stock's first n cards.
            if cards != Counter(stock[: board.shown]):
                self.problem(f"a board of {message.race} does not hold its {board.shown} moves")
            if message.fog_line is not None and board.shown > message.fog_line:
                self.problem(f"a board of {message.race} shows past the fog line")
            self.tally["boards checked"] += 1
            if board.racer == self.me:
                seen.drawn = max(seen.drawn, board.shown)
                continue
            if not (seen.racer and seen.fog and not seen.over):
                continue
            self.tally["rivals' boards checked against the viewer's draw"] += 1
            if board.shown > seen.drawn:
                self.problem(
                    f"racer sees {board.shown} cards of a board in {message.race} "
                    f"having drawn {seen.drawn}"
                )

    def _finished(self, finished: RaceFinished) -> None:
        seen = self.races.get(finished.race)
        if seen is not None:
            seen.over = True
            seen.card = None
            if seen.committed is not None and seen.committed != finished.commitment:
                self.problem(f"{finished.race} finished with another commitment")
        if commitment(finished.seed) != finished.commitment:
            self.problem(f"{finished.race} revealed a seed that does not match")
        self.tally["results verified"] += 1
        verdict = verify_result(finished.to_result())
        if not verdict.ok:
            self.problem(f"the result of {finished.race} does not verify: {verdict}")


# ------------------------------------------------------------------ the clients


class FuzzClient:
    """A session on the fuzz server: its connection (replaced on resume), everything it
    was sent across its connections, and the checks on it."""

    def __init__(
        self, label: str, role: Role, bot: bool, problems: list[str], tally: Counter[str]
    ) -> None:
        self.label = label
        self.role = role
        self.bot = bot
        self.problems = problems
        self.tally = tally
        self.welcome: Welcome | None = None
        self.connection: ClientConnection | None = None
        self.received: list[Answer] = []
        self.wire: Wire | None = None
        self.closes: list[int | None] = []
        """The close code of every connection the server closed (``None``: no close frame)."""
        self._arrived = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self._ids = itertools.count(1000)

    @property
    def session(self) -> str:
        """The session id (also the racer id)."""
        assert self.welcome is not None
        return self.welcome.session

    @property
    def is_open(self) -> bool:
        """Whether the current connection is still up."""
        return self.connection is not None and self._reader is not None and not self._reader.done()

    def next_id(self) -> int:
        """A request id of its own."""
        return next(self._ids)

    async def send(self, frame: bytes | str | list[bytes]) -> None:
        """Send one frame (a list: one message in fragments) on the current connection."""
        assert self.connection is not None, f"{self.label} has not connected"
        await self.connection.send(frame)

    async def open(self, url: str, seeds: SeedBook) -> None:
        """Connect and say hello, or resume the session on a new connection."""
        connection = await connect(url, compression=None, max_size=None, open_timeout=10)
        resume = self.welcome.resume if self.welcome is not None else None
        hello = Hello(name=self.label, bot=self.bot, role=self.role, resume=resume, id=1)
        await connection.send(encode(hello))
        welcome = decode_server(await asyncio.wait_for(connection.recv(), ANSWER_TIMEOUT))
        assert isinstance(welcome, Welcome), welcome
        assert resume is None or (welcome.resumed and welcome.session == self.session)
        self.welcome = welcome
        if self.wire is None:
            self.wire = Wire(welcome.session, seeds, self.problems, self.tally)
        self.connection = connection
        self._reader = asyncio.create_task(self._read(connection))

    async def _read(self, connection: ClientConnection) -> None:
        try:
            async for frame in connection:
                try:
                    message = decode_server(frame)
                except ProtocolError as error:
                    self.problems.append(f"{self.label}: an undecodable frame: {error}")
                    continue
                self.received.append(message)
                assert self.wire is not None
                self.wire.feed(message)
                self._pulse()
        except ConnectionClosed:
            pass
        finally:
            received = connection.protocol.close_rcvd
            self.closes.append(None if received is None else received.code)
            self._pulse()

    def _pulse(self) -> None:
        self._arrived.set()
        self._arrived = asyncio.Event()

    async def wait_for(
        self, wanted: Callable[[Answer], bool], since: int
    ) -> Answer | None:
        """The first message from index ``since`` on that is ``wanted``; ``None`` if the
        connection closes first. Fails the step if none comes in time."""
        async with asyncio.timeout(ANSWER_TIMEOUT):
            while True:
                for message in self.received[since:]:
                    if wanted(message):
                        return message
                since = len(self.received)
                if not self.is_open:
                    return None
                await self._arrived.wait()

    async def closed(self) -> int | None:
        """Wait until the current connection has closed; its close code."""
        async with asyncio.timeout(ANSWER_TIMEOUT):
            while self.is_open:
                await self._arrived.wait()
        return self.closes[-1] if self.closes else None

    async def drop(self) -> None:
        """Cut the connection without a close frame, as a network failure would."""
        if self.connection is not None and self.is_open:
            self.connection.transport.abort()
            await self.closed()

    async def close(self) -> None:
        """Close the connection and stop reading."""
        if self.connection is not None:
            await self.connection.close()
        if self._reader is not None:
            await self._reader

    def card_in_hand(self) -> CardToPlace | None:
        """The card this session must place now in some race, if any."""
        if self.wire is None:
            return None
        cards = [seen.card for seen in self.wire.races.values() if seen.card and not seen.over]
        return cards[-1] if cards else None


Request = ClientMessage | TournamentClientMessage
"""Any message a client sends."""

Answer = ServerMessage | TournamentServerMessage
"""Any message the server sends."""

def frame_of(message: Request) -> bytes:
    """The frame for any request (:func:`protocol.encode` is not typed for tournaments)."""
    match message:
        case (
            CreateTournament() | TournamentControl() | JoinTournament() | LeaveTournament()
            | SetArenaAvailable() | WatchTournament() | ExportTournament()
        ):
            return encode_tournament(message)
        case _:
            return encode(message)


def is_answer(request: Request) -> Callable[[Answer], bool]:
    """Whether a message answers ``request``: its ``reply_to``, or an error that cannot
    carry one (a rate limit is refused before the message is read)."""

    def answers(message: Answer) -> bool:
        if message.reply_to == request.id:
            return True
        return (
            isinstance(message, Error)
            and message.reply_to is None
            and message.code is ErrorCode.RATE_LIMITED
        )

    return answers


def is_refusal(message: Answer) -> bool:
    """Whether a message is the ``error`` that answers a frame that does not decode."""
    return isinstance(message, Error) and message.code in DECODE_ERRORS | {
        ErrorCode.RATE_LIMITED
    }


# ------------------------------------------------------------------ strategies

#: Values at the bounds, and anything in between.
def bounded(low: int, high: int, *special: int) -> st.SearchStrategy[int]:
    """An integer from ``low`` to ``high``, often one of the bounds (or ``special``)."""
    return st.sampled_from([low, high, *special]) | st.integers(low, high)


yes_or_no = st.sampled_from([True, False])
names = st.text(min_size=1, max_size=32).filter(lambda s: s.isprintable() and s.strip() == s)


def _as_a_player_name(text: str) -> str | None:
    """``text`` as the server would name a player, or ``None`` if it is no name."""
    try:
        return normalise_name(text)
    except BadName:
        return None


#: Names ``hello`` accepts as they are (normalised already).
player_names = st.text(min_size=1, max_size=32).map(_as_a_player_name).filter(
    lambda name: name is not None
).map(str)
made_up_races = st.text(alphabet=RACE_CODE_ALPHABET, min_size=1, max_size=32)
made_up_tokens = st.text(alphabet=TOKEN_ALPHABET, min_size=16, max_size=128)
made_up_tournaments = st.text(alphabet=TOURNAMENT_CODE_ALPHABET, min_size=4, max_size=16)
made_up_racers = st.text(alphabet="abcdefABCDEF0123456789_.:-", min_size=1, max_size=64)
positions = st.tuples(st.integers(-5, 5), st.integers(-5, 5))


@st.composite
def rulesets(draw: st.DrawFn) -> Ruleset:
    """Any valid ruleset (the grid's piles must hold the deck)."""
    grid = draw(st.integers(2, 6))
    least = -(-40 // grid**2)
    return Ruleset(
        grid_size=grid,
        pile_capacity=draw(bounded(least, 10)),
        face_down_limit=draw(bounded(0, 36, 4)),
        adjacency=draw(st.sampled_from(Adjacency)),
    )


def seed_policy(draw: st.DrawFn, ruleset: Ruleset) -> SeedPolicy:
    """``winnable`` half the time for the published rules (their winnable deals come from
    a stock) and one time in eight for others, whose search may take the server's whole
    search budget (seconds) and end in ``no_winnable_deal``: often enough to hold a few
    searches in flight, not so often that the run waits on them."""
    odds = 2 if ruleset == Ruleset() else 8
    return SeedPolicy.WINNABLE if draw(st.integers(1, odds)) == odds else SeedPolicy.RANDOM


@st.composite
def race_options(draw: st.DrawFn) -> RaceOptions:
    """``create_race`` options, every one often at a bound."""
    max_racers = draw(bounded(1, 1000, 2, 3))
    ruleset = draw(st.just(Ruleset()) | rulesets())
    return RaceOptions(
        max_racers=max_racers,
        min_racers=draw(bounded(1, max_racers)),
        time_limit=draw(bounded(1, 86_400, 2, 600)),
        ruleset=ruleset,
        # The first choice is the one drawn most: a race that starts at once, and
        # spectators behind the fog, so that moves and boards are in play.
        spectators=draw(yes_or_no),
        fog=draw(yes_or_no),
        public=draw(yes_or_no),
        auto_start=draw(yes_or_no),
        countdown=draw(bounded(0, 60, 1)),
        seed_policy=seed_policy(draw, ruleset),
    )


@st.composite
def tournament_options(draw: st.DrawFn) -> TournamentOptions:
    """``create_tournament`` options, every one often at a bound."""
    ruleset = draw(st.just(Ruleset()) | rulesets())
    return TournamentOptions(
        name=draw(names),
        format=draw(st.sampled_from(TournamentFormat)),
        rounds=draw(bounded(1, 100)),
        race_size=draw(bounded(2, 1000)),
        time_limit=draw(bounded(1, 86_400, 2)),
        arena_duration=draw(bounded(1, 7 * 86_400, 2)),
        seed_policy=seed_policy(draw, ruleset),
        ruleset=ruleset,
    )


def pick(data: st.DataObject, known: list[str], index: int) -> str | None:
    """``known[index]`` (modulo its length), or ``None`` if nothing is known.

    Every draw that depends on the server's state takes this shape: a fixed range of
    integers, read modulo what is known. Hypothesis replays the same choices to shrink
    and mutate examples, and a strategy built from what the server said (``sampled_from``
    a list of race ids) would take another shape on the replay, which it refuses.
    """
    return known[index % len(known)] if known else None


def known_or_made_up(
    data: st.DataObject,
    known: set[str],
    made_up: st.SearchStrategy[str],
    *,
    any_case: bool = False,
) -> str:
    """One of ``known`` three times in four (in lower case, if ``any_case``, one time in
    four), else a made-up value: made-up ones find nothing."""
    how, index = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 255))
    invented = data.draw(made_up)
    value = pick(data, sorted(known), index)
    if value is None or how == 3:
        return invented
    return value.lower() if how == 2 and any_case else value


# ------------------------------------------------------------------ the machine

#: Every client message type, those that move races first: hypothesis draws the first
#: ones of a list more often (they are the "simplest").
KINDS = [
    "place", "join_race", "spectate", "create_race", "quick_race", "ready", "resign",
    "leave_race", "join_tournament", "tournament_control", "create_tournament",
    "watch_tournament", "arena_available", "leave_tournament", "export_tournament",
    "list_races", "hello", "ping", "claim_name", "get_leaderboard", "get_profile",
    "daily_race", "get_daily",
]
assert sorted(KINDS) == sorted(CLIENT_MESSAGES), "a client message type is not fuzzed"

#: The honest duel: private, two racers, started as soon as both are in.
DUEL = RaceOptions(max_racers=2, min_racers=2, countdown=0, public=False, time_limit=600)


class HandlerMachine(RuleBasedStateMachine):
    """Fuzz clients and an honest duel against one server (see the module's docstring)."""

    def __init__(self, fuzz: FuzzServer) -> None:
        super().__init__()
        self.fuzz = fuzz
        self.problems: list[str] = []
        self.clients: list[FuzzClient] = []
        self.honest: list[FuzzClient] = []
        self.duel: str | None = None
        self.duel_moves: dict[str, list[tuple[int, int]]] = {}
        self.hosts: dict[str, str] = {}
        """Host tokens of the tournaments created in this example, by code."""
        self._turn = 0
        fuzz.tally["examples"] += 1

    def _run(self, step: Any) -> Any:
        return self.fuzz.runner.run(step)

    def _label(self, kind: str) -> str:
        self.fuzz.tally["clients"] += 1
        return f"{kind}{self.fuzz.tally['clients']}"

    # -------------------------------------------------------------- setting up

    @initialize(
        roles=st.lists(st.sampled_from(Role) | st.just(Role.PLAYER), min_size=2, max_size=4),
        bots=st.lists(st.booleans(), min_size=4, max_size=4),
        race=race_options(),
        joining=st.integers(0, 3),
        tournament=tournament_options(),
    )
    def connect_everyone(
        self,
        roles: list[Role],
        bots: list[bool],
        race: RaceOptions,
        joining: int,
        tournament: TournamentOptions,
    ) -> None:
        """The fuzz clients and the honest duel, started before anything is fuzzed; then
        a race of the fuzz clients and an open tournament, for the steps to work on."""
        self.clients = [
            FuzzClient(self._label("fz"), role, bot, self.problems, self.fuzz.tally)
            for role, bot in zip(roles, bots, strict=False)
        ]
        self.honest = [
            FuzzClient(self._label("honest"), Role.PLAYER, bot, self.problems, self.fuzz.tally)
            for bot in (False, True)
        ]
        self._run(self._start_duel())
        self._run(self._set_the_scene(race, joining, tournament))

    async def _set_the_scene(
        self, options: RaceOptions, joining: int, tournament: TournamentOptions
    ) -> None:
        first, *others = self.clients
        await self._ask(first, CreateTournament(options=tournament, id=first.next_id()))
        for code, token in self.hosts.items():
            control = TournamentControl(
                tournament=code, host_token=token, action=HostAction.OPEN, id=first.next_id()
            )
            await self._ask(first, control)
        await self._ask(first, CreateRace(options=options, id=first.next_id()))
        races = [r for r, seen in first.wire.races.items() if seen.racer]  # type: ignore[union-attr]
        for race in races:
            for client in others[:joining]:
                await self._ask(client, JoinRace(race=race, id=client.next_id()))
            await self._ask(first, Spectate(race=race, id=first.next_id()))

    async def _start_duel(self) -> None:
        url, seeds = self.fuzz.url, self.fuzz.seeds
        for client in [*self.clients, *self.honest]:
            await client.open(url, seeds)
        ann, bob = self.honest
        request = CreateRace(options=DUEL, id=ann.next_id())
        await ann.send(encode(request))
        snapshot = await ann.wait_for(is_answer(request), 0)
        assert isinstance(snapshot, RaceSnapshot), snapshot
        self.duel = snapshot.race
        join = JoinRace(race=snapshot.race, id=bob.next_id())
        await bob.send(encode(join))
        for racer in self.honest:
            self.duel_moves[racer.session] = []
            card = await racer.wait_for(lambda m: isinstance(m, CardToPlace), 0)
            assert isinstance(card, CardToPlace), card
        # Ann also watches her own race, as anyone may: every step, the fog line must keep
        # Bob's board to the cards she has drawn herself.
        watch = Spectate(race=snapshot.race, id=ann.next_id())
        await ann.send(encode(watch))
        assert isinstance(await ann.wait_for(is_answer(watch), 0), RaceSnapshot)

    # -------------------------------------------------------------- pools

    def _known_races(self) -> set[str]:
        races = {self.duel} if self.duel else set()
        for client in self.clients:
            if client.wire is not None:
                races |= set(client.wire.races)
            for message in client.received[-50:]:
                if isinstance(message, RaceList):
                    races |= {summary.race for summary in message.races}
                elif isinstance(message, TournamentState):
                    races |= {info.race for info in message.races}
        return races

    def _known_tournaments(self) -> set[str]:
        codes = set(self.hosts)
        for client in self.clients:
            codes |= {m.tournament for m in client.received if isinstance(m, TournamentState)}
        return codes

    def _racer_ids(self) -> set[str]:
        return {c.session for c in [*self.clients, *self.honest] if c.welcome is not None}

    # -------------------------------------------------------------- messages

    def _message(self, client: FuzzClient, data: st.DataObject) -> Request:
        """A well-formed message of any client type, with adversarial values."""
        kind = data.draw(st.sampled_from(KINDS), label="type")
        ident = client.next_id()
        known_races, known_tournaments = self._known_races(), self._known_tournaments()

        def race() -> str:
            return known_or_made_up(data, known_races, made_up_races, any_case=True)

        def tournament() -> str:
            return known_or_made_up(data, known_tournaments, made_up_tournaments)

        message: Any
        match kind:
            case "hello":
                tokens = {c.welcome.resume for c in self.clients if c.welcome is not None}
                message = Hello(
                    name=data.draw(player_names),
                    bot=data.draw(st.booleans()),
                    role=data.draw(st.sampled_from(Role)),
                    resume=known_or_made_up(data, tokens, made_up_tokens)
                    if data.draw(st.booleans()) else None,
                    id=ident,
                )
            case "quick_race":
                message = QuickRace(id=ident)
            case "create_race":
                message = CreateRace(options=data.draw(race_options()), id=ident)
            case "join_race":
                message = JoinRace(race=race(), id=ident)
            case "leave_race":
                message = LeaveRace(race=race(), id=ident)
            case "list_races":
                message = ListRaces(id=ident)
            case "ready":
                message = Ready(race=race(), ready=data.draw(st.booleans()), id=ident)
            case "place":
                message = self._place(client, data, race(), ident)
            case "resign":
                message = Resign(race=race(), id=ident)
            case "spectate":
                message = Spectate(race=race(), id=ident)
            case "ping":
                message = Ping(id=ident)
            case "create_tournament":
                message = CreateTournament(options=data.draw(tournament_options()), id=ident)
            case "tournament_control":
                # Mostly a tournament with its own token, else with another's or none.
                code = tournament()
                own = self.hosts.get(code)
                other = known_or_made_up(data, set(self.hosts.values()), made_up_tokens)
                entrant = known_or_made_up(data, self._racer_ids(), made_up_racers)
                use_own = data.draw(st.integers(0, 3)) > 0
                message = TournamentControl(
                    tournament=code,
                    host_token=own if own and use_own else other,
                    action=data.draw(st.sampled_from(HostAction)),
                    entrant=entrant if data.draw(st.booleans()) else None,
                    id=ident,
                )
            case "join_tournament":
                message = JoinTournament(tournament=tournament(), id=ident)
            case "leave_tournament":
                message = LeaveTournament(tournament=tournament(), id=ident)
            case "arena_available":
                message = SetArenaAvailable(
                    tournament=tournament(), available=data.draw(st.booleans()), id=ident
                )
            case "watch_tournament":
                message = WatchTournament(tournament=tournament(), id=ident)
            case "export_tournament":
                after = data.draw(st.none() | st.integers(0, 3))
                message = ExportTournament(tournament=tournament(), after=after, id=ident)
            case "claim_name":
                message = ClaimName(id=ident)
            case "get_leaderboard":
                message = GetLeaderboard(
                    board=data.draw(st.sampled_from(Board)),
                    bots=data.draw(st.booleans()),
                    offset=data.draw(st.integers(0, 1_000_000)),
                    limit=data.draw(st.integers(1, 100)),
                    id=ident,
                )
            case "get_profile":
                message = GetProfile(
                    player=data.draw(st.sampled_from(["u-000000000000", "p-1", "x"])), id=ident
                )
            case "daily_race":
                message = DailyRace(id=ident)
            case "get_daily":
                message = GetDaily(
                    day=data.draw(st.sampled_from([None, "2026-12-01", "1999-01-01", "2026-02-30",
                                                   "9999-12-31"])),
                    bots=data.draw(st.booleans()),
                    offset=data.draw(st.integers(0, 1_000_000)),
                    limit=data.draw(st.integers(1, 100)),
                    id=ident,
                )
            case _:
                raise AssertionError(f"no generator for {kind}")
        # The harness's own promise: what it sends is a message the protocol accepts.
        assert decode_client(frame_of(message)) == message, message
        return message  # type: ignore[no-any-return]

    def _place(self, client: FuzzClient, data: st.DataObject, race: str, ident: int) -> Place:
        """A move: on the card in hand (legal, illegal, out of turn) or anywhere."""
        anywhere = data.draw(st.booleans())
        move = data.draw(st.integers(1, 40))
        row, col = data.draw(positions)
        near, target = data.draw(st.integers(-1, 1)), data.draw(st.integers(0, 120))
        legal = data.draw(st.booleans())  # a legal target, else the position drawn
        card = client.card_in_hand()
        if card is None or anywhere:
            return Place(race=race, move=move, row=row, col=col, id=ident)
        if legal:
            row, col = card.targets[target % len(card.targets)]
        return Place(race=card.race, move=min(40, max(1, card.move + near)), row=row, col=col,
                     id=ident)

    # -------------------------------------------------------------- asking

    async def _ask(self, client: FuzzClient, message: Request) -> None:
        """Send one request and check its answer."""
        since = await self._send_raw(client, frame_of(message))
        self.fuzz.tally[f"sent {message.TYPE}"] += 1
        try:
            answer = await client.wait_for(is_answer(message), since)
        except TimeoutError:
            raise AssertionError(
                f"{client.label}: no answer to {message} in {ANSWER_TIMEOUT} s; "
                f"received since: {client.received[since:]}"
            ) from None
        self._check_answer(client, message, answer)

    def _check_answer(
        self, client: FuzzClient, message: Request, answer: Answer | None
    ) -> None:
        if answer is None:
            self.fuzz.tally["closed before an answer"] += 1
            return
        if isinstance(answer, Error):
            self.fuzz.tally[f"error {answer.code.value} to {message.TYPE}"] += 1
            if answer.code is ErrorCode.INTERNAL_ERROR:
                self.problems.append(f"internal_error answering {message}: {answer.message}")
            if answer.code.value not in DOCUMENTED_ERRORS:
                self.problems.append(f"undocumented error code {answer.code.value}")
            if answer.reply_to is not None and answer.in_reply_to != message.TYPE:
                self.problems.append(f"{answer} does not say it answers {message.TYPE}")
            return
        self.fuzz.tally[f"answered {message.TYPE}"] += 1
        if answer.TYPE not in ANSWERS[message.TYPE]:
            self.problems.append(f"{message} answered by {answer.TYPE}")
        if isinstance(answer, TournamentCreated):
            self.hosts[answer.tournament] = answer.host_token

    async def _send_raw(self, client: FuzzClient, frame: bytes | str | list[bytes]) -> int:
        """Send ``frame`` (resuming first if the connection is down); the index in
        ``client.received`` from which its answer can come."""
        if not client.is_open:
            await client.open(self.fuzz.url, self.fuzz.seeds)
        since = len(client.received)
        with contextlib.suppress(ConnectionClosed):  # closed under us: wait_for sees it
            await client.send(frame)
        return since

    # -------------------------------------------------------------- rules

    @rule(pick=st.integers(0, 3), data=st.data())
    def request(self, pick: int, data: st.DataObject) -> None:
        """One client sends one well-formed request."""
        client = self.clients[pick % len(self.clients)]
        self._run(self._ask(client, self._message(client, data)))

    @rule(data=st.data())
    def burst(self, data: st.DataObject) -> None:
        """Several clients send a request each at once."""
        picks = data.draw(st.lists(st.integers(0, 3), min_size=2, unique=True), label="clients")
        chosen = {id(c): c for c in (self.clients[p % len(self.clients)] for p in picks)}
        asked = [(client, self._message(client, data)) for client in chosen.values()]

        async def together() -> None:
            await asyncio.gather(*(self._ask(client, message) for client, message in asked))

        self._run(together())

    @rule(pick=st.integers(0, 3), data=st.data())
    def play(self, pick: int, data: st.DataObject) -> None:
        """A client places its card in hand on a legal target (races move on)."""
        client = self.clients[pick % len(self.clients)]
        card, target = client.card_in_hand(), data.draw(st.integers(0, 120))
        if card is not None and client.is_open:
            row, col = card.targets[target % len(card.targets)]
            place = Place(race=card.race, move=card.move, row=row, col=col, id=client.next_id())
            self._run(self._ask(client, place))

    @rule(pick=st.integers(0, 3), data=st.data())
    def malformed(self, pick: int, data: st.DataObject) -> None:
        """A frame that does not decode: bytes, a cut or altered real frame, text."""
        client = self.clients[pick % len(self.clients)]
        real = frame_of(self._message(client, data))
        frame: bytes | str = data.draw(
            st.binary(max_size=64)
            | st.integers(0, 4095).map(lambda cut: real[: cut % len(real)])
            | st.builds(_altered, st.just(real), st.integers(0), st.integers(1, 255))
            | st.just(real.hex())
            | st.builds(_repacked, st.just(real), st.sampled_from(["type", "id", "extra"]),
                        st.none() | st.booleans() | st.text(max_size=8)
                        | st.integers(-(2**63), 2**64 - 1))
        )
        if isinstance(frame, bytes):
            with contextlib.suppress(ProtocolError):
                decode_client(frame)
                return  # it still decodes: not a malformed frame after all
        self._run(self._malformed(client, frame))

    async def _malformed(self, client: FuzzClient, frame: bytes | str) -> None:
        since = await self._send_raw(client, frame)
        refusal = await client.wait_for(is_refusal, since)
        self.fuzz.tally["malformed refused" if refusal else "closed before an answer"] += 1

    @rule(pick=st.integers(0, 3), data=st.data())
    def fragmented(self, pick: int, data: st.DataObject) -> None:
        """A request in websocket fragments; more than 64 closes the connection (1009)."""
        client = self.clients[pick % len(self.clients)]
        message = self._message(client, data)
        frame = frame_of(message)
        count = data.draw(bounded(2, MAX_FRAGMENTS + 6, MAX_FRAGMENTS, MAX_FRAGMENTS + 1))
        cuts = sorted(cut % (len(frame) + 1) for cut in data.draw(
            st.lists(st.integers(0, 4095), min_size=count - 1, max_size=count - 1)))
        pieces = [frame[a:b] for a, b in itertools.pairwise([0, *cuts, len(frame)])]
        self._run(self._fragmented(client, message, pieces))

    async def _fragmented(
        self, client: FuzzClient, message: Request, pieces: list[bytes]
    ) -> None:
        since = await self._send_raw(client, pieces)
        if len(pieces) > MAX_FRAGMENTS:
            code = await client.closed()
            if code != 1009:
                self.problems.append(f"{len(pieces)} fragments closed with {code}, not 1009")
            return
        self._check_answer(client, message, await client.wait_for(is_answer(message), since))

    @rule(pick=st.integers(0, 3), size=st.integers(4097, 6000))
    def oversize(self, pick: int, size: int) -> None:
        """A frame over the 4 KiB limit closes the connection with 1009."""
        client = self.clients[pick % len(self.clients)]

        async def send() -> None:
            await self._send_raw(client, b"\x80" * size)
            code = await client.closed()
            if code != 1009:
                self.problems.append(f"an oversize frame closed with {code}, not 1009")

        self._run(send())

    @rule(pick=st.integers(0, 3))
    def drop(self, pick: int) -> None:
        """A connection cut without a close frame (the session lives on)."""
        self._run(self.clients[pick % len(self.clients)].drop())

    @rule(pick=st.integers(0, 3))
    def resume(self, pick: int) -> None:
        """The session resumes on a new connection; an open old one is closed with 4006."""
        client = self.clients[pick % len(self.clients)]

        async def again() -> None:
            old = client.connection if client.is_open else None
            await client.open(self.fuzz.url, self.fuzz.seeds)
            if old is not None:
                async with asyncio.timeout(ANSWER_TIMEOUT):
                    await old.wait_closed()
                if old.close_code != 4006:
                    self.problems.append(f"a replaced connection closed with {old.close_code}")

        self._run(again())

    @rule(data=st.data())
    def stranger(self, data: st.DataObject) -> None:
        """A new connection that gets its hello wrong, or says something else first."""
        taken = {c.label for c in self.clients if c.role is Role.PLAYER and not c.bot}
        race = known_or_made_up(data, self._known_races(), made_up_races, any_case=True)
        first: ClientMessage = data.draw(st.one_of(
            st.builds(Hello, name=player_names, bot=st.booleans(), resume=made_up_tokens,
                      id=st.just(1)),
            st.builds(Hello, name=player_names, bot=st.booleans(),
                      protocol_version=st.integers(2, 9), id=st.just(1)),
            st.builds(Hello, name=st.just(known_or_made_up(data, taken, player_names)),
                      bot=st.just(False), id=st.just(1)),
            st.builds(Ping, id=st.just(1)),
            st.builds(JoinRace, race=st.just(race), id=st.just(1)),
        ))
        self._run(self._stranger(first))

    async def _stranger(self, first: ClientMessage) -> None:
        expected: dict[ErrorCode, int | None] = {
            ErrorCode.INVALID_TOKEN: 4002,
            ErrorCode.VERSION_MISMATCH: 4001,
            ErrorCode.NAME_TAKEN: None,
            ErrorCode.HELLO_REQUIRED: None,
        }
        async with connect(self.fuzz.url, compression=None, open_timeout=10) as connection:
            await connection.send(encode(first))
            answer = decode_server(await asyncio.wait_for(connection.recv(), ANSWER_TIMEOUT))
            self.fuzz.tally[f"stranger {answer.TYPE}"] += 1
            if isinstance(answer, Welcome):
                return  # a name that was free after all: a session like any other
            if not isinstance(answer, Error) or answer.code not in expected:
                self.problems.append(f"a stranger's {first} got {answer}")
                return
            close = expected[answer.code]
            if close is not None:
                with contextlib.suppress(ConnectionClosed):
                    await asyncio.wait_for(connection.recv(), ANSWER_TIMEOUT)
                if connection.close_code != close:
                    self.problems.append(f"{answer.code} closed with {connection.close_code}")

    # -------------------------------------------------------------- after each step

    @invariant()
    def the_honest_duel_goes_on(self) -> None:
        """One move of the honest duel, every step: it must be accepted."""
        if self.duel is not None:
            self._run(self._honest_move())
        self.fuzz.tally["steps"] += 1

    async def _honest_move(self) -> None:
        racer = self.honest[self._turn % 2]
        self._turn += 1
        assert racer.wire is not None and self.duel is not None
        seen = racer.wire.races[self.duel]
        if seen.over:
            return
        card = seen.card
        assert card is not None, f"{racer.label} holds no card in the duel"
        row, col = card.targets[0]
        place = Place(race=self.duel, move=card.move, row=row, col=col, id=racer.next_id())
        since = len(racer.received)
        await racer.send(encode(place))
        placed = await racer.wait_for(is_answer(place), since)
        assert isinstance(placed, MovePlaced) and placed.move == card.move, (place, placed)
        self.duel_moves[racer.session].append((row, col))
        if placed.status is RacerStatus.RACING:
            await racer.wait_for(
                lambda m: isinstance(m, CardToPlace) and m.move == card.move + 1, since
            )

    @invariant()
    def nothing_broke(self) -> None:
        """No broken rule on the wire, no error in the log, and /healthz answers."""
        assert not self.problems, "\n".join(self.problems)
        assert not self.fuzz.log.found, "\n".join(self.fuzz.log.found)
        for client in [*self.clients, *self.honest]:
            for code in client.closes:
                assert code is None or (code in DOCUMENTED_CLOSES and code != 1011), code
        for racer in self.honest:
            errors = [m for m in racer.received if isinstance(m, Error)]
            assert not errors, f"the honest {racer.label} was refused: {errors}"
        health = self._run(self.fuzz.healthz())
        assert health.startswith(b"HTTP/1.1 200") and health.endswith(b"ok\n"), health
        assert not self.fuzz.server.failed
        # Counted even past a connection's budget of log lines.
        assert not self.fuzz.server.metrics.errors["internal_error"]

    # -------------------------------------------------------------- the end

    def teardown(self) -> None:
        """Finish the duel and check its result; leave nothing running behind."""
        try:
            if self.duel is not None:
                self._run(self._finish_duel())
            self.nothing_broke()
        finally:
            self._run(self._clean_up())

    async def _finish_duel(self) -> None:
        assert self.duel is not None
        for racer in self.honest:
            assert racer.wire is not None
            if not racer.wire.races[self.duel].over:
                resign = Resign(race=self.duel, id=racer.next_id())
                await racer.send(encode(resign))
        for racer in self.honest:
            finished = await racer.wait_for(
                lambda m: isinstance(m, RaceFinished) and m.race == self.duel, 0
            )
            assert isinstance(finished, RaceFinished), f"{racer.label}: no result"
            assert verify_result(finished.to_result()).ok
            moves = {s.racer: list(s.moves) for s in finished.standings}
            assert moves == self.duel_moves, (moves, self.duel_moves)

    async def _clean_up(self) -> None:
        """Resign what the fuzz clients still race and end their tournaments, so that a
        long run does not pile up races and arenas that never end."""
        for client in self.clients:
            if client.wire is None or client.role is not Role.PLAYER:
                continue
            racing = [r for r, seen in client.wire.races.items() if seen.racer and not seen.over]
            for race in racing:
                with contextlib.suppress(Exception):
                    await self._ask(client, Resign(race=race, id=client.next_id()))
        if self.clients and self.hosts:
            host = self.clients[0]
            for code, token in self.hosts.items():
                end = TournamentControl(tournament=code, host_token=token, action=HostAction.END,
                                        id=host.next_id())
                with contextlib.suppress(Exception):
                    await self._ask(host, end)
        for client in [*self.clients, *self.honest]:
            with contextlib.suppress(Exception):
                await client.close()


def _altered(frame: bytes, at: int, flip: int) -> bytes:
    """``frame`` with one byte changed."""
    altered = bytearray(frame)
    altered[at % len(altered)] ^= flip
    return bytes(altered)


def _repacked(frame: bytes, key: str, value: Any) -> bytes:
    """``frame``'s map with ``key`` set to ``value`` (a wrong type, an unknown field)."""
    wire = msgpack.unpackb(frame)
    wire[key] = value
    packed: bytes = msgpack.packb(wire, use_bin_type=True)
    return packed


def run_handler_fuzz(
    fuzz: FuzzServer, *, examples: int, steps: int, shrink: bool = True
) -> None:
    """Run ``examples`` examples of up to ``steps`` steps against ``fuzz``'s server.

    Without ``shrink`` a failure is reported as found: shrinking a sequence whose steps
    wait for a server can take minutes.
    """
    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
    run_state_machine_as_test(
        lambda: HandlerMachine(fuzz),  # type: ignore[arg-type]  # any factory will do
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            phases=[*phases, Phase.shrink] if shrink else phases,
        ),
    )
