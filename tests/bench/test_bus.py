"""The bus bench relays real moves through the machine's Redis (a few, behaviour only)."""

from __future__ import annotations

import asyncio

from bench.bus import measure


def test_the_bus_bench_relays_every_move_and_times_each_burst(redis_url: str) -> None:
    results = asyncio.run(measure(redis_url, 40, [1, 4]))
    assert results["floor"]["rounds"] == 40
    assert results["floor"]["cpu_us_per_round"] > 0
    single, bursts = results["relay"]
    # Every burst waited for each of its moves' answers before the next went.
    assert (single["burst"], single["moves"]) == (1, 40)
    assert (bursts["burst"], bursts["moves"]) == (4, 40)
    for row in (results["floor"], single, bursts):
        times = row["round_trip_ms"]
        assert 0 < times["p50"] <= times["p90"] <= times["p99"]
    assert single["cpu_us_per_move"] > 0 and bursts["cpu_us_per_move"] > 0
