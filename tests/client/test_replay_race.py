"""A replay is the race itself, frame by frame: bots race on the real server while a
spectator records every board it is sent; the finished race, replayed from its result
(the ``finished`` message, and the export ``foursquare result`` prints), shows every one
of those boards, at the point of its timeline where the moves' times put it."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import pytest

from client.bot_runner import Bot, BotResult
from client.bots import get_strategy
from client.connection import Connection
from client.network_app import NetworkApp, Plan
from client.replay import Replay
from client.screens.replay import ReplayScreen
from client.screens.results import ResultsScreen
from client.screens.watch import WatchScreen
from protocol import (
    Boards,
    CardToPlace,
    CreateRace,
    JoinRace,
    Place,
    Progress,
    ProgressEntry,
    RaceFinished,
    RaceOptions,
    RacerBoard,
    RaceSnapshot,
    Resign,
    Role,
    Spectate,
)
from server.store import load_result
from tests.client.test_live import answer, racing_a_bot, showing, wait_until
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.server.test_replays import LINGER, raced
from tests.server.wire_client import WireClient

#: Seconds each bot waits before a move: short, so moves of different racers interleave
#: over many of the server's updates (and some may share a millisecond); nothing is timed.
PACE = 0.03


def three_racers(fog: bool) -> RaceOptions:
    return RaceOptions(max_racers=3, min_racers=3, countdown=0, public=False, fog=fog)


async def watched_race(live: LiveServer, fog: bool) -> tuple[str, list[Boards], RaceFinished,
                                                             dict[str, ProgressEntry]]:
    """Three bots race while Eve watches from before the start. Returns the race id, the
    boards Eve was sent before the result, the result, and each racer's last progress."""
    url = live.url
    ann = Bot(Connection(url, "ann", bot=True), CreateRace(options=three_racers(fog)),
              get_strategy("greedy"), pace=PACE)
    runs: list[asyncio.Task[BotResult]] = [asyncio.create_task(ann.run())]
    for _ in range(500):
        if ann.tracker.snapshot is not None:
            break
        await asyncio.sleep(0.02)
    race, code = ann.tracker.race, ann.tracker.code
    assert race is not None and code is not None
    eve = await WireClient.connect(url, "eve", role=Role.SPECTATOR)
    await eve.send(Spectate(race=race, id=eve.next_id()))
    await eve.expect(Boards)  # watching from before the start: every board empty
    for name, strategy in (("bob", "random"), ("cy", "greedy")):
        bot = Bot(Connection(url, name, bot=True), JoinRace(race=code), get_strategy(strategy),
                  pace=PACE)
        runs.append(asyncio.create_task(bot.run()))
    finished = await eve.expect(RaceFinished)
    last_boards = await eve.expect(Boards)
    assert last_boards.fog_line is None
    assert all(result.standing is not None for result in await asyncio.gather(*runs))
    received = eve.received[: eve.received.index(finished)]
    boards = [message for message in received if isinstance(message, Boards)]
    progress: dict[str, ProgressEntry] = {}
    for message in eve.received:
        if isinstance(message, Progress):
            progress.update((entry.racer, entry) for entry in message.racers)
    await eve.close()
    return race, [*boards, last_boards], finished, progress


def assert_same_replays(one: Replay, other: Replay) -> None:
    assert one.moves == other.moves
    for step in range(one.length + 1):
        assert one.frame(step) == other.frame(step)


def assert_a_point_of_the_timeline(replay: Replay, counts: Mapping[str, int]) -> None:
    """The racers' boards at ``counts`` moves each are a moment of the race: every move
    shown was made no later than every move not shown (moves of the same millisecond
    may fall either side)."""
    shown = [m.at_ms for m in replay.moves if m.number <= counts.get(m.racer, 0)]
    hidden = [m.at_ms for m in replay.moves if m.number > counts.get(m.racer, 0)]
    if shown and hidden:
        assert max(shown) <= min(hidden), counts


@pytest.mark.parametrize("fog", [False, True], ids=["open", "fogged"])
async def test_a_replay_shows_every_board_a_spectator_saw(live_server: LiveServer,
                                                          fog: bool) -> None:
    race, seen, finished, progress = await watched_race(live_server, fog)
    replay = Replay(finished.to_result())
    assert replay.timed and replay.length == sum(len(s.moves) for s in finished.standings)

    # The export of the race is enough: the same replay, frame for frame.
    exported = load_result(str(live_server.db_path), race)
    assert exported is not None
    assert_same_replays(Replay(exported), replay)

    state: dict[str, RacerBoard] = {}
    for message in seen[:-1]:
        for board in message.boards:
            assert board == replay.board(board.racer, board.shown)
            assert board.shown >= state[board.racer].shown if board.racer in state else True
            state[board.racer] = board
        if fog:  # behind the fog: no board past the line
            assert message.fog_line is not None
            assert all(board.shown <= message.fog_line for board in message.boards)
        else:
            assert message.fog_line is None
            assert_a_point_of_the_timeline(replay, {r: b.shown for r, b in state.items()})
    # The last frame is the race as it ended: every board, every line of the result.
    end = replay.frame(replay.length)
    assert {board.racer: board for board in seen[-1].boards} == end.boards
    assert {entry.racer: entry for entry in end.progress} == progress
    assert [entry.racer for entry in end.progress] == [s.racer for s in finished.standings]
    # Open boards follow the race as it goes: the spectator saw it move many times.
    if not fog:
        assert len(seen) > 3


# ------------------------------------------------------- foursquare watch RACE


def fog_note(app: NetworkApp) -> str:
    return str(app.screen.query_one("#fog").render())


def watcher(url: str, race: str) -> NetworkApp:
    return NetworkApp(Connection(url, "eve", role=Role.SPECTATOR), Plan.spectate(race))


async def test_watching_a_finished_race_replays_it(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "journal.db"), finished_linger=LINGER)
    async with start_live_server(config) as live:
        race, finished = await raced(live.url, RaceOptions(max_racers=2, countdown=0,
                                                           public=False))
        for _ in range(2):  # still kept by the server, then from its store
            app = watcher(live.url, race)
            async with app.run_test(size=(100, 30)) as pilot:
                await wait_until(pilot, partial(showing, app, ReplayScreen), "the replay")
                screen = app.screen
                assert isinstance(screen, ReplayScreen)
                assert screen.replay.result == finished.to_result()
                assert screen.replay.timed
                await pilot.press("end")
                assert screen.step == screen.replay.length == 3
            await asyncio.sleep(LINGER * 2)  # the server forgets the race


async def test_a_race_watched_to_its_end_is_replayed_with_r_and_escape_comes_back(
    live_server: LiveServer,
) -> None:
    url = live_server.url
    ann = await WireClient.connect(url, "ann")
    bob = await WireClient.connect(url, "bob", bot=True)
    await ann.send(CreateRace(options=RaceOptions(max_racers=2, countdown=0, public=False),
                              id=ann.next_id()))
    race = (await ann.expect(RaceSnapshot)).race
    app = watcher(url, race)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: showing(app, WatchScreen), "the watch screen")
        await wait_until(pilot, lambda: fog_note(app).startswith("The race has not started"),
                         "the race's first state")
        await pilot.press("r")  # not over yet: nothing to replay, and the screen says so
        assert showing(app, WatchScreen)
        assert fog_note(app).startswith("The race is not over")
        await bob.send(JoinRace(race=race, id=bob.next_id()))
        card = await ann.expect(CardToPlace)
        row, col = card.targets[0]
        await ann.send(Place(race=race, move=card.move, row=row, col=col, id=ann.next_id()))
        await ann.send(Resign(race=race, id=ann.next_id()))
        await bob.send(Resign(race=race, id=bob.next_id()))
        await wait_until(pilot, lambda: app.tracker.finished is not None, "the result")
        assert showing(app, WatchScreen)  # followed live to its end: no replay unasked
        await pilot.press("r")
        await wait_until(pilot, lambda: showing(app, ReplayScreen), "the replay")
        assert app.screen.replay.length == 1  # type: ignore[attr-defined]
        await pilot.press("escape")
        await wait_until(pilot, lambda: showing(app, WatchScreen), "the watch screen again")
    for client in (ann, bob):
        await client.close()


async def test_after_racing_r_replays_the_race_and_escape_comes_back_to_the_results(
    live_server: LiveServer,
) -> None:
    async with racing_a_bot(live_server.url) as (pilot, app, bot):
        await answer(pilot, app, "ctrl+x", "y")
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results")
        assert (await bot).standing is not None
        await pilot.press("r")
        await wait_until(pilot, lambda: showing(app, ReplayScreen), "the replay")
        replay = app.screen
        assert isinstance(replay, ReplayScreen) and app.tracker.finished is not None
        assert replay.replay.result == app.tracker.finished.to_result()
        assert str(replay.query_one("#verified").render()).startswith(
            f"Seed {app.tracker.finished.seed}\n✓ verified: the seed matches the commitment "
            "published before the start"
        )
        await pilot.press("escape")
        await wait_until(pilot, lambda: showing(app, ResultsScreen), "the results again")
