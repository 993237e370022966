"""The player's keys: a claimed name's key for each server, kept between runs.

``foursquare key claim`` (or the lobby's *Claim my name*) asks the server to claim the
player's name; the server answers once with a **player key**, which this module keeps in
``$XDG_CONFIG_HOME/foursquare/keys.json`` (by default ``~/.config/foursquare``), one
entry per server. Every later ``play`` on that server says ``hello`` with the key and
plays as that player, under that name, with its rating.

The key *is* the player: whoever holds it plays under the name, and the server keeps
only its digest, so it can never give it again. The file is therefore readable by its
owner only (mode 0600, in a directory of mode 0700) and replaced whole, never left half
written. ``foursquare key export`` writes an entry to carry to another machine, where
``foursquare key import`` keeps it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from client.saved_session import config_dir, write_private

FILE_NAME = "keys.json"
_FORMAT = 1

#: What to tell a player wherever its key is issued or moved.
KEEP_IT_SAFE = (
    "Keep this key secret and safe: whoever holds it plays as you (a stolen key takes the "
    "name), and the server cannot give it again (a lost key loses the name)."
)


@dataclass(frozen=True, slots=True)
class SavedKey:
    """The key of a claimed player on one server."""

    server: str
    player: str
    name: str
    key: str

    def to_document(self) -> dict[str, object]:
        """The entry as ``foursquare key export`` writes it (JSON)."""
        return {"format": _FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, text: str) -> SavedKey:
        """An exported entry; ``ValueError`` with a sentence when it is not one."""
        try:
            document = json.loads(text)
        except ValueError:
            raise ValueError("this is not an exported player key (not JSON)") from None
        found = _entry(document)
        if found is None:
            raise ValueError(
                "this is not an exported player key: it needs server, player, name and key"
            )
        return found


def _entry(document: object) -> SavedKey | None:
    if not isinstance(document, dict):
        return None
    values = [document.get(field.name) for field in fields(SavedKey)]
    texts = [value for value in values if isinstance(value, str) and value]
    return SavedKey(*texts) if len(texts) == len(values) else None


class KeyStore:
    """The saved keys, by server address, in one private JSON file."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE_NAME

    @classmethod
    def default(cls) -> KeyStore:
        """The store in the user's config directory."""
        return cls(config_dir())

    def load(self, server: str) -> SavedKey | None:
        """The key saved for ``server``, if any (an unreadable file holds none)."""
        return _entry(self._read().get(server))

    def save(self, saved: SavedKey) -> None:
        """Keep ``saved`` as the key for its server (replacing any other)."""
        keys = self._read()
        keys[saved.server] = asdict(saved)
        write_private(self.path, {"format": _FORMAT, "keys": keys})

    def _read(self) -> dict[str, object]:
        try:
            document = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        keys = document.get("keys") if isinstance(document, dict) else None
        return dict(keys) if isinstance(keys, dict) else {}
