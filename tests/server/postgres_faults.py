"""PostgreSQL made unavailable to a test's own database, without stopping the machine's
shared PostgreSQL: its connections cut (as a restart of the database would cut them), or
new ones refused (as a database that is down refuses them). Both act from a connection
to another database (``DATABASE_URL``'s)."""

from __future__ import annotations

from typing import Any

import psycopg

from tests.conftest import database_url


async def terminate_backends(url: str) -> int:
    """Cut every connection to the database ``url`` names (as a restart of the database
    would), from a connection to another database."""
    async with await _admin() as admin:
        cursor = await admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s",
            (database_name(url),),
        )
        row = await cursor.fetchone()
        return 0 if row is None else int(row[0])


async def allow_connections(url: str, allowed: bool) -> None:
    """Let the database ``url`` names take new connections, or refuse them as a database
    that is down does (the shared PostgreSQL itself is never stopped)."""
    async with await _admin() as admin:
        await admin.execute(
            f'ALTER DATABASE "{database_name(url)}" ALLOW_CONNECTIONS {str(allowed).lower()}'
        )


async def _admin() -> psycopg.AsyncConnection[tuple[Any, ...]]:
    return await psycopg.AsyncConnection.connect(database_url(), autocommit=True)


def database_name(url: str) -> str:
    """The database a URL names."""
    return url.rsplit("/", 1)[1]
