"""Tournament players for end-to-end tests: real websocket clients driven by the bots.

A :class:`BotPlayer` says hello, joins a tournament, and then answers every ``card`` it is
sent (whatever race it names) with the move its :mod:`client.bots` strategy picks from
what the racer has seen. It survives a server restart: :meth:`BotPlayer.reconnect` resumes
its session with its token, and the cards and moves it remembers are cut back to what the
server says it has accepted (the move number of the next ``card``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from websockets.exceptions import ConnectionClosed

from client.bots import RacerView, get_strategy
from engine import Card, Position, Ruleset
from protocol import CardToPlace, Error, Place
from protocol.tournament import (
    CreateTournament,
    ExportTournament,
    HostAction,
    JoinTournament,
    TournamentClientMessage,
    TournamentControl,
    TournamentCreated,
    TournamentExport,
    TournamentOptions,
    TournamentState,
    TournamentStatus,
    WatchTournament,
    encode_tournament,
)
from server.tournament_export import fetch_export
from tests.server.wire_client import TIMEOUT, WireClient


class Player:
    """A connection that speaks the tournament messages and keeps the last state seen."""

    def __init__(self, client: WireClient, name: str):
        self.client = client
        self.name = name
        self.state: TournamentState | None = None
        self.errors: list[Error] = []

    @classmethod
    async def connect(cls, url: str, name: str, bot: bool = True) -> Player:
        """Say hello as a player named ``name``."""
        return cls(await WireClient.connect(url, name, bot=bot), name)

    @property
    def player_id(self) -> str:
        """The session id, which is also the entrant id."""
        return self.client.racer_id

    async def send(self, message: TournamentClientMessage) -> None:
        """Send a tournament request."""
        await self.client.connection.send(encode_tournament(message))

    async def receive(self) -> object:
        """The next message (decoded strictly), noting tournament states and errors."""
        message: object = await self.client.receive()
        if isinstance(message, TournamentState):
            self.state = message
        elif isinstance(message, Error):
            self.errors.append(message)
        return message

    async def until(self, done: Callable[[TournamentState], bool]) -> TournamentState:
        """Read until a ``tournament`` state for which ``done`` holds."""
        while True:
            message = await self.receive()
            if isinstance(message, TournamentState) and done(message):
                return message

    async def error(self) -> Error:
        """Read until an ``error`` comes."""
        while True:
            message = await self.receive()
            if isinstance(message, Error):
                return message

    async def watch(self, code: str) -> TournamentState:
        """Watch a tournament; returns its state."""
        await self.send(WatchTournament(tournament=code, id=self.client.next_id()))
        return await self.until(lambda state: True)

    async def close(self) -> None:
        """Close the connection."""
        await self.client.close()


class BotPlayer(Player):
    """An entrant played by a bot strategy; :meth:`play` runs until the tournament ends."""

    def __init__(self, client: WireClient, name: str, strategy: str, seed: int):
        super().__init__(client, name)
        self.pace = 0.0
        """Seconds to wait before each move (to stay under a server's rate limit)."""
        self.strategy = get_strategy(strategy, seed=seed)
        self.cards: dict[str, list[Card]] = {}
        self.moves: dict[str, list[Position]] = {}
        self.moves_sent = 0

    @classmethod
    async def enter(
        cls,
        url: str,
        name: str,
        code: str,
        strategy: str = "random",
        seed: int = 0,
        pace: float = 0.0,
    ) -> BotPlayer:
        """Connect as a bot and join tournament ``code``."""
        player = cls(await WireClient.connect(url, name, bot=True), name, strategy, seed)
        player.pace = pace
        await player.send(JoinTournament(tournament=code, id=player.client.next_id()))
        await player.until(lambda state: state.you == player.player_id)
        return player

    async def reconnect(self, url: str) -> None:
        """Resume the same session on a new connection (after a server restart)."""
        self.client = await WireClient.connect(
            url, self.name, bot=True, resume=self.client.welcome.resume
        )

    async def play(self, finished: Callable[[TournamentState], bool]) -> None:
        """Answer every card until a state for which ``finished`` holds, or the connection
        closes (the server was killed)."""
        with contextlib.suppress(ConnectionClosed):
            while True:
                message = await self.receive()
                if isinstance(message, CardToPlace):
                    await self._place(message)
                elif isinstance(message, TournamentState) and finished(message):
                    return

    async def _place(self, card: CardToPlace) -> None:
        # What the server accepted is a prefix of what was sent: keep that much.
        cards = self.cards.setdefault(card.race, [])
        moves = self.moves.setdefault(card.race, [])
        del cards[card.move - 1 :], moves[card.move - 1 :]
        cards.append(card.card)
        move = self.strategy.choose(RacerView(Ruleset(), tuple(cards), tuple(moves)))
        moves.append(move)
        self.moves_sent += 1
        await asyncio.sleep(self.pace)
        place = Place(race=card.race, move=card.move, row=move[0], col=move[1])
        await self.client.send(place)


class Host(Player):
    """The host's connection: creates the tournament and controls it with the token."""

    code = ""
    token = ""

    @classmethod
    async def start(cls, url: str, name: str = "host") -> Host:
        """Connect as a person (the host is no bot)."""
        player = await Player.connect(url, name, bot=False)
        return cls(player.client, name)

    async def create(self, **options: object) -> str:
        """Create a tournament with ``options``, keep its code and token, and watch it."""
        create = CreateTournament(options=TournamentOptions(**options), id=1)  # type: ignore[arg-type]
        await self.send(create)
        while True:
            message = await self.receive()
            if isinstance(message, TournamentCreated):
                self.code, self.token = message.tournament, message.host_token
                await self.watch(self.code)
                return self.code

    async def control(
        self, action: HostAction, token: str | None = None, entrant: str | None = None
    ) -> None:
        """Send a host action (with the host's token unless ``token`` is given)."""
        await self.send(
            TournamentControl(
                tournament=self.code,
                host_token=token or self.token,
                action=action,
                entrant=entrant,
                id=self.client.next_id(),
            )
        )

    async def export(self) -> TournamentExport:
        """Ask for the tournament's export, every page of it, joined."""
        return await fetch_export(self.code, self.ask, self.client.next_id)

    async def ask(self, request: ExportTournament) -> object:
        """Send ``request``; the answer to it (an ``error`` too)."""
        await self.send(request)
        while True:
            message = await self.receive()
            if getattr(message, "reply_to", None) == request.id:
                return message


class FakeClock:
    """The server's injected clock (``ServerConfig.clock``): time moves only when the test
    says so (then wake the tournaments' clock: ``tournaments.wake()``)."""

    def __init__(self) -> None:
        self.now = 1_767_225_600.0

    def __call__(self) -> float:
        return self.now


def round_over(number: int) -> Callable[[TournamentState], bool]:
    """Whether a state shows round ``number`` over (every entrant scored for it)."""
    return lambda s: (
        s.round == number
        and not s.races
        and (
            s.status is TournamentStatus.FINISHED
            or all(line.games >= number for line in s.standings)
        )
    )


async def wait_all(*tasks: asyncio.Task[None]) -> None:
    """Wait for every task, failing the test if one hangs."""
    await asyncio.wait_for(asyncio.gather(*tasks), TIMEOUT * 6)
