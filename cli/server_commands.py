"""``foursquare serve`` (the race server), ``foursquare result`` (a stored result) and
``foursquare verify`` (check a saved result)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from protocol.result import RaceResult

Subparsers = Any  # argparse's _SubParsersAction is private

#: Event loops ``serve --loop`` can run on: asyncio's own (the default) or uvloop's, an
#: optional dependency (``pip install 'foursquare-race[fast]'``).
LOOPS = ("asyncio", "uvloop")


def event_loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory for ``asyncio.Runner(loop_factory=...)`` that makes a ``name`` loop.

    ``None`` for asyncio's default loop. Raises ``ValueError`` with a sentence to show
    when ``name`` is not one of :data:`LOOPS` or its package is not installed.
    """
    if name == "asyncio":
        return None
    if name != "uvloop":
        raise ValueError(f"unknown event loop {name!r}: choose one of {', '.join(LOOPS)}")
    try:
        import uvloop
    except ImportError:
        raise ValueError(
            "the uvloop event loop is not installed; install it with "
            "pip install 'foursquare-race[fast]', or use --loop asyncio"
        ) from None
    # Typed through a variable: without uvloop installed, mypy sees its import as Any.
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def register(subparsers: Subparsers) -> None:
    """Add ``serve`` and ``verify`` to the ``foursquare`` command."""
    serve_parser = subparsers.add_parser(
        "serve",
        help="run the race server",
        description="Run the race server. Each flag can also be set by an environment "
        "variable: FOURSQUARE_HOST, FOURSQUARE_PORT, FOURSQUARE_DB, FOURSQUARE_SYNC, "
        "FOURSQUARE_LOOP, FOURSQUARE_MAX_CONNECTIONS, FOURSQUARE_MAX_CONNECTIONS_PER_ADDRESS, "
        "FOURSQUARE_NEW_SESSIONS_PER_MINUTE, FOURSQUARE_SESSION_EXPIRY, "
        "FOURSQUARE_SESSION_EXPIRY_INTERVAL, "
        "FOURSQUARE_TRUSTED_PROXIES (comma-separated), FOURSQUARE_TLS_CERT, FOURSQUARE_TLS_KEY, "
        "FOURSQUARE_METRICS_HOST, FOURSQUARE_METRICS_PORT, FOURSQUARE_CLUSTER, "
        "FOURSQUARE_CLUSTER_PREFIX, FOURSQUARE_NODE_ID, FOURSQUARE_LEASE_TTL (flags win).",
    )
    serve_parser.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve_parser.add_argument("--port", type=int, help="port to listen on (default 8765)")
    serve_parser.add_argument(
        "--db", help="the store: an SQLite journal file (default foursquare.db) or a "
        "postgresql:// URL"
    )
    serve_parser.add_argument(
        "--metrics-port",
        type=int,
        help="serve GET /metrics (Prometheus) on this port only, and answer 404 for it on "
        "the game port (default: /metrics on the game port)",
    )
    serve_parser.add_argument(
        "--metrics-host",
        help="address of the metrics port (default 127.0.0.1; needs --metrics-port)",
    )
    serve_parser.add_argument(
        "--sync",
        choices=["normal", "full"],
        help="what an acknowledged move survives: 'normal' (default) a killed or crashed "
        "server process; 'full' also an operating-system crash or power loss, at the cost "
        "of a disk flush per journal commit",
    )
    serve_parser.add_argument(
        "--loop",
        choices=LOOPS,
        help="event loop: 'asyncio' (default) or 'uvloop', which is faster but optional "
        "(pip install 'foursquare-race[fast]')",
    )
    serve_parser.add_argument(
        "--no-journal",
        action="store_true",
        help="BENCHMARK ONLY: store nothing (no journal, no recovery: every race is lost "
        "when the server stops); measures what the journal costs",
    )
    serve_parser.add_argument(
        "--new-journal",
        action="store_true",
        help="if the journal is damaged (empty, not a journal, of an unknown version, failing "
        "its integrity check, or missing its -wal), move it and its -wal and -shm aside "
        "(renamed with .damaged-TIME) and start a new one; a sound journal opens as usual",
    )
    serve_parser.add_argument(
        "--quick-countdown",
        type=float,
        help="seconds of countdown in quick races once they have their minimum (default 5)",
    )
    limits = serve_parser.add_argument_group("limits (0: no cap)")
    limits.add_argument(
        "--max-connections", type=int, metavar="N",
        help="open websocket connections in all; past it an upgrade gets HTTP 503 "
        "(default 10000)",
    )
    limits.add_argument(
        "--max-connections-per-address", type=int, metavar="N",
        help="open websocket connections from one client address (an IPv6 /64); past it "
        "an upgrade gets HTTP 429 (default 100)",
    )
    limits.add_argument(
        "--new-sessions-per-minute", type=int, metavar="N",
        help="new sessions one client address may start per minute (default 30)",
    )
    limits.add_argument(
        "--session-expiry", type=float, metavar="SECONDS",
        help="forget a session after this long with no connection, unless it is in a race "
        "or a tournament not over (default 86400: a day)",
    )
    limits.add_argument(
        "--session-expiry-interval", type=float, metavar="SECONDS",
        help="look for expired sessions this often (default 60)",
    )
    limits.add_argument(
        "--max-tournaments", type=int, metavar="N",
        help="tournaments not finished, in all; past it create_tournament gets server_busy "
        "(default 1000)",
    )
    limits.add_argument(
        "--tournaments-per-session", type=int, metavar="N",
        help="tournaments one session may hold, not finished or finished in the last "
        "5 minutes; past it its create_tournament gets server_busy (default 3)",
    )
    limits.add_argument(
        "--tournament-expiry", type=float, metavar="SECONDS",
        help="end a tournament after this long with no race in progress and nothing "
        "happening in it (default 86400: a day)",
    )
    serve_parser.add_argument(
        "--daily-countdown", type=float, metavar="SECONDS",
        help="a daily room's countdown from its first racer; whoever asks for the daily "
        "meanwhile races in it (default 15)",
    )
    serve_parser.add_argument(
        "--tls-cert", metavar="FILE",
        help="PEM certificate chain: serve wss:// (and https:// for /healthz and /metrics); "
        "needs --tls-key",
    )
    serve_parser.add_argument("--tls-key", metavar="FILE", help="the certificate's PEM key")
    serve_parser.add_argument(
        "--web-root",
        metavar="DIR",
        help="serve the web client from this folder (default: web/public of the source tree)",
    )
    serve_parser.add_argument(
        "--trusted-proxy", action="append", metavar="ADDR",
        help="a reverse proxy (address or CIDR network) whose X-Forwarded-For header names "
        "the client; repeat for several (default: none, the header is ignored)",
    )
    cluster = serve_parser.add_argument_group(
        "cluster (several nodes sharing one PostgreSQL --db and one Redis)"
    )
    cluster.add_argument(
        "--cluster", metavar="REDIS_URL",
        help="run as a node of a cluster whose nodes meet on this Redis "
        "(redis://HOST:6379/0); --db must then be a postgresql:// URL",
    )
    cluster.add_argument(
        "--cluster-prefix", metavar="NAME",
        help="what the cluster's Redis channels start with, so that clusters can share a "
        "Redis (default foursquare)",
    )
    cluster.add_argument(
        "--node-id", metavar="ID",
        help="this node's name in the cluster (default: host-pid-random, new at each start)",
    )
    cluster.add_argument(
        "--lease-ttl", type=float, metavar="SECONDS",
        help="seconds a node's leases last unrenewed: how long its races stand still if it "
        "dies, before another node takes them over (default 2)",
    )
    serve_parser.set_defaults(run=run_serve)

    result_parser = subparsers.add_parser(
        "result",
        help="print a finished race's stored result as JSON (for verify)",
        description="Print the result record the server journaled for a race.",
    )
    result_parser.add_argument("race", help="the race id")
    result_parser.add_argument(
        "--db", help="the server's store: its SQLite journal file (default foursquare.db) or "
        "its postgresql:// URL"
    )
    result_parser.set_defaults(run=run_result)

    verify_parser = subparsers.add_parser(
        "verify",
        help="re-deal, replay and check a saved race result",
        description="Check a race result saved as JSON (the 'finished' record): the seed "
        "against its commitment, every move, every outcome and the standings.",
    )
    verify_parser.add_argument(
        "file", type=Path, help="the result, as JSON ('-' reads it from standard input)"
    )
    verify_parser.set_defaults(run=run_verify)


def run_serve(args: argparse.Namespace) -> int:
    """Run the server until SIGTERM or SIGINT."""
    import asyncio
    import dataclasses
    from datetime import datetime

    from server.app import run_server
    from server.config import ServerConfig
    from server.journal_file import JournalRefused, set_aside
    from server.logs import configure_logging

    try:
        config = ServerConfig.from_environment(
            host=args.host,
            port=args.port,
            db=args.db,
            sync=args.sync,
            max_connections=args.max_connections,
            max_connections_per_address=args.max_connections_per_address,
            new_sessions_per_minute=args.new_sessions_per_minute,
            session_idle_expiry=args.session_expiry,
            session_expiry_interval=args.session_expiry_interval,
            max_open_tournaments=args.max_tournaments,
            tournaments_per_session=args.tournaments_per_session,
            tournament_idle_expiry=args.tournament_expiry,
            daily_countdown=args.daily_countdown,
            trusted_proxies=args.trusted_proxy,
            tls_cert=args.tls_cert,
            tls_key=args.tls_key,
            metrics_host=args.metrics_host,
            metrics_port=args.metrics_port,
            web_root=args.web_root,
            cluster=args.cluster,
            cluster_prefix=args.cluster_prefix,
            node_id=args.node_id,
            lease_ttl=args.lease_ttl,
        )
        if args.no_journal:
            config = dataclasses.replace(config, journal=False)
        if args.quick_countdown is not None:
            config = dataclasses.replace(config, quick_countdown=args.quick_countdown)
        loop_factory = event_loop_factory(
            args.loop or os.environ.get("FOURSQUARE_LOOP", "").strip().lower() or "asyncio"
        )
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    configure_logging()
    if not config.journal:
        print("warning: --no-journal: nothing is stored; every race is lost when the server "
              "stops (for benchmarks only)", file=sys.stderr)

    def started(server: Any) -> None:
        # One plain line on stdout, for people and for scripts waiting for the port. The
        # loop is named from the running loop itself, so the line says what really runs.
        loop = type(asyncio.get_running_loop()).__module__.split(".")[0]
        print(f"foursquare server listening on {server.url} (event loop: {loop}), "
              f"metrics on {server.metrics_url}, web client on {server.web_url}", flush=True)

    try:
        with asyncio.Runner(loop_factory=loop_factory) as runner:
            try:
                failure = runner.run(run_server(config, started))
            except JournalRefused as refusal:
                if not (args.new_journal and refusal.damaged):
                    raise
                moved = set_aside(Path(refusal.path), datetime.now())
                print(f"warning: the journal {refusal.path} {refusal.problem}; moved it aside "
                      f"to {', '.join(map(str, moved))} and starting a new journal",
                      file=sys.stderr)
                failure = runner.run(run_server(config, started))
    except JournalRefused as refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    except OSError as error:
        where = f"{config.host}:{config.port}"
        if config.metrics_port is not None:
            where += f" and {config.metrics_host}:{config.metrics_port}"
        print(f"error: cannot serve on {where}: {error}", file=sys.stderr)
        return 1
    except ValueError as error:  # a certificate or key that cannot be used
        print(f"error: {error}", file=sys.stderr)
        return 2
    if failure is not None:
        print(f"error: {failure}", file=sys.stderr)
        return 1
    return 0


def run_result(args: argparse.Namespace) -> int:
    """Print the stored result of a race; exit 1 if there is none, 2 if the journal may
    not be opened."""
    from server.config import ServerConfig
    from server.journal_file import JournalRefused
    from server.store import load_result, shown

    db = ServerConfig.from_environment(db=args.db).db
    try:
        result = load_result(db, args.race.upper())
    except JournalRefused as refusal:
        print(f"error: {refusal}", file=sys.stderr)
        return 2
    if result is None:
        print(f"error: race {args.race} has no result in {shown(db)}", file=sys.stderr)
        return 1
    print(result.to_json())
    return 0


def run_verify(args: argparse.Namespace) -> int:
    """Print whether the result holds up; exit 0 if it does, 1 if not, 2 if unreadable."""
    result = read_result_file(args.file)
    if result is None:
        return 2
    from client.wording import plural
    from protocol.result import verify_result

    verification = verify_result(result)
    print(f"race {result.race_id}: seed {result.seed!r}, commitment {result.commitment[:16]}...")
    for place, entry in enumerate(result.racers, start=1):
        bot = " [bot]" if entry.bot else ""
        score = f" score {entry.score}" if entry.score is not None else ""
        print(f"  {place}. {entry.name}{bot}: {entry.outcome.value}{score}, "
              f"{plural(entry.cards_played, 'card')}, {entry.face_up} face up")
    if verification.ok:
        print("verified: the seed matches its commitment and every claim replays")
        return 0
    for problem in verification.problems:
        print(f"REFUTED: {problem}")
    return 1


def read_result_file(path: Path) -> RaceResult | None:
    """The result in file ``path`` (``-``: standard input), as :func:`read_result` reads
    it; or ``None`` after saying why there is none."""
    try:
        text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8")
        return read_result(text)
    except (OSError, ValueError) as error:
        print(f"error: cannot read a result from {path}: {error}", file=sys.stderr)
        return None


def read_result(text: str) -> RaceResult:
    """A result from JSON: the record the server stores, or a ``finished`` message as a map
    (what a client saves); raises ``ValueError`` if it is neither."""
    import msgpack

    from protocol import ProtocolError, RaceFinished, decode_server
    from protocol.result import RaceResult

    data = parse_json(text)
    if isinstance(data, dict) and data.get("type") == RaceFinished.TYPE:
        try:
            message = decode_server(msgpack.packb(data, use_bin_type=True))
        except ProtocolError as error:
            raise ValueError(str(error)) from None
        if not isinstance(message, RaceFinished):
            raise ValueError("not a finished message")
        return message.to_result()
    return RaceResult.from_dict(data)


def parse_json(text: str) -> Any:
    """The value ``text`` holds as JSON; raises ``ValueError`` with a sentence if it holds
    none (or nests deeper than Python's JSON reader can follow)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON: {error}") from None
    except RecursionError:
        raise ValueError("its JSON nests too deeply to be read") from None
