"""The load harness runs end to end against the echo floor (tiny load, behaviour only)."""

from __future__ import annotations

from bench.load import Settings, run_target, summary, table


def test_summary_uses_nearest_rank_in_milliseconds() -> None:
    samples = [i / 1000 for i in range(1, 101)]  # 1..100 ms
    assert summary(samples) == {"count": 100, "p50": 51.0, "p90": 91.0, "p99": 100.0,
                                "max": 100.0}
    assert summary([])["p99"] is None


def test_echo_target_measures_moves_and_fan_out() -> None:
    settings = Settings(racers=8, race_size=4, think=0.2, spectators=2, duration=2.5, warmup=0.5)
    result = run_target("echo", settings)
    assert result["connected"] == 10
    assert result["errors"] == 0
    assert result["moves"] > 0
    assert result["rtt_ms"]["count"] == result["moves"]
    assert result["progress_racers_ms"]["count"] > 0
    assert result["progress_spectators_ms"]["count"] > 0
    assert result["rss_idle_mib"] > 0
    assert "| echo | 8 |" in table([result])


def test_server_target_races_with_real_clients() -> None:
    settings = Settings(racers=8, race_size=4, think=0.1, spectators=2, duration=3, warmup=0.5)
    result = run_target("server", settings)
    assert result["connected"] == 10
    assert result["errors"] == 0, result["error_codes"]
    assert result["races_started"] >= 2
    assert result["moves"] > 0
    assert result["progress_racers_ms"]["count"] > 0
    assert result["journal"] == "disk"
