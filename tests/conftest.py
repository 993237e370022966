"""Shared fixtures: the real race server, in this process or in a child process.

``live_server`` yields a :class:`LiveServer` with ``.url`` (``ws://...``), ``.http_url``
and ``.db_path``; the server runs on a free port with a fresh journal and short
countdowns, and is stopped gracefully after the test. Override ``server_config`` in a
test module to change its settings. ``start_live_server`` does the same for a config of
your own; ``server_process`` starts ``foursquare serve`` as a child process (for tests
that kill it).

``postgres_url`` is a database of the test's own on the machine's PostgreSQL
(``DATABASE_URL``, by default ``postgresql://127.0.0.1:5432/test``, from which it is
created, and dropped after the test). A PostgreSQL that cannot be reached fails the test
with the command that starts it: never a skip.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import subprocess
import sys
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from server.app import RaceServer
    from server.config import ServerConfig


@dataclass(frozen=True)
class LiveServer:
    """A running server: where to reach it and where its journal is."""

    url: str
    """The websocket URL, ``ws://127.0.0.1:PORT`` (``wss://`` with a certificate)."""
    http_url: str
    """The same port over HTTP, for ``/healthz`` and ``/metrics``."""
    db_path: Path
    server: RaceServer | None = None
    """The server object when it runs in this process."""
    db: str = ""
    """The store as given (a file, or a ``postgresql://`` URL)."""


def fast_config(db_path: Path) -> ServerConfig:
    """A config for tests: a free port, this journal, countdowns short enough not to wait,
    and no cap on new sessions (every test client comes from 127.0.0.1, and some tests
    start more than a minute's allowance; tests of that cap set it)."""
    from server.config import ServerConfig

    return ServerConfig(
        host="127.0.0.1",
        port=0,
        db=str(db_path),
        quick_countdown=0.2,
        handshake_timeout=5.0,
        new_sessions_per_minute=0,
        # No stock of winnable seeds: a test server starts no search worker unless the
        # test asks for a search (the tests of the stock set one).
        winnable_stock=0,
    )


@contextlib.asynccontextmanager
async def start_live_server(config: ServerConfig) -> AsyncIterator[LiveServer]:
    """Run a server with ``config`` for the duration of the block, then stop it."""
    from server.app import RaceServer

    server = RaceServer(config)
    await server.start()
    try:
        yield LiveServer(
            url=server.url,
            http_url=f"{'https' if config.tls else 'http'}://{config.host}:{server.port}",
            db_path=Path(config.db),
            server=server,
            db=config.db,
        )
    finally:
        await server.stop()


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    """The config ``live_server`` uses; override it in a module to change settings."""
    return fast_config(tmp_path / "foursquare.db")


@pytest.fixture
async def live_server(server_config: ServerConfig) -> AsyncIterator[LiveServer]:
    """The real server in this process, on a free port, with a fresh journal."""
    async with start_live_server(server_config) as live:
        yield live


@dataclass
class ServerProcess:
    """``foursquare serve`` running as a child process."""

    process: subprocess.Popen[str]
    url: str
    http_url: str
    db_path: Path
    banner: str
    """The line the server printed once it listened."""

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def terminate(self) -> int:
        """SIGTERM, then wait for the graceful exit; returns the exit status."""
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=20)


@contextlib.contextmanager
def run_server_process(
    db_path: Path, *extra: str, db: str | None = None
) -> Iterator[ServerProcess]:
    """Start ``foursquare serve`` on a free port and wait until it listens; its store is
    the journal at ``db_path``, or ``db`` (a ``postgresql://`` URL) if given, the log
    then going beside ``db_path`` all the same."""
    command = [
        sys.executable, "-m", "cli.main", "serve", "--port", "0",
        "--db", str(db_path) if db is None else db, "--quick-countdown", "0.2", *extra,
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # The server's log lines go beside its journal, to read when a test fails.
    log = db_path.with_suffix(".log").open("a")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"(wss?)://([\d.]+):(\d+)", line)
        if match is None:
            log.flush()
            problem = db_path.with_suffix(".log").read_text()[-2000:]
            raise RuntimeError(f"the server did not start: {line!r}\n{problem}")
        scheme, host, port = match[1], match[2], match[3]
        http = "https" if scheme == "wss" else "http"
        yield ServerProcess(
            process, f"{scheme}://{host}:{port}", f"{http}://{host}:{port}", db_path, line
        )
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=10)
        if process.stdout is not None:
            process.stdout.close()
        log.close()


@pytest.fixture
def server_process(tmp_path: Path) -> Iterator[ServerProcess]:
    """``foursquare serve`` as a child process on a free port, with a fresh journal."""
    with run_server_process(tmp_path / "foursquare.db") as child:
        yield child



#: The PostgreSQL the tests use when ``DATABASE_URL`` does not name another.
DEFAULT_DATABASE_URL = "postgresql://127.0.0.1:5432/test"

#: How to start the machine's PostgreSQL, said when it cannot be reached.
START_POSTGRES = "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start"


def database_url() -> str:
    """The PostgreSQL the tests create their databases from."""
    return os.environ.get("DATABASE_URL") or DEFAULT_DATABASE_URL


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead of its own."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A database of this test's own (created, then dropped with its connections)."""
    import psycopg

    base = database_url()
    reason = None
    try:
        admin = psycopg.connect(base, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        reason = (str(error).strip().splitlines() or ["no answer"])[0]
    if reason is not None:
        pytest.fail(
            f"PostgreSQL at {base} cannot be reached ({reason}): start it with "
            f"`{START_POSTGRES}`, or name another with DATABASE_URL",
            pytrace=False,
        )
    name = f"foursquare_test_{secrets.token_hex(6)}"
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
        yield with_database(base, name)
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--chaos-kills N``: the chaos test's number of SIGKILLs (``make chaos``)."""
    parser.addoption(
        "--chaos-kills",
        type=int,
        default=None,
        help="SIGKILLs of the server in tests/server/test_chaos.py (default: a few)",
    )


#: The Redis the tests use when ``REDIS_URL`` does not name another.
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"

#: How to start the machine's Redis, said when it cannot be reached.
START_REDIS = "redis-server --daemonize yes"


def redis_server_url() -> str:
    """The Redis the cluster tests meet on."""
    return os.environ.get("REDIS_URL") or DEFAULT_REDIS_URL


@pytest.fixture
def redis_url() -> str:
    """The machine's Redis (``REDIS_URL``), checked: one that cannot be reached fails the
    test with the command that starts it, never a skip. Tests keep apart by a channel
    prefix of their own (``cluster_prefix``), not by stopping or flushing it."""
    import redis

    url = redis_server_url()
    client = redis.Redis.from_url(url, socket_connect_timeout=5)
    try:
        client.ping()
    except (redis.RedisError, OSError) as error:
        pytest.fail(
            f"Redis at {url} cannot be reached ({error}): start it with `{START_REDIS}`, "
            "or name another with REDIS_URL",
            pytrace=False,
        )
    finally:
        client.close()
    return url


@pytest.fixture
def cluster_prefix() -> str:
    """A Redis channel prefix of this test's own."""
    return f"foursquare-test-{secrets.token_hex(6)}"
