"""Counters for ``GET /metrics``, written in the Prometheus text exposition format."""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable

#: Upper bounds (seconds) of the move latency buckets: from receiving ``place`` to sending
#: ``placed``, journal commit included.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class Histogram:
    """A cumulative histogram with fixed buckets, as Prometheus wants it."""

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS):
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total = 0.0

    def observe(self, value: float) -> None:
        """Count one observation."""
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def lines(self, name: str) -> list[str]:
        """The ``_bucket``, ``_sum`` and ``_count`` lines for metric ``name``."""
        lines, running = [], 0
        for bound, count in zip(self.bounds, self.counts, strict=False):
            running += count
            lines.append(f'{name}_bucket{{le="{bound:g}"}} {running}')
        running += self.counts[-1]
        lines.append(f'{name}_bucket{{le="+Inf"}} {running}')
        lines.append(f"{name}_sum {self.total:.6f}")
        lines.append(f"{name}_count {running}")
        return lines


class Metrics:
    """What the server counts. Gauges are read when rendered, through callables."""

    def __init__(self) -> None:
        self.connections_total = 0
        self.moves_total = 0
        self.seats_total = 0
        self.errors: Counter[str] = Counter()
        self.move_latency = Histogram()
        self.open_connections: Callable[[], int] = lambda: 0
        self.races_by_phase: Callable[[], dict[str, int]] = dict
        self.refused: Counter[str] = Counter()
        """Upgrades and new sessions refused at a cap, by reason (see server.admission)."""
        self.limits: dict[str, float] = {}
        """The configured caps, by name (0: none)."""
        self.sessions: Callable[[], int] = lambda: 0
        self.sessions_expired_total = 0

    def render(self) -> str:
        """The whole exposition, ending with a newline."""
        out = [
            "# HELP foursquare_connections Open websocket connections.",
            "# TYPE foursquare_connections gauge",
            f"foursquare_connections {self.open_connections()}",
            "# HELP foursquare_connections_total Websocket connections accepted.",
            "# TYPE foursquare_connections_total counter",
            f"foursquare_connections_total {self.connections_total}",
            "# HELP foursquare_races Races in memory, by phase.",
            "# TYPE foursquare_races gauge",
        ]
        out += [f'foursquare_races{{phase="{p}"}} {n}' for p, n in self.races_by_phase().items()]
        out += [
            "# HELP foursquare_seats_total Racers seated in races (joins accepted).",
            "# TYPE foursquare_seats_total counter",
            f"foursquare_seats_total {self.seats_total}",
            "# HELP foursquare_moves_total Moves accepted.",
            "# TYPE foursquare_moves_total counter",
            f"foursquare_moves_total {self.moves_total}",
            "# HELP foursquare_errors_total Error messages sent, by code.",
            "# TYPE foursquare_errors_total counter",
        ]
        errors = sorted(self.errors.items())
        out += [f'foursquare_errors_total{{code="{code}"}} {n}' for code, n in errors]
        out += [
            "# HELP foursquare_refused_total Connections and new sessions refused at a cap, "
            "by reason.",
            "# TYPE foursquare_refused_total counter",
        ]
        refused = sorted(self.refused.items())
        out += [f'foursquare_refused_total{{reason="{reason}"}} {n}' for reason, n in refused]
        out += [
            "# HELP foursquare_limit A configured cap, by name (0: none).",
            "# TYPE foursquare_limit gauge",
        ]
        out += [f'foursquare_limit{{limit="{name}"}} {n:g}' for name, n in self.limits.items()]
        out += [
            "# HELP foursquare_sessions Sessions in memory (connected or not).",
            "# TYPE foursquare_sessions gauge",
            f"foursquare_sessions {self.sessions()}",
            "# HELP foursquare_sessions_expired_total Sessions forgotten after their idle time.",
            "# TYPE foursquare_sessions_expired_total counter",
            f"foursquare_sessions_expired_total {self.sessions_expired_total}",
        ]
        out += [
            "# HELP foursquare_move_latency_seconds From receiving a move to acknowledging it.",
            "# TYPE foursquare_move_latency_seconds histogram",
            *self.move_latency.lines("foursquare_move_latency_seconds"),
        ]
        return "\n".join(out) + "\n"
