"""The player's key on the client: claimed from the real server, kept in a private file,
used by ``play``, exported and imported for another machine."""

from __future__ import annotations

import asyncio
import json
import stat
from pathlib import Path

import pytest

from cli.client_commands import play_app
from cli.main import build_parser, main
from cli.player_commands import claim_key
from client.connection import Connection
from client.network_app import NetworkApp
from client.player_keys import FILE_NAME, KeyStore, SavedKey
from client.saved_session import config_dir
from protocol import Welcome
from tests.conftest import LiveServer


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``XDG_CONFIG_HOME`` for the test: the key file goes there."""
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def test_the_key_file_is_private_and_keeps_one_key_per_server(config_home: Path) -> None:
    keys = KeyStore.default()
    keys.save(SavedKey("ws://a", "u-1", "Ann", "k" * 43))
    keys.save(SavedKey("ws://b", "u-2", "Ann", "j" * 43))
    path = config_dir() / FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert keys.load("ws://a") == SavedKey("ws://a", "u-1", "Ann", "k" * 43)
    assert keys.load("ws://c") is None
    path.write_text("{not json")
    assert keys.load("ws://a") is None  # a damaged file holds no key, and no crash


def test_export_then_import_carries_the_key_to_another_machine(
    config_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    saved = SavedKey("ws://a", "u-1", "Ann", "k" * 43)
    KeyStore.default().save(saved)
    exported = tmp_path / "ann.key"
    assert main(["key", "export", "--server", "ws://a", str(exported)]) == 0
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    said = capsys.readouterr().out
    assert "k" * 43 not in said and "a lost key loses the name" in said
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other-machine"))
    assert KeyStore.default().load("ws://a") is None
    assert main(["key", "import", str(exported)]) == 0
    assert KeyStore.default().load("ws://a") == saved


def test_importing_something_else_says_what_it_is_not(
    config_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"server": "ws://a", "name": "Ann"}))
    assert main(["key", "import", str(wrong)]) == 1
    assert "not an exported player key" in capsys.readouterr().err
    assert KeyStore.default().load("ws://a") is None


async def test_a_claimed_key_plays_as_the_player_on_the_next_run(
    live_server: LiveServer, config_home: Path
) -> None:
    saved = await claim_key(live_server.url, "Ann")
    assert saved.name == "Ann" and saved.player.startswith("u-")
    KeyStore.default().save(saved)
    app = play_app(build_parser().parse_args(["play", "--server", live_server.url]))
    assert isinstance(app, NetworkApp)
    connection = app.connection
    assert connection.player_key == saved.key and connection.name == "Ann"
    # The app's connection reports to its screens: say the same hello on one of our own.
    welcome = await first_message(
        Connection(live_server.url, connection.name, player_key=connection.player_key)
    )
    assert welcome.player == saved.player and welcome.name == "Ann"
    guest = play_app(build_parser().parse_args(
        ["play", "--server", live_server.url, "--guest", "--name", "Bob"]
    ))
    assert isinstance(guest, NetworkApp) and guest.connection.player_key is None


async def first_message(connection: Connection) -> Welcome:
    messages = connection.messages()
    try:
        welcome = await asyncio.wait_for(anext(messages), 10)
    finally:
        await connection.close()
    assert isinstance(welcome, Welcome)
    return welcome
