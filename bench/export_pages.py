"""What a tournament's export costs the server, in one message and in pages.

Builds a finished tournament of ``--entrants`` bots in races of ``--race-size`` over
``--rounds`` rounds (one race really played on the tournament's one seed, its games
given to every race, as the tests do), writes it to a fresh SQLite journal, then times,
``--repeat`` times each, and prints the median and the worst:

- the whole export as one message, encoded (what the server sent before pages; a frame
  no client accepts past 4 MiB);
- one page (the first), encoded, and every page of it, encoded;
- reading the finished tournament back from the store (what each page cost when a
  tournament no longer in memory was read again for every request).

    python -m bench.export_pages [--entrants 400 --race-size 16 --rounds 48]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from protocol.tournament import encode_tournament
from server.journal import Journal
from server.store import load_tournaments
from server.tournament import Command, Tournament, TournamentSettings, hash_token
from server.tournament_host import export_page, tournament_export
from server.tournament_store import TournamentOpened, TournamentStore
from tests.tournament.racing import HOST, race_all


def _built(path: Path, entrants: int, race_size: int, rounds: int) -> Tournament:
    """The tournament, finished, with every event written to the journal at ``path``."""
    settings = TournamentSettings("bench cup", rounds=rounds, race_size=race_size)
    tournament = Tournament("B1", "BENCH1", hash_token(HOST), settings, 0.0, lambda: "bench")
    store = TournamentStore(Journal(path))
    records: list[object] = [TournamentOpened.of(tournament)]

    def run(command: Command, now: float) -> Sequence[object]:
        events = tournament.apply(command, now)
        records.extend(TournamentStore.events_of("B1", events, now))
        return events

    race_all(run, settings, entrants)
    store.write_now(*records)  # type: ignore[arg-type]
    store.journal.close()
    return tournament


def _timed(label: str, repeat: int, job: Callable[[], object]) -> None:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        job()
        times.append(time.perf_counter() - start)
    print(f"{label:<44} {statistics.median(times) * 1000:9.1f} ms (worst {max(times) * 1000:.1f})")


def _all_pages(tournament: Tournament) -> int:
    """Encode every page in turn; how many there were."""
    after: int | None = None
    pages = 0
    while True:
        page = export_page(tournament, 0.0, after)
        encode_tournament(page)
        pages += 1
        if page.next is None:
            return pages
        after = page.next


def main() -> None:
    """Build, time, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entrants", type=int, default=400)
    parser.add_argument("--race-size", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=48)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "foursquare.db"
        tournament = _built(path, args.entrants, args.race_size, args.rounds)
        whole = encode_tournament(tournament_export(tournament, 0.0))
        first = encode_tournament(export_page(tournament, 0.0))
        print(
            f"{len(tournament.finished)} games; the whole export {len(whole):,} bytes, "
            f"the first page {len(first):,} bytes, {_all_pages(tournament)} pages; "
            f"load average {os.getloadavg()[0]:.1f}"
        )
        _timed("whole export, one message (baseline)", args.repeat,
               lambda: encode_tournament(tournament_export(tournament, 0.0)))
        _timed("first page", args.repeat, lambda: encode_tournament(export_page(tournament, 0.0)))
        _timed("every page", args.repeat, lambda: _all_pages(tournament))
        _timed("read back from the store", max(1, args.repeat // 3),
               lambda: load_tournaments(path, code="BENCH1"))
        print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
