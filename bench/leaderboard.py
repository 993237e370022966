"""How long a leaderboard read takes with 100,000 rated players, in each store.

Fills a fresh SQLite journal (and, with ``--postgres URL``, a PostgreSQL database) with
``--players`` rows of ``ratings`` in one pool (a tenth of them bots), then times the
leaderboard job (:func:`server.player_store.leaderboard`, as a ``get_leaderboard``
request runs it: the count and one page) for the top page, a page deep in the board (read
after the key of the line before it, as a cursor asks, and by offset, for comparison) and
the board without bots, ``--repeat`` times each, and prints the median and the worst.

    python -m bench.leaderboard --players 100000 [--postgres postgresql://.../db]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
import statistics
import tempfile
import time
from pathlib import Path

from engine import Ruleset
from server.journal import Journal
from server.player_store import BoardKey, leaderboard
from server.postgres import PostgresStore
from server.ratings import pool_of
from server.store import Store

POOL = pool_of(Ruleset())
_BATCH = 1_000


def _fill(count: int):  # type: ignore[no-untyped-def]
    """A job that writes ``count`` rated players."""
    randomness = random.Random(1)
    for start in range(0, count, _BATCH):
        rows: list[object] = []
        size = min(_BATCH, count - start)
        for number in range(start, start + size):
            mu, sigma = randomness.gauss(25, 5), randomness.uniform(1, 8.3)
            rows += (f"u-{number:08}", POOL, f"player{number}", int(number % 10 == 0), mu,
                     sigma, mu - 3 * sigma, randomness.randint(1, 300),
                     randomness.randint(0, 100), 0, 0, randomness.choice([None, 3, 9]), 0.0)
        marks = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * size)
        yield ("INSERT INTO ratings (player_id, pool, name, bot, mu, sigma, ordinal, games,"
               " wins, won_games, stock_left, best_score, updated_at) VALUES " + marks,
               tuple(rows))
    return None


async def _time(store: Store, label: str, repeat: int, players: int) -> None:
    middle = players // 2
    # The key of the line at rank 50,000: where a client paging with cursors asks for the
    # page at rank 50,001 (found once, not timed: the client has it from the page before).
    _, (line,) = await store.run(
        functools.partial(leaderboard, POOL, "rating", True, None, middle - 1, 1), writes=False
    )
    cases = {
        "top page (rating)": ("rating", True, None, 0),
        f"page at rank {middle + 1:,}, after a key": ("rating", True,
                                                    BoardKey.of("rating", line), 0),
        f"page at rank {middle + 1:,}, by offset": ("rating", True, None, middle),
        "top page, no bots": ("rating", False, None, 0),
        "top page (wins)": ("wins", True, None, 0),
    }
    for case, (board, bots, after, offset) in cases.items():
        times = []
        for _ in range(repeat):
            job = functools.partial(leaderboard, POOL, board, bots, after, offset, 20)
            began = time.perf_counter()
            await store.run(job, writes=False)
            times.append((time.perf_counter() - began) * 1000)
        print(f"{label:<11} {case:<36} median {statistics.median(times):6.2f} ms"
              f"  worst {max(times):6.2f} ms")


async def _vacuum(url: str) -> None:
    """What PostgreSQL's autovacuum does to a table soon after a bulk load (its counts
    then read the index alone): measured as a server that has been running sees it."""
    import psycopg

    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as connection:
        await connection.execute("VACUUM ANALYZE ratings")


async def main(players: int, repeat: int, postgres: str | None) -> None:
    with tempfile.TemporaryDirectory() as directory:
        stores: list[tuple[str, Store]] = [
            ("SQLite", await asyncio.to_thread(Journal, Path(directory) / "bench.db"))
        ]
        if postgres:
            stores.append(("PostgreSQL", await PostgresStore.open(postgres, timeout=300)))
        for label, store in stores:
            await store.run(functools.partial(_fill, players), writes=True)
            if postgres and isinstance(store, PostgresStore):
                await _vacuum(postgres)
            await _time(store, label, repeat, players)
            await store.aclose()


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--postgres", metavar="URL", help="also a PostgreSQL database (emptied "
                        "of nothing: give a fresh one)")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _arguments()
    asyncio.run(main(arguments.players, arguments.repeat, arguments.postgres))
