"""The cluster's bus by itself: what relaying a move through Redis costs, with nothing else.

    taskset -c 0 python -m bench.bus --moves 3000 --bursts 1,20 --loop uvloop --priority -10

Two :class:`~server.redis_bus.RedisBus` in one process stand for two nodes on the
machine's Redis, with no race tier, no store and no sockets. Node ``b`` sends a ``place``
(a :class:`~server.bus.Request`) for a race node ``a`` owns; ``a`` answers it as a race
does: one run of two events (``placed`` and ``card``) to the racer's session, which
``b``'s socket tier follows, and a progress update on the race's feed, which both nodes
follow (so ``a`` reads its own back from Redis and drops it, as an owner does). Moves go
in bursts of ``K`` (``K`` racers of ``K`` races moving at once, as under load), the next
burst once every answer of the last is in. Measured: the process's CPU per relayed move
(both nodes' bus: the codec, the writer, the reader, redis-py) and each burst's round
trip. Beside it, the floor: the same round trip through redis-py alone (a ``PUBLISH``
answered by a ``PUBLISH``, read with ``get_message``), one message each way.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import time
from collections.abc import Collection, Sequence
from typing import Any

import redis.asyncio as redis

from bench.load import REDIS_URL, prioritise
from cli.server_commands import LOOPS, event_loop_factory
from protocol import Place, Role
from server.bus import (
    Audience,
    Caller,
    Command,
    Deliver,
    Event,
    Request,
    ToFeed,
    ToSession,
    race_feed,
    session_channel,
)
from server.redis_bus import RedisBus

#: Seconds an answer may take before the run gives up (nothing here waits unbounded).
ANSWER_TIMEOUT = 10.0


def _percentiles(seconds: list[float]) -> dict[str, float]:
    ordered = sorted(seconds)
    return {f"p{p}": 1e3 * ordered[min(len(ordered) - 1, len(ordered) * p // 100)]
            for p in (50, 90, 99)}


async def relay(url: str, moves: int, burst: int) -> dict[str, Any]:
    """Relay ``moves`` moves in bursts of ``burst``; CPU per move and round trips (ms)."""
    prefix = f"bench-bus-{os.getpid()}-{burst}"
    owner, relayer = RedisBus(url, prefix, "a", failover_wait=5.0), \
        RedisBus(url, prefix, "b", failover_wait=5.0)
    for node in (owner, relayer):
        await node.start()
        await node.subscribed()
    races = [f"R{index:04d}" for index in range(burst)]
    callers = [Caller(f"s{index}", f"racer{index}", False, Role.PLAYER) for index in range(burst)]

    def run_move(command: Command) -> None:
        assert isinstance(command, Request) and isinstance(command.message, Place)
        to = ToSession(command.caller.session_id)
        owner.publish([Deliver(to, b"p" * 40, received_at=command.received_at),
                       Deliver(to, b"c" * 60)])
        owner.publish([Deliver(ToFeed(race_feed(command.message.race), Audience.EVERYONE),
                               b"g" * 120)])

    async def owned_by_a(resources: Collection[str]) -> dict[str, str]:
        return dict.fromkeys(resources, "a")

    answered = 0
    expected = 0
    done = asyncio.Event()

    def heard(events: Sequence[Event]) -> None:
        nonlocal answered
        answered += sum(isinstance(event, Deliver) and isinstance(event.to, ToSession)
                        for event in events)
        if answered >= expected:
            done.set()

    owner.serve(run_move, owns=lambda resource: True)
    owner.listen(lambda events: None)
    relayer.serve(None, owns=lambda resource: False, resolve=owned_by_a)
    relayer.listen(heard)
    for caller, race in zip(callers, races, strict=True):
        relayer.subscribe(session_channel(caller.session_id))
        owner.subscribe(race_feed(race))
        relayer.subscribe(race_feed(race))
    await asyncio.sleep(0.5)  # the subscriptions are in

    async def bursts(count: int) -> list[float]:
        nonlocal expected
        times = []
        for number in range(count):
            expected += 2 * burst
            done.clear()
            start = time.perf_counter()
            for caller, race in zip(callers, races, strict=True):
                relayer.send(Request(caller, Place(race=race, move=1 + number % 40, row=0, col=0,
                                                   id=number % 1000), start))
            await asyncio.wait_for(done.wait(), ANSWER_TIMEOUT)
            times.append(time.perf_counter() - start)
        return times

    await bursts(max(10, 200 // burst))  # warm up
    cpu = time.process_time()
    times = await bursts(moves // burst)
    cpu = time.process_time() - cpu
    for node in (owner, relayer):
        await node.aclose()
    return {"burst": burst, "moves": len(times) * burst,
            "cpu_us_per_move": 1e6 * cpu / (len(times) * burst),
            "round_trip_ms": _percentiles(times)}


async def floor(url: str, rounds: int) -> dict[str, Any]:
    """The round trip of one message each way through redis-py alone."""
    prefix = f"bench-bus-floor-{os.getpid()}"
    client = redis.Redis.from_url(url)
    listeners = [client.pubsub(ignore_subscribe_messages=True) for _ in range(2)]
    for listener, side in zip(listeners, "ab", strict=True):
        await listener.subscribe(f"{prefix}:{side}")

    async def next_message(listener: Any) -> bytes:
        async with asyncio.timeout(ANSWER_TIMEOUT):
            while True:
                message = await listener.get_message(ignore_subscribe_messages=True,
                                                     timeout=None)
                if message is not None and message["type"] == "message":
                    return bytes(message["data"])

    times = []
    cpu = 0.0
    for number in range(rounds + 100):
        if number == 100:
            cpu = time.process_time()
        start = time.perf_counter()
        await client.publish(f"{prefix}:a", b"x" * 100)
        await client.publish(f"{prefix}:b", await next_message(listeners[0]))
        await next_message(listeners[1])
        if number >= 100:
            times.append(time.perf_counter() - start)
    cpu = time.process_time() - cpu
    for listener in listeners:
        await listener.aclose()  # type: ignore[no-untyped-call]
    await client.aclose()
    return {"rounds": rounds, "cpu_us_per_round": 1e6 * cpu / rounds,
            "round_trip_ms": _percentiles(times)}


async def measure(url: str, moves: int, bursts: list[int]) -> dict[str, Any]:
    """The floor, then the bus at each burst size."""
    return {"floor": await floor(url, moves),
            "relay": [await relay(url, moves, burst) for burst in bursts],
            "load_average": list(os.getloadavg())}


def main(argv: Sequence[str] | None = None) -> None:
    """Run the measurements and print them (and write them with ``--json``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--moves", type=int, default=3000)
    parser.add_argument("--bursts", default="1,20", help="comma-separated burst sizes")
    parser.add_argument("--redis", default=os.environ.get("REDIS_URL", REDIS_URL))
    parser.add_argument("--loop", choices=LOOPS, default="asyncio")
    parser.add_argument("--priority", type=int, default=None, metavar="NICE")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    if args.priority is not None:
        with contextlib.suppress(OSError):
            os.setsid()  # a session (and so a scheduling autogroup) of its own
        prioritise(os.getpid(), args.priority)
    bursts = [int(size) for size in args.bursts.split(",")]
    with asyncio.Runner(loop_factory=event_loop_factory(args.loop)) as runner:
        results = runner.run(measure(args.redis, args.moves, bursts))
    floor_ = results["floor"]
    print(f"redis-py alone, a message each way: round trip p50/p90/p99 "
          f"{'/'.join(f'{v:.2f}' for v in floor_['round_trip_ms'].values())} ms, "
          f"{floor_['cpu_us_per_round']:.1f} µs of CPU")
    for row in results["relay"]:
        print(f"bus, bursts of {row['burst']}: {row['cpu_us_per_move']:.1f} µs of CPU a relayed "
              f"move (both nodes), a burst's round trip p50/p90/p99 "
              f"{'/'.join(f'{v:.2f}' for v in row['round_trip_ms'].values())} ms")
    print(f"load average {' '.join(f'{v:.2f}' for v in results['load_average'])}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
