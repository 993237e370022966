"""Whether a journal file may be opened, and the one sentence to say when it may not.

The journal (:mod:`server.journal`) is a SQLite database in WAL mode: the file itself, its
write-ahead log beside it (``<file>-wal``) holding the commits not yet copied into the file,
and the log's index (``<file>-shm``). :func:`check_journal` decides, in one place, whether
such a set of files may be opened; ``foursquare serve`` and every command that reads a
journal (``foursquare result``, ``tournament export --db``) go through it, so each refuses
damage the same way, with :class:`JournalRefused`.

- A journal whose file does not exist is new: :class:`server.journal.Journal` creates it,
  whole, under another name, and renames it into place. A file that exists must be a
  whole journal: one of 0 bytes, one that is not SQLite, one without the journal's tables,
  is an emptied or a foreign file, never a new journal. So is a missing file with a
  write-ahead log beside it.
- Its schema version must be one this code knows: newer, missing or garbled is refused
  (never "migrated").
- ``PRAGMA quick_check`` must pass (it reads every page once: docs/performance.md has its
  cost).
- The open mark (``journal_state``): a server marks the journal open in the file itself
  before it acknowledges anything, and closed once it has stopped cleanly. A journal marked
  open (its server was killed, or is running) whose write-ahead log is missing or empty
  has lost the commits the log held: a copy of the file alone, taken while a server ran or
  after it was killed. docs/architecture.md (the journal section) explains why this is
  sound.

The checks never write to the files (read-only, and ``immutable`` when there is no log, so
that not even an empty ``-wal`` is created beside a refused file).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

#: The journal's schema version: what :class:`server.journal.Journal` writes and the
#: newest this code opens (older ones are brought up to it).
SCHEMA_VERSION = 11

#: Tables every journal has had since schema version 1.
JOURNAL_TABLES = ("schema_version", "players", "races", "race_commands", "results")

#: The open mark (since schema version 6): one row, ``open`` 1 from the moment a server
#: opens the journal until it has closed it cleanly.
MARK_TABLE = "journal_state"
MARK_SCHEMA = f"""CREATE TABLE IF NOT EXISTS {MARK_TABLE} (
    open INTEGER NOT NULL,
    changed_at REAL NOT NULL
)"""

#: The first 16 bytes of every SQLite database file.
_SQLITE_HEADER = b"SQLite format 3\x00"

#: What to do about a damaged journal (the end of a refusal's sentence).
RESTORE_OR_START_ANEW = (
    "restore it from a backup, or start a new journal with `foursquare serve --new-journal`"
    " (which moves the damaged files aside)"
)

#: What to do about a journal that cannot be opened or written where it is.
_CHECK_THE_PLACE = (
    "check that its directory exists, that the server may write there and that the disk has"
    " room, then start again"
)

#: SQLite errors (by name prefix) that say the journal cannot be used now, not that it is
#: damaged: those refusals are not ``damaged``.
_LOCKED = ("SQLITE_BUSY", "SQLITE_LOCKED")
_CANNOT_OPEN = ("SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_READONLY", "SQLITE_IOERR",
                "SQLITE_FULL", "SQLITE_AUTH")


class JournalRefused(Exception):
    """The journal at ``path`` (a file, or a PostgreSQL URL without its password) may not
    be opened: ``problem`` says why, ``remedy`` what to do. ``str()`` is the one sentence
    to show."""

    def __init__(
        self, path: Path | str, problem: str, remedy: str = RESTORE_OR_START_ANEW, *,
        damaged: bool = True,
    ) -> None:
        super().__init__(path, problem, remedy)
        self.path = path
        self.problem = problem
        """What is wrong, as the end of a sentence that begins with the file's name."""
        self.remedy = remedy
        self.damaged = damaged
        """Whether the files themselves are at fault, so that moving them aside and
        starting anew (``--new-journal``) is a way out; ``False`` when the journal merely
        cannot be used now (locked, no permission, missing for a reader)."""

    def __str__(self) -> str:
        return f"the journal {self.path} {self.problem}: {self.remedy}"


def wal_of(path: Path) -> Path:
    """The write-ahead log beside the journal at ``path``."""
    return path.with_name(path.name + "-wal")


def journal_files(path: Path) -> tuple[Path, Path, Path]:
    """The files of the journal at ``path``: the database, its log and the log's index."""
    return path, wal_of(path), path.with_name(path.name + "-shm")


def has_log(path: Path) -> bool:
    """Whether the journal at ``path`` has a write-ahead log with something in it.

    An empty log holds no commits: SQLite leaves one behind after reading a database whose
    log was missing, so an empty log cannot be taken as the lost one being there.
    """
    try:
        return wal_of(path).stat().st_size > 0
    except (FileNotFoundError, NotADirectoryError):  # (a file where a directory should be)
        return False


def check_journal(path: Path) -> int:
    """Raise :class:`JournalRefused` unless the journal at ``path`` may be opened; return
    its schema version (at most :data:`SCHEMA_VERSION`)."""
    connection, version = _open_checked(path)
    connection.close()
    return version


@contextlib.contextmanager
def read_journal(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to the journal at ``path``, once :func:`check_journal`'s
    checks have passed; SQLite errors while reading it become :class:`JournalRefused`.

    Read-only, so that closing it never copies the log into the file and deletes the log
    (which a read-write connection does when it is the last): after a server was killed,
    reading its journal must leave the log where the next start looks for it.
    """
    connection, _ = _open_checked(path)
    try:
        with refusing(path):
            yield connection
    finally:
        connection.close()


@contextlib.contextmanager
def refusing(path: Path) -> Iterator[None]:
    """Turn SQLite errors inside the block into :class:`JournalRefused` for ``path``
    (for starting up and reading; a server that is running fails otherwise)."""
    try:
        yield
    except sqlite3.Error as error:
        raise refusal_for(path, error) from None
    except OSError as error:  # the files themselves, before or beside SQLite (a rename)
        raise JournalRefused(
            path,
            f"cannot be opened or written ({error.strerror or error})",
            _CHECK_THE_PLACE,
            damaged=False,
        ) from None


def refusal_for(path: Path, error: sqlite3.Error) -> JournalRefused:
    """The refusal an SQLite error at start means: damage, unless SQLite says the file is
    locked or cannot be opened or written."""
    name = getattr(error, "sqlite_errorname", "") or ""
    detail = str(error) or type(error).__name__
    if name.startswith(_LOCKED):
        return JournalRefused(
            path, f"is locked by another program ({detail})",
            "stop the other server using it, then start again", damaged=False,
        )
    if name.startswith(_CANNOT_OPEN):
        return JournalRefused(
            path, f"cannot be opened or written ({detail})", _CHECK_THE_PLACE, damaged=False
        )
    return JournalRefused(path, f"cannot be read ({detail})")


def set_aside(path: Path, now: datetime) -> list[Path]:
    """Move the journal at ``path`` and its ``-wal`` and ``-shm`` aside, to names with
    ``.damaged-<time>`` after the file's name (their own suffixes kept, so the three
    still open together); return where each went. Nothing is deleted."""
    stamp = now.strftime("%Y%m%d-%H%M%S")
    base = path.with_name(f"{path.name}.damaged-{stamp}")
    attempt = 1
    while any(target.exists() for target in journal_files(base)):
        attempt += 1
        base = path.with_name(f"{path.name}.damaged-{stamp}-{attempt}")
    moved = []
    for source, target in zip(journal_files(path), journal_files(base), strict=True):
        if source.exists():
            source.rename(target)
            moved.append(target)
    return moved


def mark_open(connection: sqlite3.Connection, path: Path) -> None:
    """Mark the journal open, in the file itself (checkpointed), before anything it will
    acknowledge is committed. Raises :class:`JournalRefused` if the log cannot be copied
    into the file (another program holds it)."""
    _set_mark(connection, True)
    busy, logged, copied = connection.execute("PRAGMA wal_checkpoint(FULL)").fetchone()
    if busy or logged != copied:
        raise JournalRefused(
            path,
            "is in use by another program, so it cannot be marked open",
            "stop the other program using it, then start again",
            damaged=False,
        )


def mark_closed(connection: sqlite3.Connection) -> None:
    """Mark the journal closed: the last commit of a clean close, after every other
    connection has closed (closing this one then copies the log into the file)."""
    _set_mark(connection, False)


def _set_mark(connection: sqlite3.Connection, is_open: bool) -> None:
    connection.execute("BEGIN IMMEDIATE")
    connection.execute(f"DELETE FROM {MARK_TABLE}")
    connection.execute(f"INSERT INTO {MARK_TABLE} VALUES (?, ?)", (int(is_open), time.time()))
    connection.execute("COMMIT")


def read_only(path: Path, *, immutable: bool = False) -> sqlite3.Connection:
    """A read-only connection to the database at ``path``; ``immutable`` when it has no
    log, so that SQLite creates none beside it."""
    uri = path.resolve().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")
    return sqlite3.connect(uri, uri=True, isolation_level=None)


# ------------------------------------------------------------------ checking


def _open_checked(path: Path) -> tuple[sqlite3.Connection, int]:
    """A read-only connection to the journal at ``path`` once every check has passed, and
    its schema version."""
    # Whether the log holds anything must be seen before SQLite opens the file: a
    # connection may create an empty log, or copy a present one into the file.
    logged = has_log(path)
    _check_file(path, logged)
    connection = None
    try:
        with refusing(path):
            connection = read_only(path, immutable=not logged)
            version = _check_contents(path, connection, logged)
    except BaseException:
        if connection is not None:
            connection.close()
        raise
    return connection, version


def _check_file(path: Path, logged: bool) -> None:
    """The checks made before SQLite reads the file: it exists, and it is SQLite."""
    if not path.exists():
        if logged:
            raise JournalRefused(
                path, f"is missing, but its write-ahead log {wal_of(path).name} is there"
            )
        raise JournalRefused(
            path, "does not exist", "give the server's journal with --db or FOURSQUARE_DB",
            damaged=False,
        )
    if not path.is_file():
        # A directory, a device (/dev/null reads as empty: moving it aside as damage would
        # move the device) or a pipe (reading it would wait for a writer for good).
        raise JournalRefused(
            path, "is not a file (a directory, a device or a pipe)",
            "give the journal's file with --db or FOURSQUARE_DB", damaged=False,
        )
    try:
        with path.open("rb") as file:
            header = file.read(len(_SQLITE_HEADER))
    except OSError as error:
        raise JournalRefused(
            path, f"cannot be read ({error.strerror or error})",
            "check that it is a file the server may read and write, then start again",
            damaged=False,
        ) from None
    if not header:
        # A new journal is built under another name and renamed into place whole
        # (Journal), so an empty file here was emptied, never a journal being created.
        raise JournalRefused(path, "is empty (0 bytes)")
    if header != _SQLITE_HEADER:
        raise JournalRefused(path, "is not an SQLite database")


def _check_contents(path: Path, connection: sqlite3.Connection, logged: bool) -> int:
    """The checks made through SQLite (which reads the log, if any, with the file); the
    schema version."""
    tables = {
        row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    missing = [table for table in JOURNAL_TABLES if table not in tables]
    if len(missing) == len(JOURNAL_TABLES):
        raise JournalRefused(
            path, "holds no journal tables (it was emptied, or is another SQLite database)"
        )
    if missing:
        raise JournalRefused(path, f"is missing the journal tables {', '.join(missing)}")
    version = _schema_version(path, connection)
    if version >= 5:
        _check_mark(path, connection, tables, logged)
    (first,) = connection.execute("PRAGMA quick_check(1)").fetchone()
    if first != "ok":
        detail = " ".join(str(first).split())[:160]
        raise JournalRefused(path, f"fails SQLite's integrity check ({detail})")
    return version


def _schema_version(path: Path, connection: sqlite3.Connection) -> int:
    rows = connection.execute("SELECT version FROM schema_version LIMIT 2").fetchall()
    if not rows:
        raise JournalRefused(path, "has no schema version")
    version = rows[0][0]
    if len(rows) > 1 or type(version) is not int or version < 1:
        shown = ", ".join(repr(row[0])[:20] for row in rows)
        raise JournalRefused(path, f"has a garbled schema version ({shown})")
    if version > SCHEMA_VERSION:
        raise JournalRefused(
            path,
            f"has schema version {version}, newer than this foursquare knows ({SCHEMA_VERSION})",
            "run the version of foursquare that wrote it, restore an older backup, or start a "
            "new journal with `foursquare serve --new-journal` (which moves it aside)",
        )
    return version


def _check_mark(
    path: Path, connection: sqlite3.Connection, tables: set[str], logged: bool
) -> None:
    if MARK_TABLE not in tables:
        raise JournalRefused(path, f"is missing the journal table {MARK_TABLE}")
    rows = connection.execute(f"SELECT open FROM {MARK_TABLE} LIMIT 2").fetchall()
    if rows not in ([(0,)], [(1,)]):
        raise JournalRefused(path, "has a garbled open mark")
    if rows[0][0] and not logged:
        raise JournalRefused(
            path,
            f"was not closed cleanly and its write-ahead log {wal_of(path).name} is missing or "
            "empty, so moves it acknowledged may be lost",
            "restore it together with its -wal file from a backup, or start a new journal with "
            "`foursquare serve --new-journal` (which moves the damaged files aside)",
        )


def fsync_directory(path: Path) -> None:
    """Flush the directory holding ``path`` to the disk (a rename in it is then durable)."""
    descriptor = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
