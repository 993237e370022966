"""Fixtures of the players' tests: a store on each of SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from server.journal import Journal
from server.postgres import PostgresStore
from server.store import Store, is_database_url


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the store is kept: an SQLite file, or a PostgreSQL database of the test's own."""
    if request.param == "sqlite":
        return str(tmp_path / "journal.db")
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
async def store(db: str) -> AsyncIterator[Store]:
    opened: Store
    if is_database_url(db):
        opened = await PostgresStore.open(db)
    else:
        opened = await asyncio.to_thread(Journal, db)
    try:
        yield opened
    finally:
        await opened.aclose()
