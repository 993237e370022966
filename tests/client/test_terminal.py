"""``foursquare solo`` in a real terminal: tmux runs it, sends keys and reads the screen."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

TMUX = shutil.which("tmux")
FOURSQUARE = Path(sys.executable).parent / "foursquare"
WAIT_SECONDS = 30.0

if TMUX is None:
    pytest.skip(
        "tmux is not installed, so there is no real terminal to run in", allow_module_level=True
    )


class Terminal:
    """A detached tmux session on its own server socket, 80x24."""

    def __init__(self, socket: Path) -> None:
        self.socket = str(socket)

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run(
            [TMUX, "-S", self.socket, *args], capture_output=True, text=True, check=False
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "race")

    def wait_for(self, ready: Callable[[str], bool]) -> str:
        """Poll the screen until ``ready`` holds; a deadline only guards against hanging."""
        deadline = time.monotonic() + WAIT_SECONDS
        while True:
            text = self.screen()
            if ready(text):
                return text
            if time.monotonic() > deadline:
                pytest.fail(f"the screen never got there; it shows:\n{text}")
            time.sleep(0.1)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    term = Terminal(tmp_path / "tmux.sock")
    yield term
    term.tmux("kill-server")


def test_solo_runs_full_screen_and_answers_keys(terminal: Terminal) -> None:
    terminal.tmux(
        "new-session", "-d", "-s", "race", "-x", "80", "-y", "24",
        f"{FOURSQUARE} solo --seed foursquare; sleep 30",
    )
    first = terminal.wait_for(lambda text: "Card to place" in text)
    assert "seed foursquare" in first
    assert "4♠" in first  # the first card of this deal
    terminal.tmux("send-keys", "-t", "race", "Enter")
    placed = terminal.wait_for(lambda text: "Played     1" in text)
    assert "3♠" in placed  # the next card is in hand
    terminal.tmux("send-keys", "-t", "race", "Right", "Enter")
    flipped = terminal.wait_for(lambda text: "Played     2" in text)
    assert "1 of 4" in flipped and "░░░░░" in flipped  # the 4S turned face down
    terminal.tmux("send-keys", "-t", "race", "q")
    terminal.wait_for(lambda text: "Card to place" not in text)
