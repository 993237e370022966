"""The load harness runs end to end against the echo floor (tiny load, behaviour only)."""

from __future__ import annotations

import importlib.util
import random
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgpack
import pytest

from bench.load import (
    PROGRESS_SAMPLE,
    Generator,
    LocalGame,
    Settings,
    connections_by_node,
    failover_lines,
    frame_type,
    goals,
    names_race,
    run_target,
    spectator_node,
    summary,
    table,
    target_command,
    unavailable,
)
from engine import Game, Status
from protocol import encode, encode_wire
from protocol.examples import EXAMPLES
from tests.conftest import database_url

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None
LOOPS = [
    "asyncio",
    pytest.param("uvloop", marks=pytest.mark.skipif(not HAS_UVLOOP, reason="no uvloop")),
]


def test_summary_uses_nearest_rank_in_milliseconds() -> None:
    samples = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    assert summary(samples) == {"count": 100, "p50": 51.0, "p90": 91.0, "p99": 100.0,
                                "max": 100.0}
    assert summary([])["p99"] is None


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_frames_type_and_race_are_read_from_its_bytes(name: str) -> None:
    message = EXAMPLES[name]
    frame = encode(message)
    # The type key written first (as another encoder might) is found as well.
    reordered = msgpack.packb(encode_wire(message), use_bin_type=True)
    assert frame_type(frame) == frame_type(reordered) == name.encode()
    race = getattr(message, "race", None)
    if isinstance(race, str):
        assert names_race(frame, race)
        assert not names_race(frame, race + "X")


def test_a_frame_that_is_not_a_map_with_a_type_is_left_to_the_decoder() -> None:
    assert frame_type(msgpack.packb({"kind": "progress"})) is None
    assert frame_type("text") is None
    assert not names_race("text", "AB12")


def test_at_most_a_sample_of_racers_times_progress() -> None:
    for racers, race_size in ((1000, 4), (1000, 1000), (5000, 4), (8, 4)):
        generator = Generator(Settings(racers=racers, race_size=race_size), "ws://x", "server")
        timing = [
            (group, seat)
            for group in generator.groups
            for seat in range(race_size)
            if group.index * race_size + seat < racers and generator.samples_progress(group, seat)
        ]
        assert len(timing) == min(racers, PROGRESS_SAMPLE)


def test_spectators_go_to_every_node_or_to_every_node_but_the_owner() -> None:
    assert [spectator_node(i, 2, "spread") for i in range(4)] == [0, 1, 0, 1]
    assert [spectator_node(i, 3, "others") for i in range(4)] == [1, 2, 1, 2]
    assert spectator_node(5, 1, "others") == 0  # one node: it has them all
    settings = Settings(racers=10, spectators=7, spectators_on="others")
    assert connections_by_node(settings, 2) == [5, 5 + 7]
    assert connections_by_node(replace(settings, spectators_on="spread"), 2) == [5 + 4, 5 + 3]


def test_the_target_and_the_floor_get_the_same_loop() -> None:
    for target in ("server", "server-no-journal", "echo"):
        command = target_command(target, 9999, Path("x.db"), "uvloop")
        assert command[command.index("--loop") + 1] == "uvloop"


def test_a_loop_that_is_not_installed_is_a_reason_not_to_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)
    for target in ("server", "echo"):
        reason = unavailable(target, "uvloop")
        assert reason is not None and "not installed" in reason
    assert unavailable("echo", "asyncio") is None


def test_an_echo_racer_plays_legal_moves_and_deals_again_when_its_game_is_over() -> None:
    # Echo racers choose their moves as server racers do, on real games, so the generator
    # works as hard against the floor as against the server; the engine judges the moves.
    local, rng = LocalGame("s"), random.Random(1)
    deals = 0
    while deals < 3:
        engine_game = Game.new(f"s-{deals}")
        while engine_game.status is Status.PLAYING:
            position = local.choose(rng)
            assert position in engine_game.legal_moves()
            engine_game.play(position)
            local.play(position)
        deals += 1
        assert local.board.piles == 0  # the next deal starts on an empty board


def test_the_floor_is_measured_twice_around_the_server_and_each_judged_by_its_best_run() -> None:
    name, runs, check = goals(Settings())[0]
    assert "echo floor" in name
    assert [target for target, _ in runs] == ["server", "echo", "echo", "server"]
    assert len({settings for _, settings in runs}) == 2  # two runs of each, not one reused

    def run(p99: float, errors: int = 0) -> dict[str, object]:
        return {"rtt_ms": {"p99": p99}, "errors": errors}

    text, ok = check({"server": [run(2.8), run(1.6)], "echo": [run(0.9), run(0.8)]})
    assert ok is True and "1.6 vs 0.8 ms = 2.0x" in text
    # One disturbed echo run does not make the server look closer to the floor.
    assert check({"server": [run(2.8), run(2.4)], "echo": [run(2.1), run(0.8)]})[1] is False
    assert check({"server": [run(1.6, errors=1), run(2.0)],
                  "echo": [run(0.8), run(1.0)]})[1] is False


def test_the_crowd_goal_shows_the_cpu_a_move_took() -> None:
    _, runs, check = goals(Settings())[1]
    assert [(target, settings.racers) for target, settings in runs] == [("server", 5000)]
    run = {"rtt_ms": {"p99": 33.6}, "connected": 5020, "moves_per_second": 4969.0,
           "server_cpu_percent": 89.4}
    text, ok = check({"server": [run]})
    assert ok is True and "4,969 moves/s at 0.180 ms of CPU a move" in text
    assert check({"server": [{**run, "rtt_ms": {"p99": 179.9}}]})[1] is False


@pytest.mark.parametrize("loop", LOOPS)
def test_echo_target_measures_moves_and_fan_out(loop: str) -> None:
    settings = Settings(racers=8, race_size=4, think=0.2, spectators=2, duration=2.5, warmup=0.5,
                        loop=loop, scrape=0.5)
    result = run_target("echo", settings)
    assert result["scrape_ms"]["count"] == 0  # the floor has no /metrics
    assert result["connected"] == 10
    assert result["errors"] == 0
    assert result["moves"] > 0
    assert result["rtt_ms"]["count"] == result["moves"]
    assert result["progress_racers_ms"]["count"] > 0
    assert result["progress_spectators_ms"]["count"] > 0
    assert result["rss_idle_mib"] > 0
    assert result["loop"] == loop
    assert "| echo | 8 |" in table([result])


def test_server_target_races_with_real_clients() -> None:
    settings = Settings(racers=8, race_size=4, think=0.1, spectators=2, duration=3, warmup=0.5,
                        scrape=0.5)
    result = run_target("server", settings)
    assert result["scrape_ms"]["count"] >= 3  # /metrics scraped in the measured window
    assert result["connected"] == 10
    assert result["errors"] == 0, result["error_codes"]
    assert result["races_started"] >= 2
    assert result["moves"] > 0
    assert result["progress_racers_ms"]["count"] > 0
    assert result["progress_spectators_ms"]["count"] > 0
    assert result["journal"] == "disk"


def test_a_killed_owners_racers_resume_on_the_other_node_and_move_again(
    redis_url: str,
) -> None:
    # Racers 0, 2, 4, 6 are on node 0, where both races are made (their creators, seats
    # 0, are racers 0 and 4); the kill strands all eight, and the four on node 0 lose
    # their connections too.
    settings = Settings(racers=8, race_size=4, think=0.1, spectators=2, duration=14,
                        warmup=0.5, nodes=2, redis=redis_url, postgres=database_url(),
                        kill_owner_after=3, lease_ttl=1)
    result = run_target("cluster", settings)
    failover = result["failover"]
    assert failover["stranded"] == 8
    assert failover["never_back"] == 0
    assert failover["back_ms"]["count"] == failover["ready_ms"]["count"] == 8
    assert failover["resumed_connections"] >= 5  # four racers and a spectator at least
    assert result["errors"] == 0, result["error_codes"]
    # The surviving node took both races over (at once, or one at each look) and logged
    # each takeover's phases, which the run keeps.
    takeovers = result["takeovers"]
    assert sum(taken["races"] for taken in takeovers) == 2, takeovers
    assert all(taken["done_s"] > 0 and taken["acquire_ms"] is not None for taken in takeovers)
    line, *details = failover_lines([result])
    assert "8 racers were in its races; 8 moved again" in line
    phases = [detail for detail in details if "a takeover of" in detail]
    assert len(phases) == len(takeovers)
    assert all("read" in phase for phase in phases)
    # The four racers of node 0 resumed elsewhere, the four of node 1 did not.
    assert failover["ready_ms_resumed"]["count"] == failover["ready_ms_stayed"]["count"] == 4
    assert any("4 racers who resumed" in detail for detail in details)


def test_the_failover_goal_wants_every_racer_back() -> None:
    failover: dict[str, Any] = {
        "stranded": 1000, "never_back": 0, "resumed_connections": 510,
        "back_ms": {"count": 1000, "p50": 3100.0, "p99": 4200.0, "max": 4500.0},
        "ready_ms": {"count": 1000, "p50": 2900.0, "p99": 3100.0, "max": 3200.0},
    }
    run = {"racers": 1000, "nodes": 2, "lease_ttl": 2.0, "kill_owner_after": 15.0,
           "failover": failover}
    assert failover_lines([run])[0].endswith("every racer back): met.")
    stranded = {**run, "failover": {**failover, "never_back": 1}}
    assert failover_lines([stranded])[0].endswith("**not met**.")
    slow = {**run, "failover": {**failover, "back_ms": {
        "count": 1000, "p50": 3100.0, "p99": 5200.0, "max": 6000.0}}}
    assert failover_lines([slow])[0].endswith("**not met**.")
    assert failover_lines([{**run, "failover": None}]) == []
