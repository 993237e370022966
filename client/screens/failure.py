"""The last screen when the session cannot go on: one sentence, and a key to leave."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, Middle
from textual.widgets import Footer, Static

from client.screens.base import ClientScreen


class FailureScreen(ClientScreen):
    """Says why the client had to stop."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q,escape,enter", "quit_app", "quit"),
    ]

    def __init__(self, sentence: str) -> None:
        super().__init__()
        self.sentence = sentence

    def compose(self) -> ComposeResult:
        """The sentence in the middle of the screen."""
        with Middle(), Center():
            yield Static(Text(self.sentence), id="failure")
        yield Footer()

    def action_quit_app(self) -> None:
        """Leave the client with a failure status."""
        self.app.exit(1)
