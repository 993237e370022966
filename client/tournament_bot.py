"""Bots that enter a tournament and race every race it deals them, until it is over.

A :class:`TournamentBot` is a :class:`~client.bot_runner.Bot` whose request is
``join_tournament``: the tournament seats it in its races itself, so a ``race`` snapshot
whose racers include the bot's entrant id is its next race, and it plays that race's
cards as any bot plays its race.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from client.bot_runner import Bot, Report
from client.bots import get_strategy
from client.connection import Connection, ConnectionFailed
from client.race_state import RaceTracker
from client.wording import describe_error, plural
from protocol import Error, ErrorCode, RaceSnapshot, RaceState, ServerMessage, Welcome
from protocol.tournament import (
    JoinTournament,
    TournamentStanding,
    TournamentState,
    TournamentStatus,
    WatchTournament,
)


@dataclass(frozen=True, slots=True)
class TournamentBotResult:
    """How one bot's tournament went: its final line in the standings, or why it stopped."""

    name: str
    standing: TournamentStanding | None = None
    failure: str | None = None

    def describe(self) -> str:
        """One line for the terminal."""
        line = self.standing
        if line is None:
            return f"{self.name}: {self.failure or 'no result'}"
        place = f"{'tied ' if line.tied else ''}place {line.place}"
        points, games = plural(line.points, "point"), plural(line.games, "game")
        return f"{self.name}: {place}, {points}, {line.stock_left} stock left, {games}"


class TournamentBot(Bot):
    """One bot entrant; :meth:`play` runs until the tournament has finished."""

    def __init__(
        self, connection: Connection, code: str, strategy: str, *, pace: float = 0.0,
        report: Report | None = None,
    ):
        self.code = code.upper()
        super().__init__(connection, JoinTournament(tournament=self.code), get_strategy(strategy),
                         pace=pace, report=report)
        self.state: TournamentState | None = None
        self.you: str | None = None

    async def play(self) -> TournamentBotResult:
        """Enter, race whatever is dealt, and say where the bot ended up."""
        name = self.connection.name
        try:
            failure = await self._race_until_the_end()
        except ConnectionFailed as error:
            failure = str(error)
        finally:
            await self.connection.close()
        state = self.state
        mine = [s for s in state.standings if s.entrant == self.you] if state else []
        if failure is not None or not mine:
            return TournamentBotResult(name, failure=failure or "removed by the host")
        return TournamentBotResult(name, standing=mine[0])

    async def _race_until_the_end(self) -> str | None:
        """Answer the server until the tournament is over; a sentence if the bot must stop."""
        async for message in self.connection.messages():
            failure = await self.receive(message)
            if failure is not None:
                return failure
            if self.state is not None and self.state.status is TournamentStatus.FINISHED:
                return None
        return "the server closed the connection"

    async def receive(self, message: ServerMessage) -> str | None:
        """React to one message; returns a sentence if the bot has to give up."""
        if isinstance(message, Welcome) and message.resumed:
            # Watching a tournament belongs to a connection: ask again on the new one.
            await self.connection.send(WatchTournament(tournament=self.code))
            return None
        if isinstance(message, TournamentState):
            self.state = message
            self.you = message.you or self.you
            return None
        if isinstance(message, Error):
            if message.code is ErrorCode.ALREADY_ENTERED:
                await self.connection.send(WatchTournament(tournament=self.code))
                return None
            if message.in_reply_to in ("join_tournament", "watch_tournament"):
                return describe_error(message)
        if isinstance(message, RaceSnapshot) and message.race != self.tracker.race:
            you = self.you
            if you is None or all(racer.racer != you for racer in message.racers):
                return None  # a race not ours
            if message.state not in (RaceState.COUNTDOWN, RaceState.RUNNING):
                return None  # being seated (the countdown's snapshot follows), or over
            self.tracker = RaceTracker()
            self.tracker.apply(message)
            self.tracker.seat(you)
        return await super().receive(message)


async def run_tournament_bots(
    url: str,
    code: str,
    strategy: str,
    count: int = 1,
    *,
    pace: float = 0.0,
    prefix: str = "bot",
    ca_file: str | None = None,
    report: Report | None = None,
) -> list[TournamentBotResult]:
    r"""Enter ``count`` bots, named ``prefix-1`` onwards, in tournament ``code``; each plays
    until the tournament ends (``ca_file``: a CA to trust for ``wss://``), ``report``\ ing
    each race's end as it comes."""
    connections = [
        Connection(url, f"{prefix}-{n}", bot=True, ca_file=ca_file) for n in range(1, count + 1)
    ]
    bots = [
        TournamentBot(connection, code, strategy, pace=pace, report=report)
        for connection in connections
    ]
    return list(await asyncio.gather(*(bot.play() for bot in bots)))
