"""Races for the browser tests to watch or join: bots of the terminal client, for real."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from client.bot_runner import Bot, BotResult
from client.bots import get_strategy
from client.connection import Connection
from protocol import CreateRace, JoinRace, RaceOptions

#: Long enough for a loaded 2-core machine; a hang still fails the test.
WAIT = 30.0


async def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


@dataclass
class BotRace:
    """A private race whose racers are bots (and whoever else joins by its code)."""

    code: str
    bots: list[Bot]
    runs: list[asyncio.Task[BotResult]] = field(default_factory=list)

    async def join(self, url: str, count: int, *, pace: float, strategy: str = "greedy",
                   first: int = 2) -> None:
        """``count`` more bots join by the code, named ``bot-<first>`` and on."""
        for index in range(first, first + count):
            bot = Bot(Connection(url, f"bot-{index}", bot=True), JoinRace(race=self.code),
                      get_strategy(strategy), pace=pace)
            self.bots.append(bot)
            self.runs.append(asyncio.create_task(bot.run()))

    async def results(self) -> list[BotResult]:
        """Every bot's result, once each has finished its race."""
        return list(await asyncio.wait_for(asyncio.gather(*self.runs), WAIT * 2))

    def cancel(self) -> None:
        for run in self.runs:
            run.cancel()


async def open_bot_race(url: str, racers: int, *, pace: float, countdown: int = 1,
                        strategy: str = "greedy", time_limit: int = 600) -> BotRace:
    """A bot opens a private race for ``racers`` that starts once full; the others join
    later with :meth:`BotRace.join`."""
    options = RaceOptions(max_racers=racers, min_racers=racers, public=False,
                          countdown=countdown, time_limit=time_limit)
    first = Bot(Connection(url, "bot-1", bot=True), CreateRace(options=options),
                get_strategy(strategy), pace=pace)
    run = asyncio.create_task(first.run())
    await wait_for(lambda: first.tracker.snapshot is not None, "the race to open")
    snapshot = first.tracker.snapshot
    assert snapshot is not None
    return BotRace(snapshot.race, [first], [run])
