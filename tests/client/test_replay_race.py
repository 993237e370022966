"""A replay is the race itself, frame by frame: bots race on the real server while a
spectator records every board it is sent; the finished race, replayed from its result
(the ``finished`` message, and the export ``foursquare result`` prints), shows every one
of those boards, at the point of its timeline where the moves' times put it."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

import pytest

from client.bot_runner import Bot, BotResult
from client.bots import get_strategy
from client.connection import Connection
from client.replay import Replay
from protocol import (
    Boards,
    CreateRace,
    JoinRace,
    Progress,
    ProgressEntry,
    RaceFinished,
    RaceOptions,
    RacerBoard,
    Role,
    Spectate,
)
from server.store import load_result
from tests.conftest import LiveServer
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
