"""Bots in a real race: each one connects (``hello`` with ``bot=true``), joins and plays.

A bot knows what any racer knows: the :class:`~client.race_state.RaceTracker` mirror
holds the cards it was dealt and its accepted moves, and the strategy sees only the
:class:`~client.bots.RacerView` built from them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from client.bots import Strategy, get_strategy
from client.connection import DEFAULT_BACKOFF, Backoff, Connection, ConnectionFailed
from client.race_state import RaceTracker
from client.wording import describe_error, plural
from protocol import (
    ClientMessage,
    Error,
    ErrorCode,
    Place,
    RaceState,
    Ready,
    ServerMessage,
    Standing,
    Welcome,
)
from protocol.tournament import TournamentClientMessage

Sleep = Callable[[float], Awaitable[None]]
Report = Callable[[str], None]
"""Where a bot says, as it goes, how each of its races ended (one line each)."""

RATE_LIMIT_PAUSE = 1.0
"""Seconds a bot waits after the server says it sends too fast, or cannot serve races for
a moment (``unavailable``), before it sends its move again."""


@dataclass(frozen=True, slots=True)
class BotResult:
    """How one bot's race went: its line in the standings, or why it stopped."""

    name: str
    standing: Standing | None = None
    failure: str | None = None

    def describe(self, race: str | None = None) -> str:
        """One line for the terminal (naming ``race`` when given)."""
        if self.standing is None:
            return f"{self.name}: {self.failure or 'no result'}"
        standing = self.standing
        where = f" in race {race}" if race is not None else ""
        result = standing.status.value.replace("_", " ")
        if standing.score is not None:
            result += f" with score {standing.score}"
        return (
            f"{self.name}{where}: place {standing.place}, {result}, "
            f"{plural(standing.cards_played, 'card')}"
        )


class Bot:
    """One bot racer: feed it the server's messages with :meth:`receive`."""

    def __init__(
        self, connection: Connection, request: ClientMessage | TournamentClientMessage,
        strategy: Strategy,
        *, pace: float = 0.0, sleep: Sleep = asyncio.sleep, report: Report | None = None,
    ) -> None:
        self.connection = connection
        self.request = request
        self.strategy = strategy
        self.pace = pace
        self.sleep = sleep
        self.tracker = RaceTracker()
        self._ready_in: str | None = None
        """The race the bot has said ready in (it says so once per race)."""
        self.report = report
        self._reported: str | None = None
        """The race whose end the bot has reported (once per race)."""

    async def run(self) -> BotResult:
        """Join, play until the race is over, and say how it went."""
        name = self.connection.name
        try:
            async for message in self.connection.messages():
                failure = await self.receive(message)
                if failure is not None:
                    await self.connection.close()
                    return BotResult(name, failure=failure)
                if self.tracker.finished is not None:
                    await self.connection.close()
                    return BotResult(name, standing=self._my_standing())
        except ConnectionFailed as error:
            return BotResult(name, failure=str(error))
        return BotResult(name, failure="the server closed the connection")

    def _my_standing(self) -> Standing | None:
        finished, you = self.tracker.finished, self.tracker.you
        if finished is None:
            return None
        return next((s for s in finished.standings if s.racer == you), None)

    async def receive(self, message: ServerMessage) -> str | None:
        """React to one message; returns a sentence if the bot has to give up."""
        if isinstance(message, Welcome):
            if not message.resumed:
                await self.connection.send(self.request)
                return None
            rejoin = self.tracker.seat_lost_on_drop()
            if rejoin is not None:
                self._ready_in = None
                await self.connection.send(rejoin)
            return None
        if isinstance(message, Error):
            if message.code is ErrorCode.ALREADY_JOINED:
                return None  # a rejoin after a resume found the seat still ours
            if message.in_reply_to in ("quick_race", "join_race", "create_race", "hello"):
                return describe_error(message)
            mirror = self.tracker.mirror
            if message.in_reply_to in ("place", None) and mirror is not None:
                mirror.pending = None  # refused or unread: think again and resend
                if message.code in (ErrorCode.RATE_LIMITED, ErrorCode.UNAVAILABLE):
                    await self.sleep(RATE_LIMIT_PAUSE)  # sending again at once would not help
                await self._act()
            return None
        self.tracker.apply(message)
        self._report_the_end()
        await self._act()
        return None

    def _report_the_end(self) -> None:
        """Say how the race went, once, as soon as it has finished."""
        race = self.tracker.race
        if self.report is None or self.tracker.finished is None or self._reported == race:
            return
        self._reported = race
        result = BotResult(self.connection.name, standing=self._my_standing())
        self.report(result.describe(race))

    async def _act(self) -> None:
        snapshot, mirror, race = self.tracker.snapshot, self.tracker.mirror, self.tracker.race
        if snapshot is None or race is None:
            return
        if snapshot.state is RaceState.LOBBY:
            if self._ready_in != race and self.tracker.you is not None:
                self._ready_in = race
                await self.connection.send(Ready(race=race))
            return
        if mirror is None or mirror.in_hand is None or mirror.pending is not None:
            return
        move = mirror.move_number
        mirror.pending = (move, (0, 0))  # claimed while thinking, so no second move starts
        if self.pace > 0:
            await self.sleep(self.pace)
        if mirror.move_number != move or mirror.in_hand is None:
            return
        position = self.strategy.choose(mirror.racer_view())
        mirror.pending = (move, position)
        sent = await self.connection.send(
            Place(race=race, move=move, row=position[0], col=position[1])
        )
        if not sent:
            mirror.pending = None


async def run_bots(
    url: str,
    count: int,
    request: ClientMessage,
    strategy: str,
    *,
    pace: float = 0.0,
    name_prefix: str | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
    ca_file: str | None = None,
    report: Report | None = None,
) -> list[BotResult]:
    r"""Start ``count`` bots that each send ``request`` (quick race or join) and play
    (``ca_file``: a CA to trust for ``wss://``, as :class:`Connection` takes); each
    ``report``\ s its race's end as soon as it comes."""
    prefix = name_prefix or "bot"
    bots = [
        Bot(
            Connection(
                url, f"{prefix}-{index + 1}", bot=True, backoff=backoff, ca_file=ca_file
            ),
            request,
            get_strategy(strategy),
            pace=pace,
            report=report,
        )
        for index in range(count)
    ]
    return list(await asyncio.gather(*(bot.run() for bot in bots)))
