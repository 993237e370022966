"""The racer's session, saved between runs so that a racer who quits can come back.

While a racer is in a race, ``foursquare play`` keeps the session (server, session id,
resume token, name, race) in ``$XDG_CONFIG_HOME/foursquare/session.json`` (by default
``~/.config/foursquare/session.json``), one entry per server. The next ``play`` on that
server says ``hello`` with the token and so carries on in the race. The entry is dropped
when the race is over for the racer, when the racer leaves it, and when the server no
longer knows the token.

The token is a secret (whoever holds it *is* the racer), so the file is readable by its
owner only (mode 0600, in a directory of mode 0700), and it is replaced whole, never
left half written.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, fields
from pathlib import Path

FILE_NAME = "session.json"
_FORMAT = 1


@dataclass(frozen=True, slots=True)
class SavedSession:
    """A racer's session on one server, in a race that has not finished."""

    server: str
    session: str
    resume: str
    name: str
    race: str


def config_dir(environ: dict[str, str] | None = None) -> Path:
    """Where the client keeps its files: ``$XDG_CONFIG_HOME/foursquare``, or
    ``~/.config/foursquare`` when that variable is unset or empty."""
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "foursquare"


class SessionStore:
    """The saved sessions, by server address, in one JSON file."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / FILE_NAME

    @classmethod
    def default(cls) -> SessionStore:
        """The store in the user's config directory."""
        return cls(config_dir())

    def load(self, server: str) -> SavedSession | None:
        """The session saved for ``server``; ``None`` if there is none (or the file cannot
        be read: a damaged file only costs a resume)."""
        entry = self._read().get(server)
        if not isinstance(entry, dict):
            return None
        values = [entry.get(field.name) for field in fields(SavedSession)]
        texts = [value for value in values if isinstance(value, str) and value]
        return SavedSession(*texts) if len(texts) == len(values) else None

    def save(self, saved: SavedSession) -> None:
        """Keep ``saved`` as the session for its server."""
        sessions = self._read()
        sessions[saved.server] = asdict(saved)
        self._write(sessions)

    def forget(self, server: str) -> None:
        """Drop the session saved for ``server``, if any."""
        sessions = self._read()
        if sessions.pop(server, None) is not None:
            self._write(sessions)

    def _read(self) -> dict[str, object]:
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        sessions = document.get("sessions") if isinstance(document, dict) else None
        return dict(sessions) if isinstance(sessions, dict) else {}

    def _write(self, sessions: dict[str, object]) -> None:
        write_private(self.path, {"format": _FORMAT, "sessions": sessions})


def write_private(path: Path, document: object) -> None:
    """Replace the JSON file at ``path`` at once with ``document``, readable by its owner
    only from the first byte (mode 0600, in a directory of mode 0700): what it holds is
    a secret (a resume token, a player key)."""
    directory = path.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    # mkdir's mode is cut by the umask, and not applied to a directory that exists.
    os.chmod(directory, 0o700)
    text = json.dumps(document, indent=2)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{path.stem}-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:  # mkstemp makes it 0600
            file.write(text + "\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
