"""Replays: the timeline a result record gives, its frames against the engine, and the
replay screen driven by keys (play, pause, step forward and back, speed)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from textual.pilot import Pilot

from cli.main import main as foursquare
from client.app import FoursquareApp
from client.replay import UNTIMED_STEP_MS, Replay, ReplayError
from client.screens.replay import SPEEDS, ReplayScreen
from client.widgets.grid import GridView
from client.widgets.leaderboard import Leaderboard
from client.widgets.tiles import BoardTiles
from engine import Game, Position, Ruleset
from protocol import RacerStatus
from protocol.result import RaceResult, RacerOutcome, RacerResult, verify_result
from tests.client.test_solo import FakeClock
from tests.server.known_games import WON_SEED, conformance_game

_, LINE = conformance_game(WON_SEED)


def racer(
    racer_id: str,
    moves: Sequence[Position],
    outcome: RacerOutcome,
    move_ms: Sequence[int] | None,
    finish_ms: int | None = None,
) -> RacerResult:
    """A racer's line of a result whose claims are the engine's own."""
    game = Game.new(WON_SEED)
    for move in moves:
        game.play(move)
    finish = finish_ms if finish_ms is not None else (move_ms[-1] if move_ms else 0)
    return RacerResult(
        racer_id, racer_id, False, outcome, game.score,
        None if outcome is RacerOutcome.TIMED_OUT else finish / 1000,
        game.cards_played, game.face_up, game.face_down, tuple(moves),
        move_ms=None if move_ms is None else tuple(move_ms),
    )


def two_racers(timed: bool = True) -> RaceResult:
    """Ann wins with the conformance line, a move every second; Bob plays five cards,
    a move every 1.5 s (his second at 3 s, with Ann's third), then resigns at 20 s."""
    ann_times = [1000 * n for n in range(1, len(LINE) + 1)]
    bob_times = [1500 * n for n in range(1, 6)]
    return RaceResult.build("R1", WON_SEED, Ruleset(), [
        racer("ann", LINE, RacerOutcome.WON, ann_times if timed else None),
        racer("bob", LINE[:5], RacerOutcome.RESIGNED, bob_times if timed else None, 20_000),
    ])


# ------------------------------------------------------------------ the timeline


def test_moves_are_in_the_order_they_were_made_ties_in_standings_order() -> None:
    replay = Replay(two_racers())
    assert verify_result(replay.result).ok and replay.timed
    order = [(m.at_ms, m.racer, m.number) for m in replay.moves[:6]]
    assert order == [(1000, "ann", 1), (1500, "bob", 1), (2000, "ann", 2),
                     (3000, "ann", 3), (3000, "bob", 2), (4000, "ann", 4)]
    assert replay.length == len(LINE) + 5 and replay.duration_ms == 1000 * len(LINE)
    assert replay.step_at(2999) == 3 and replay.step_at(3000) == 5 and replay.step_at(0) == 0


def test_a_record_without_times_plays_the_racers_in_turn() -> None:
    record = two_racers(timed=False)
    old = json.loads(record.to_json())
    assert "move_ms" not in old["standings"][0]  # written as records always were
    replay = Replay(RaceResult.from_dict(old))
    assert not replay.timed
    order = [(m.racer, m.number) for m in replay.moves[:5]]
    assert order == [("ann", 1), ("bob", 1), ("ann", 2), ("bob", 2), ("ann", 3)]
    assert [m.at_ms for m in replay.moves[:3]] == [UNTIMED_STEP_MS, 2 * UNTIMED_STEP_MS,
                                                  3 * UNTIMED_STEP_MS]


def test_every_frame_is_the_engines_game_after_those_moves() -> None:
    replay = Replay(two_racers())
    for step in range(replay.length + 1):
        frame = replay.frame(step)
        for racer_id, board in frame.boards.items():
            game = Game.new(WON_SEED)
            for move in LINE[: board.shown]:
                game.play(move)
            assert {p.position: (p.cards, p.face_up) for p in board.piles} == {
                position: (pile.cards, pile.face_up) for position, pile in game.piles.items()
            }, (step, racer_id)
        played = sum(board.shown for board in frame.boards.values())
        assert played == step
    assert replay.frame(8).last_position == LINE[4]  # Ann's fifth card, at 5 s
    assert replay.frame(7).last_position == LINE[2]  # Bob's third, at 4.5 s


def test_the_last_frame_is_the_result_and_a_resignation_shows_at_its_time() -> None:
    record = two_racers()
    replay = Replay(record)
    end = replay.frame(replay.length)
    for entry, claimed in zip(end.progress, record.racers, strict=True):
        assert (entry.racer, entry.status.value, entry.score, entry.cards_played,
                entry.face_up, entry.face_down) == (
            claimed.racer_id, claimed.outcome.value, claimed.score, claimed.cards_played,
            claimed.face_up, claimed.face_down)
    bob_done = replay.step_at(7500)  # Bob's last card; he resigns at 20 s
    assert replay.frame(bob_done).progress[1].status is RacerStatus.RACING
    assert replay.frame(replay.step_at(20_000)).progress[1].status is RacerStatus.RESIGNED
    ann = replay.frame(replay.length - 1).progress[0]
    assert ann.status is RacerStatus.RACING and ann.score is None


def test_a_record_with_an_illegal_move_cannot_be_replayed() -> None:
    record = two_racers()
    bob = dataclasses.replace(record.racers[1], moves=((0, 0), (3, 3), *LINE[2:5]))
    with pytest.raises(ReplayError, match="move 2 \\[3, 3\\] is illegal"):
        Replay(dataclasses.replace(record, racers=(record.racers[0], bob)))


def test_verify_checks_the_move_times() -> None:
    record = two_racers()
    ann = record.racers[0]
    assert ann.move_ms is not None
    cases = {
        "move times for": dataclasses.replace(ann, move_ms=ann.move_ms[:-1]),
        "not in order": dataclasses.replace(ann, move_ms=(2000, 1000, *ann.move_ms[2:])),
        "after the racer's finish": dataclasses.replace(ann, finish_time=1.0),
    }
    for problem, entry in cases.items():
        check = verify_result(dataclasses.replace(record, racers=(entry, record.racers[1])))
        assert any(problem in line for line in check.problems), (problem, check.problems)
    for bad in ([1, "2"], [-1], "1,2"):
        data = json.loads(record.to_json())
        data["standings"][0]["move_ms"] = bad
        with pytest.raises(ValueError, match="move_ms"):
            RaceResult.from_dict(data)
    assert RaceResult.from_json(record.to_json()) == record


# ------------------------------------------------------------------ the screen


@contextlib.asynccontextmanager
async def replaying(
    record: RaceResult, clock: FakeClock
) -> AsyncIterator[tuple[Pilot[int], ReplayScreen]]:
    app = FoursquareApp(lambda: ReplayScreen(Replay(record), clock=clock))
    async with app.run_test(size=(100, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, ReplayScreen)
        yield pilot, screen


async def later(pilot: Pilot[int], screen: ReplayScreen, clock: FakeClock, seconds: float) -> None:
    """Let ``seconds`` pass on the replay's clock, and the replay see it."""
    clock.now += seconds
    screen.advance()  # what its timer does, at once
    await pilot.pause()


def shown_boards(screen: ReplayScreen) -> dict[str, int]:
    """Cards each racer's tile shows."""
    tiles = screen.query_one(BoardTiles)
    return {racer: grid.board.cards_played for racer, grid in tiles.grids.items()}


async def test_it_plays_at_the_races_pace_and_pauses() -> None:
    clock = FakeClock()
    async with replaying(two_racers(), clock) as (pilot, screen):
        assert screen.playing and screen.step == 0
        assert screen.position_text.startswith("▶ playing x1\nmove 0 of")
        await later(pilot, screen, clock, 1.6)  # Ann's first card at 1 s, Bob's at 1.5 s
        assert screen.step == 2 and shown_boards(screen) == {"ann": 1, "bob": 1}
        await pilot.press("space")
        assert not screen.playing and screen.position_text.startswith("❚❚ paused")
        await later(pilot, screen, clock, 10)
        assert screen.step == 2  # paused: the clock passing changes nothing
        await pilot.press("space")
        await later(pilot, screen, clock, 0.5)  # 2.1 s of race: Ann's second card too
        assert screen.step == 3 and shown_boards(screen) == {"ann": 2, "bob": 1}


async def test_speed_steps_and_the_ends() -> None:
    clock = FakeClock()
    record = two_racers()
    async with replaying(record, clock) as (pilot, screen):
        await pilot.press("plus", "plus")  # x4
        assert screen.speed == 4 and "x4" in screen.position_text
        await later(pilot, screen, clock, 1)  # 4 s of race
        assert screen.step == Replay(record).step_at(4000) == 6
        await pilot.press("minus", "minus", "minus")
        assert screen.speed == 0.5
        for _ in range(len(SPEEDS) + 2):
            await pilot.press("plus")
        assert screen.speed == SPEEDS[-1]  # no faster than the fastest
        await pilot.press("right")  # a step pauses, then shows one move more
        assert not screen.playing and screen.step == 7  # Bob's third card, at 4.5 s
        assert shown_boards(screen) == {"ann": 4, "bob": 3}
        tiles = screen.query_one(BoardTiles)
        assert tiles.grids["bob"].highlight == LINE[2] and tiles.grids["ann"].highlight is None
        await pilot.press("left", "left", "h")
        assert screen.step == 4 and shown_boards(screen) == {"ann": 3, "bob": 1}
        await pilot.press("end")
        assert screen.step == screen.replay.length
        leaders = screen.query_one(Leaderboard).entries
        assert [e.racer for e in leaders] == ["ann", "bob"]
        assert leaders[0].status is RacerStatus.WON and leaders[1].status is RacerStatus.RESIGNED
        await pilot.press("right")  # nothing past the end
        assert screen.step == screen.replay.length
        await pilot.press("home")
        assert screen.step == 0 and shown_boards(screen) == {"ann": 0, "bob": 0}


async def test_playing_at_the_end_starts_over_and_stops_at_the_last_move() -> None:
    clock = FakeClock()
    async with replaying(two_racers(), clock) as (pilot, screen):
        await pilot.press("end", "space")
        assert screen.playing and screen.step == 0
        await later(pilot, screen, clock, 3600)
        assert not screen.playing and screen.step == screen.replay.length
        assert screen.position_text.startswith("❚❚ paused")


async def test_the_footer_names_the_keys_and_the_panel_says_nothing_is_hidden() -> None:
    async with replaying(two_racers(), FakeClock()) as (_, screen):
        shown = {active.binding.description for active in screen.active_bindings.values()
                 if active.binding.show}
        assert {"play/pause", "step", "back", "faster", "slower", "close", "quit"} <= shown
        assert "Home: the start · End: the end" in screen.position_text
        fog = str(screen.query_one("#fog").render())
        assert fog.startswith("Nothing is hidden in a replay: the race is over")
        verified = str(screen.query_one("#verified").render())
        assert verified.startswith(f"Seed {WON_SEED}\n✓ verified")
        assert len(screen.query(GridView)) == 2


async def test_a_record_without_times_says_so() -> None:
    clock = FakeClock()
    async with replaying(two_racers(timed=False), clock) as (pilot, screen):
        assert "no move times" in screen.position_text
        await later(pilot, screen, clock, UNTIMED_STEP_MS * 2.5 / 1000)
        assert screen.step == 2


# ------------------------------------------------------------------ the command


def test_watch_file_refuses_what_is_not_a_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert foursquare(["watch", "--file", "-"]) == 2  # the screen's keys come from there
    assert "needs a file, not standard input" in capsys.readouterr().err
    junk = tmp_path / "junk.json"
    junk.write_text('{"race": 1}')
    assert foursquare(["watch", "--file", str(junk)]) == 2
    assert "cannot read a result from" in capsys.readouterr().err
    record = two_racers()
    bob = dataclasses.replace(record.racers[1], moves=((0, 0), (3, 3)), move_ms=(1, 2))
    bad = tmp_path / "bad.json"
    bad.write_text(dataclasses.replace(record, racers=(record.racers[0], bob)).to_json())
    assert foursquare(["watch", "--file", str(bad)]) == 2
    assert "race R1 cannot be replayed: racer 'bob'" in capsys.readouterr().err


async def test_watch_file_opens_the_replay(tmp_path: Path) -> None:
    from cli.client_commands import replay_app

    saved = tmp_path / "result.json"
    saved.write_text(two_racers().to_json())
    app = replay_app(saved)
    assert app is not None
    async with app.run_test(size=(100, 30)) as pilot:
        screen = pilot.app.screen
        assert isinstance(screen, ReplayScreen) and screen.replay.result == two_racers()
