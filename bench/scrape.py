"""The cost of one ``/metrics`` exposition: ``Metrics.render()`` as a loaded server runs it.

    python -m bench.scrape --racers 5000

The process first opens one socket per racer (the process metrics list its open files, so
they cost in proportion) and fills :class:`~server.metrics.Metrics` as such a server would:
every connection open, races of four running, a dozen error codes, a million moves in the
latency histogram. Then it times ``render()`` again and again, on the event loop's thread
as the server does, and prints the median and the 90th percentile of a render in
milliseconds, and the size of the exposition. It reads nothing but ``Metrics()``, its
attributes and ``render()``, so it measures any version of the server's exposition.
"""

from __future__ import annotations

import argparse
import random
import resource
import socket
import statistics
import time

from server.metrics import Metrics

#: Error codes counted in the filled metrics (a plausible dozen).
ERROR_CODES = ("bad_frame", "bad_message", "bad_move_number", "illegal_move", "not_racing",
               "race_full", "race_not_found", "rate_limited", "unknown_type", "not_welcomed",
               "already_welcomed", "name_taken")


def filled_metrics(racers: int) -> Metrics:
    """Metrics as a server with ``racers`` racers (in races of four) might hold them."""
    metrics = Metrics()
    rng = random.Random(1)
    metrics.connections_total = metrics.seats_total = racers
    metrics.open_connections = lambda: racers
    races = {"lobby": 0, "countdown": 0, "running": racers // 4, "finished": 0}
    metrics.races_by_phase = lambda: dict(races)
    for code in ERROR_CODES:
        metrics.errors[code] = rng.randrange(1, 1000)
    for _ in range(1_000_000):
        metrics.move_latency.observe(rng.expovariate(1000))
    metrics.moves_total = 1_000_000
    return metrics


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--racers", type=int, default=5000)
    parser.add_argument("--renders", type=int, default=500)
    args = parser.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, args.racers + 100)), hard))
    sockets = [socket.socket() for _ in range(args.racers)]
    metrics = filled_metrics(args.racers)
    rendered = metrics.render()  # text before the Prometheus client library, bytes since
    size = len(rendered.encode() if isinstance(rendered, str) else rendered)
    seconds = []
    for _ in range(args.renders):
        started = time.perf_counter()
        metrics.render()
        seconds.append(time.perf_counter() - started)
    seconds.sort()
    print(f"render at {args.racers:,} racers ({len(sockets):,} sockets open): "
          f"median {1000 * statistics.median(seconds):.3f} ms, "
          f"p90 {1000 * seconds[int(0.9 * len(seconds))]:.3f} ms, {size:,} bytes")
    for held in sockets:
        held.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
