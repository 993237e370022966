"""What the server counts, and its Prometheus exposition for ``GET /metrics``.

The hot path only adds to plain attributes of :class:`Metrics` (``moves_total += 1``,
``errors[code] += 1``, ``move_latency.observe(seconds)``): no lock, no label lookup, no
call into a library for each move. A scrape reads those attributes through
:class:`_Collector`, which turns them into metric families at that moment, beside the
process metrics of ``prometheus_client`` (memory, CPU, open files, garbage collections),
all in a registry of the server's own (not the library's global one: a test process runs
several servers).

A new metric is an attribute of :class:`Metrics` (counted where it happens) and one line
in :data:`DECLARED`.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from prometheus_client import (
    CollectorRegistry,
    GCCollector,
    PlatformCollector,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

#: Upper bounds (seconds) of the move latency buckets: from receiving ``place`` to sending
#: ``placed``, journal commit included.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

#: The ``Content-Type`` of the exposition: the classic text format, version 0.0.4, which
#: every Prometheus reads (whatever its ``Accept`` header asks for).
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4


class Histogram:
    """A histogram with fixed buckets: one list increment per observation."""

    def __init__(self, bounds: tuple[float, ...] = LATENCY_BUCKETS):
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        """Observations per bucket (not cumulative); the last one is above every bound."""
        self.total = 0.0

    def observe(self, value: float) -> None:
        """Count one observation."""
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def buckets(self) -> list[tuple[str, float]]:
        """The cumulative ``(le, count)`` pairs Prometheus wants, ``+Inf`` last."""
        running, pairs = 0, list[tuple[str, float]]()
        for bound, count in zip(self.bounds, self.counts, strict=False):
            running += count
            pairs.append((f"{bound:g}", running))
        pairs.append(("+Inf", running + self.counts[-1]))
        return pairs


class Metrics:
    """What the server counts. Gauges are read when scraped, through callables."""

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
        self.par_searches_done = 0
        self.par_searches_dropped = 0
        self.par_queue: Callable[[], int] = lambda: 0
        self.winnable_searches_done = 0
        self.winnable_requests: Callable[[], int] = lambda: 0
        self.winnable_stock: Callable[[], int] = lambda: 0

        self.registry = CollectorRegistry()
        """The server's own: :data:`DECLARED`, then the library's process metrics."""
        self.registry.register(_Collector(self))
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        GCCollector(registry=self.registry)

    def render(self) -> bytes:
        """The whole exposition (:data:`CONTENT_TYPE`), ending with a newline."""
        return generate_latest(self.registry)


Reading = float | Mapping[str, float] | Histogram
"""What a metric reads from :class:`Metrics`: a number, numbers by label value, or a
histogram."""


@dataclass(frozen=True, slots=True)
class Declared:
    """One metric of the server: its name, help and type, and how a scrape reads it."""

    name: str
    help: str
    kind: Literal["counter", "gauge", "histogram"]
    read: Callable[[Metrics], Reading]
    label: str | None = None
    """The label name when ``read`` gives numbers by label value."""

    def family(self, metrics: Metrics) -> Metric:
        """This metric's family as it stands now."""
        reading = self.read(metrics)
        if self.kind == "histogram":
            if not isinstance(reading, Histogram):
                raise TypeError(f"{self.name} must read a Histogram, not {reading!r}")
            return HistogramMetricFamily(
                self.name, self.help, buckets=reading.buckets(), sum_value=reading.total
            )
        family_type = CounterMetricFamily if self.kind == "counter" else GaugeMetricFamily
        if isinstance(reading, Histogram):
            raise TypeError(f"{self.name} is a {self.kind}, and reads a Histogram")
        if isinstance(reading, Mapping):
            if self.label is None:
                raise TypeError(f"{self.name} reads numbers by label value, but names no label")
            family = family_type(self.name, self.help, labels=[self.label])
            for value, number in reading.items():
                family.add_metric([value], number)
            return family
        return family_type(self.name, self.help, value=reading)


#: Every metric the server declares, in the order of the exposition (names, types and labels
#: are what dashboards read: keep them). Counters' names end in ``_total``.
DECLARED: tuple[Declared, ...] = (
    Declared("foursquare_connections", "Open websocket connections.", "gauge",
             lambda m: m.open_connections()),
    Declared("foursquare_connections_total", "Websocket connections accepted.", "counter",
             lambda m: m.connections_total),
    Declared("foursquare_races", "Races in memory, by phase.", "gauge",
             lambda m: m.races_by_phase(), label="phase"),
    Declared("foursquare_seats_total", "Racers seated in races (joins accepted).", "counter",
             lambda m: m.seats_total),
    Declared("foursquare_moves_total", "Moves accepted.", "counter",
             lambda m: m.moves_total),
    Declared("foursquare_errors_total", "Error messages sent, by code.", "counter",
             lambda m: dict(sorted(m.errors.items())), label="code"),
    Declared("foursquare_refused_total",
             "Connections and new sessions refused at a cap, by reason.", "counter",
             lambda m: dict(sorted(m.refused.items())), label="reason"),
    Declared("foursquare_limit", "A configured cap, by name (0: none).", "gauge",
             lambda m: m.limits, label="limit"),
    Declared("foursquare_sessions", "Sessions in memory (connected or not).", "gauge",
             lambda m: m.sessions()),
    Declared("foursquare_sessions_expired_total", "Sessions forgotten after their idle time.",
             "counter", lambda m: m.sessions_expired_total),
    Declared("foursquare_move_latency_seconds",
             "From receiving a move to acknowledging it.", "histogram",
             lambda m: m.move_latency),
    Declared("foursquare_par_queue", "Deals waiting for their par search.", "gauge",
             lambda m: m.par_queue()),
    Declared("foursquare_par_searches_total", "Par searches answered by the search worker.",
             "counter", lambda m: m.par_searches_done),
    Declared("foursquare_par_searches_dropped_total",
             "Par searches dropped unsearched (the queue was full, or nobody was left to see "
             "the par).", "counter", lambda m: m.par_searches_dropped),
    Declared("foursquare_winnable_requests",
             "Requests for a winnable deal waiting for a search.", "gauge",
             lambda m: m.winnable_requests()),
    Declared("foursquare_winnable_searches_total",
             "Searches for a winnable deal run by the search worker (refilling the stock "
             "included).", "counter", lambda m: m.winnable_searches_done),
    Declared("foursquare_winnable_stock",
             "Winnable seeds of the default ruleset found ahead of time.", "gauge",
             lambda m: m.winnable_stock()),
)


class _Collector(Collector):
    """Reads :data:`DECLARED` from a :class:`Metrics` at each scrape."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[Metric]:
        return [declared.family(self._metrics) for declared in DECLARED]
