"""The server's configuration: one dataclass, built from flags and environment variables."""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from server.journal import Sync
from server.lobby import RaceIdSource, new_race_id
from server.race import MAX_COUNTDOWN, RECONNECT_GRACE, SeedSource, random_seed
from server.store import is_database_url

#: Environment variables read by :meth:`ServerConfig.from_environment`, by field.
ENVIRONMENT = {
    "host": "FOURSQUARE_HOST",
    "port": "FOURSQUARE_PORT",
    "db": "FOURSQUARE_DB",
    "sync": "FOURSQUARE_SYNC",
    "max_connections": "FOURSQUARE_MAX_CONNECTIONS",
    "max_connections_per_address": "FOURSQUARE_MAX_CONNECTIONS_PER_ADDRESS",
    "new_sessions_per_minute": "FOURSQUARE_NEW_SESSIONS_PER_MINUTE",
    "session_idle_expiry": "FOURSQUARE_SESSION_EXPIRY",
    "session_expiry_interval": "FOURSQUARE_SESSION_EXPIRY_INTERVAL",
    "max_open_tournaments": "FOURSQUARE_MAX_TOURNAMENTS",
    "tournaments_per_session": "FOURSQUARE_TOURNAMENTS_PER_SESSION",
    "tournament_idle_expiry": "FOURSQUARE_TOURNAMENT_EXPIRY",
    "daily_countdown": "FOURSQUARE_DAILY_COUNTDOWN",
    "trusted_proxies": "FOURSQUARE_TRUSTED_PROXIES",
    "tls_cert": "FOURSQUARE_TLS_CERT",
    "tls_key": "FOURSQUARE_TLS_KEY",
    "metrics_host": "FOURSQUARE_METRICS_HOST",
    "metrics_port": "FOURSQUARE_METRICS_PORT",
    "web_root": "FOURSQUARE_WEB_ROOT",
    "cluster": "FOURSQUARE_CLUSTER",
    "cluster_prefix": "FOURSQUARE_CLUSTER_PREFIX",
    "node_id": "FOURSQUARE_NODE_ID",
    "lease_ttl": "FOURSQUARE_LEASE_TTL",
}

Clock = Callable[[], float]
"""Seconds since the Unix epoch (a wall clock: race times survive a restart)."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything the server can be told. Defaults suit ``make run`` on one machine."""

    host: str = "127.0.0.1"
    port: int = 8765
    """0 picks a free port (tests)."""
    metrics_port: int | None = None
    """Where ``GET /metrics`` is served: ``None`` on the game port, beside the websockets;
    a port of its own otherwise (0 picks a free one), and then the game port answers 404
    for ``/metrics``, so the public address shows nothing of the server's insides."""
    metrics_host: str = "127.0.0.1"
    """The address of the metrics port (only with ``metrics_port``): loopback unless told
    otherwise, since metrics are for the operator's scraper, not for players."""
    metrics_request_bytes: int = 8192
    """Bytes of request line and headers the metrics port reads before it answers 400."""
    web_root: str | None = None
    """The folder whose files make the web client served on the game port (``/`` and
    ``/static/``): ``None`` for the checkout's own ``web/public``. Read once at start."""
    db: str = "foursquare.db"
    """The store: an SQLite journal file, or a ``postgresql://`` URL (see
    :mod:`server.store`)."""
    sync: Sync = Sync.NORMAL
    """What a journal commit survives: a killed server (``normal``) or also a power loss
    (``full``, one ``fsync`` per group commit). SQLite only: PostgreSQL's commits are
    what its own ``synchronous_commit`` makes them."""
    store_timeout: float = 5.0
    """Seconds PostgreSQL has to connect, or to commit a transaction, before the store
    counts as unavailable (the moves waiting on it are not acknowledged); a database that
    does not answer would otherwise hold every move for good."""
    cluster: str | None = None
    """A ``redis://`` URL: this server is a node of a cluster whose nodes meet on that
    Redis (the bus) and share the PostgreSQL store ``db`` names (see
    :mod:`server.cluster`). ``None``: one server on its own, with the in-process bus."""
    cluster_prefix: str = "foursquare"
    """What every Redis channel of the cluster starts with: several clusters (or tests)
    can share one Redis, each with its own prefix."""
    node_id: str | None = None
    """This node's name in the cluster (who holds a lease); ``None``: one is made at
    start from the host's name, the process id and a random part
    (:func:`server.cluster.new_node_id`), so that a restarted node is a new one."""
    lease_ttl: float = 2.0
    """Seconds a node of a cluster holds a lease (its races', the lobby's) without renewing
    it (it renews every quarter of that: :data:`server.cluster.RENEWALS_PER_LEASE`). A node
    that dies has its races taken over once this has passed, so it bounds how long they
    stand still; a node that pauses longer than about three quarters of it (a stop of its
    process, a database that does not answer) loses its races to another node, which
    takes them over as if it had died (its late writes are refused: nothing is lost)."""
    failover_wait: float = 15.0
    """Seconds a node keeps trying to hand a command to the cluster's leader when no
    node leads (a failover under way, or Redis cut off); then the request is refused with
    ``unavailable``. More than ``lease_ttl`` plus a takeover, so that a failover alone
    refuses nothing."""
    journal: bool = True
    """``False`` only to measure the journal's cost: nothing is stored, nothing recovered."""
    quick_countdown: float = 5.0
    """Seconds of countdown in a quick race once it has its minimum racers, and in every
    tournament race once its entrants are seated."""
    quick_min_racers: int = 2
    quick_max_racers: int = 8
    time_limit: float = 600.0
    """Quick races' time limit, in seconds."""
    progress_interval: float = 0.1
    """Per race, at most one progress update per this many seconds."""
    spectator_view_interval: float = 0.1
    """Per race, at most one view (snapshot, progress, boards) is built for new spectators
    per this many seconds: those who start watching meanwhile wait for the next one and
    are sent it as the same bytes. See :meth:`server.host.RaceHost.watch`."""
    reconnect_grace: float = RECONNECT_GRACE
    """Seconds a racer whose connection dropped mid-race has to resume before it is
    counted out (resigned), so that a racer who quits holds the race up for this long, not
    for the whole time limit (every race the server opens gets it)."""
    rate_per_second: float = 20.0
    """Messages a connection may send per second, sustained..."""
    rate_burst: int = 40
    """...and in a burst."""
    rate_strikes: int = 50
    """Messages refused for rate before the connection is closed."""
    bad_messages: int = 20
    """Malformed messages tolerated before the connection is closed (before ``hello``,
    every frame that is not a ``hello`` counts as one)."""
    logged_errors_per_connection: int = 10
    """Log lines a connection's errors may cause (``error_sent``, ``internal_error``);
    past them errors are only counted, in the connection's ``connection_close`` line. A
    client can cause an error per frame: one line each would let it fill the disk."""
    max_connections: int = 10_000
    """Open websocket connections, in all (0: no cap). Past it an upgrade is refused with
    HTTP 503. The load goal is 5,000 racers, each with a connection, plus spectators."""
    listen_backlog: int = 1024
    """Connections the kernel completes and queues for the server before it accepts them
    (the listening socket's backlog; the kernel caps it at ``net.core.somaxconn``). When a
    node dies its clients all resume on the others within a moment, hundreds at once,
    while the survivor is busy taking its races over: past the backlog the kernel drops
    their handshakes and each client's TCP retries them 1, 3, 7 s later (asyncio's
    default, 100, made the tail of a failover; see docs/performance.md, *Failover*)."""
    max_connections_per_address: int = 100
    """Open websocket connections from one client address (0: no cap); past it an upgrade
    is refused with HTTP 429. An IPv6 address counts as its /64 (one host or household).
    A club behind one NAT, or a few dozen bots on one machine, fit under it."""
    new_sessions_per_minute: int = 30
    """New sessions (``hello`` without a resume token) one client address may start per
    minute, in a burst or spread out (0: no cap); past it ``hello`` gets ``server_busy``.
    A resume is never counted."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses or networks (CIDR) of reverse proxies whose ``X-Forwarded-For`` header
    says who the client is. From any other peer the header is ignored."""
    session_idle_expiry: float = 24 * 3600.0
    """Seconds a session with no connection, in no race and entered in no tournament that
    is not over is kept; then it is forgotten and its resume token is refused (0: never).
    Long enough for a client that keeps its token to come back the next day."""
    session_expiry_interval: float = 60.0
    """Seconds between two looks for expired sessions."""
    session_expiry_batch: int = 1000
    """Sessions forgotten at most in one look (then the next look comes at once, after
    the event loop has run what waits): a backlog never holds the loop for long."""
    tls_cert: str | None = None
    """PEM certificate chain: with ``tls_key``, the server speaks ``wss://`` (and
    ``https://`` for ``/healthz`` and ``/metrics``)."""
    tls_key: str | None = None
    """The PEM private key of ``tls_cert``."""
    handshake_timeout: float = 10.0
    """Seconds to say ``hello`` after the websocket opens (and for the HTTP upgrade, and for
    a request and its answer on the metrics port)."""
    close_timeout: float = 10.0
    """Seconds a connection the server closes waits for the client's answer to its close
    frame (and for the TCP connection to end) before dropping it. A stopping server closes
    every connection at once, so a client that never answers holds a SIGTERM this long at
    most, after the races and the journal have been flushed."""
    idle_timeout: float = 900.0
    """Seconds without any message before the connection is closed."""
    send_buffer_limit: int = 4 * 1024 * 1024
    """Bytes a connection may leave unread before it is cut off (a client that stops
    reading must not make the server hold its backlog)."""
    ping_interval: float = 20.0
    """Seconds a connection may send nothing (since its last ping, too) before it is pinged."""
    ping_timeout: float = 20.0
    """Seconds a ping waits for its pong before the connection is closed with 1011."""
    watched_races: int = 32
    """Races one session may spectate at once (each is journaled, so that a spectator
    resumed after a restart is sent them again). Past it, ``spectate`` first stops
    watching the oldest watched races that are over or forgotten, and is refused with
    ``server_busy`` when every one is still on. The terminal client follows at most 12."""
    finished_linger: float = 300.0
    """Seconds a finished race or tournament stays in memory for late resumes and
    spectators. Then a race's result, and a finished tournament for ``watch_tournament``
    and ``export_tournament``, are read from the store."""
    max_open_tournaments: int = 1000
    """Tournaments not finished the server holds at once (0: no cap); past it
    ``create_tournament`` gets ``server_busy``. Every one is in memory and brought back at
    each start until it finishes, and an abandoned one finishes only after
    ``tournament_idle_expiry``: this is what bounds them."""
    tournaments_per_session: int = 3
    """Tournaments one session may hold at once (0: no cap): those it created that are not
    finished, or finished less than ``finished_linger`` ago (still in memory, so that
    creating and ending tournaments in a loop cannot fill it). Past it ``create_tournament``
    gets ``server_busy``. A host runs one tournament at a time, a club a few."""
    tournament_idle_expiry: float = 24 * 3600.0
    """Seconds a tournament not finished may go with no race in progress and no event
    (nobody joined, left, was dealt or scored, the host changed nothing) before the server
    ends it as the host's ``end`` would (0: never). Long enough for a club that meets in
    the evening to pick its tournament up again the next day."""
    par_budget: float = 2.0
    """Seconds the solver may spend on a finished race's par (in a low-priority child
    process, after the result is out); 0 computes no par."""
    par_queue_limit: int = 16
    """Deals whose par may wait for the search worker at once. The newest finished race is
    searched first; when one more would not fit, the oldest waiting is dropped (its
    racers have most likely moved on) and gets no ``race_par``."""
    winnable_budget: float = 3.0
    """Seconds one search for a winnable deal may take in all, across the seeds it tries
    (in a low-priority child process); past it the request is refused with
    ``no_winnable_deal``."""
    winnable_searches: int = 4
    """Searches for a winnable deal waiting or running at once, server-wide; one more is
    refused at once with ``server_busy`` (and a session may have only one at a time)."""
    winnable_stock: int = 4
    """Winnable seeds of the default ruleset kept found ahead of time (refilled in the
    background, idle when full), so that an ordinary winnable race never waits for a
    search; 0 keeps none."""
    daily_countdown: float = 15.0
    """Seconds a daily room counts down from its first racer: whoever asks for the day's
    deal meanwhile races in the same room (up to ``quick_max_racers``), after it the next
    asker opens the next room. The day's reveal waits for this and ``time_limit`` after
    midnight (:func:`server.daily.reveal_at`)."""
    daily_tick: float = 60.0
    """Seconds between two looks for a revealed day whose par was never searched for."""
    hopeless_ruleset_seconds: float = 600.0
    """Seconds a ruleset whose search for a winnable deal ran out of budget is refused up
    front with ``no_winnable_deal``, without searching again."""
    clock: Clock = field(default=time.time, compare=False)
    seed_source: SeedSource = field(default=random_seed, compare=False)
    race_ids: RaceIdSource = field(default=new_race_id, compare=False)
    """Draws the candidate ids of new races (each then checked against the store, or
    leased in a cluster, before use: :mod:`server.race_ids`)."""

    @classmethod
    def from_environment(
        cls, environ: Mapping[str, str] = os.environ, **flags: object
    ) -> ServerConfig:
        """Defaults, overridden by environment variables (:data:`ENVIRONMENT`), overridden
        by flags (keyword arguments named as the fields; ``None`` is no flag).

        Raises ``ValueError`` with a sentence naming what is wrong.
        """
        values: dict[str, object] = {}
        for name, variable in ENVIRONMENT.items():
            given = flags.pop(name, None)
            source = None if given is not None else variable
            if given is None:
                given = environ.get(variable)
            if given is None:
                continue
            try:
                values[name] = _PARSERS.get(name, str)(given)
            except ValueError as error:
                if source is None:
                    raise
                raise ValueError(f"{source}: {error}") from None
        if flags:
            raise TypeError(f"not a setting from flags: {', '.join(sorted(flags))}")
        if "metrics_host" in values and values.get("metrics_port") is None:
            raise ValueError("a metrics host needs a metrics port (--metrics-port)")
        config = cls(**values)  # type: ignore[arg-type]
        for name, number in (("port", config.port), ("metrics port", config.metrics_port)):
            if number is not None and not 0 <= number <= 65535:
                raise ValueError(f"the {name} must be from 0 to 65535, not {number}")
        if config.cluster is not None and not is_database_url(config.db):
            raise ValueError(
                "a cluster's nodes share one store: give a postgresql:// URL with --db "
                "(or FOURSQUARE_DB) along with --cluster"
            )
        if config.cluster is not None and not config.cluster.startswith(
            ("redis://", "rediss://", "unix://")
        ):
            raise ValueError(f"--cluster needs a redis:// URL, not {config.cluster!r}")
        if not config.daily_countdown <= MAX_COUNTDOWN:
            raise ValueError(
                f"a daily room counts down at most {MAX_COUNTDOWN:g} seconds (--daily-countdown)"
            )
        if not config.lease_ttl > 0:
            raise ValueError("a lease must last more than 0 seconds (--lease-ttl)")
        if (config.tls_cert is None) != (config.tls_key is None):
            raise ValueError("TLS needs both a certificate (--tls-cert) and its key (--tls-key)")
        return config

    @property
    def tls(self) -> bool:
        """Whether the server speaks ``wss://``."""
        return self.tls_cert is not None


def _port(value: object) -> int:
    try:
        return int(str(value))
    except ValueError:
        raise ValueError(f"a port must be a number, not {value!r}") from None


def _sync(value: object) -> Sync:
    try:
        return Sync(str(value).lower())
    except ValueError:
        choices = " or ".join(mode.value for mode in Sync)
        raise ValueError(f"the sync mode must be {choices}, not {value!r}") from None


def _count(value: object) -> int:
    try:
        number = int(str(value))
    except ValueError:
        number = -1
    if number < 0:
        raise ValueError(f"a limit must be a whole number, 0 or more, not {value!r}")
    return number


def _seconds(value: object) -> float:
    try:
        seconds = float(str(value))
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # also refuses NaN
        raise ValueError(f"a time must be a number of seconds, 0 or more, not {value!r}")
    return seconds


def _networks(value: object) -> tuple[str, ...]:
    """Proxy addresses from a comma-separated string (the environment) or a list (flags).

    >>> _networks("10.0.0.1, 192.168.0.0/16")
    ('10.0.0.1/32', '192.168.0.0/16')
    """
    items: Iterable[object] = str(value).split(",") if isinstance(value, str) else value  # type: ignore[assignment]
    networks = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            networks.append(str(ipaddress.ip_network(text, strict=False)))
        except ValueError:
            raise ValueError(
                f"a trusted proxy must be an IP address or network (CIDR), not {text!r}"
            ) from None
    return tuple(networks)


_PARSERS: dict[str, Callable[[object], object]] = {
    "port": _port,
    "metrics_port": _port,
    "sync": _sync,
    "max_connections": _count,
    "max_connections_per_address": _count,
    "new_sessions_per_minute": _count,
    "session_idle_expiry": _seconds,
    "session_expiry_interval": _seconds,
    "lease_ttl": _seconds,
    "max_open_tournaments": _count,
    "tournaments_per_session": _count,
    "tournament_idle_expiry": _seconds,
    "daily_countdown": _seconds,
    "trusted_proxies": _networks,
}
