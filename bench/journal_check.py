"""What checking a journal at start costs: :func:`server.journal_file.check_journal`
(``PRAGMA quick_check`` and the rest) on journals of realistic size, the whole opening of a
:class:`~server.journal.Journal` that includes it (marked open, checkpointed, marked closed),
and ``PRAGMA integrity_check`` (which also checks every index against its table).

Each journal is written through :class:`server.journal.Journal`: races of 8 racers, each
racer placing up to 60 cards, every command as the server stores it, until the journal
holds the number of commands asked for. The times are medians of ``--repeats`` runs with
the file in the operating system's cache (as it is when a server restarts); a first read
from a cold disk adds the disk's time to read the file once.

Run: ``python -m bench.journal_check [--commands N ...] [--repeats R] [--write]``
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.report import machine_line, markdown_table, update_section
from server.journal import CommandRecord, Journal, PlayerRecord, RaceOpened, Record
from server.journal_file import check_journal, read_only
from server.race import Join, Place, RaceOptions, Start

RACERS_PER_RACE = 8
MOVES_PER_RACER = 60


def build(path: Path, commands: int) -> None:
    """A journal of ``commands`` commands in races as the server writes them."""
    journal = Journal(path)
    chooser = random.Random(commands)
    options = RaceOptions(min_racers=2, max_racers=RACERS_PER_RACE)
    written, number = 0, 0
    while written < commands:
        race_id, at = f"R{number:07d}", float(number)
        racers = [f"{race_id}-{seat}" for seat in range(RACERS_PER_RACE)]
        records: list[Record] = [RaceOpened(race_id, f"seed-{number}", options, None, at)]
        records += [PlayerRecord(r, r.encode(), "racer", False, at) for r in racers]
        records += [CommandRecord(race_id, Join(r, "racer", False), at) for r in racers]
        records.append(CommandRecord(race_id, Start(), at))
        for move in range(1, MOVES_PER_RACER + 1):
            for racer in racers:
                position = (chooser.randrange(-3, 4), chooser.randrange(-3, 4))
                records.append(CommandRecord(race_id, Place(racer, move, position), at + move))
        commands_here = [record for record in records if isinstance(record, CommandRecord)]
        kept = commands_here[: commands - written]
        journal.write_now(*[r for r in records if not isinstance(r, CommandRecord)], *kept)
        written += len(kept)
        number += 1
    journal.close()


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    """The median time of ``repeats`` runs of ``action`` (after one run to warm the cache)."""
    action()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def integrity_check(path: Path) -> None:
    """``PRAGMA integrity_check`` on the journal at ``path``, read-only."""
    with contextlib.closing(read_only(path, immutable=True)) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def main() -> None:
    """Build journals of the sizes asked for, time their checks, print (and write) a table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--commands", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--write", action="store_true", help="update docs/performance.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        for commands in args.commands:
            path = Path(directory) / f"journal-{commands}.db"
            build(path, commands)
            size = path.stat().st_size
            check = median_seconds(lambda: check_journal(path), args.repeats)  # noqa: B023
            opening = median_seconds(lambda: Journal(path).close(), args.repeats)  # noqa: B023
            full = median_seconds(lambda: integrity_check(path), args.repeats)  # noqa: B023
            rows.append([
                f"{commands:,}", f"{size / 1e6:.1f} MB", f"{check * 1000:.0f} ms",
                f"{opening * 1000:.0f} ms", f"{full * 1000:.0f} ms",
            ])
            print(rows[-1], flush=True)
    command = "python -m bench.journal_check --commands " + " ".join(map(str, args.commands))
    report = "\n".join([
        markdown_table(
            ["commands", "journal file", "check_journal (quick_check and the rest)",
             "Journal opened and closed (check included)", "integrity_check, for comparison"],
            rows,
        ),
        "",
        f"Median of {args.repeats} runs, file in the OS cache. Command: `{command} "
        f"--repeats {args.repeats}` ({machine_line()}).",
    ])
    print(report)
    if args.write:
        update_section("journal-check", report)


if __name__ == "__main__":
    main()
