"""Choosing another name when the server says the one given is taken."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, Middle, Vertical
from textual.message import Message
from textual.widgets import Footer, Input, Static

from client.screens.base import ClientScreen
from client.wording import usable_name
from protocol.names import BadName, lookalike_keys


class NameChosen(Message):
    """The player chose ``chosen`` to connect with instead."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.chosen = name


class NameScreen(ClientScreen):
    """Says why the name was refused and asks for another; Escape quits."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "quit_app", "quit")]

    def __init__(self, sentence: str, name: str) -> None:
        super().__init__()
        self.sentence = sentence
        self.refused = name

    def compose(self) -> ComposeResult:
        """The refusal, a field for the new name, and a line for what is wrong with it."""
        with Middle(), Center(), Vertical(id="name-panel"):
            yield Static(Text(self.sentence), id="name-refused")
            yield Input(placeholder="another name, then Enter", id="name")
            yield Static("", id="message", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Ready to type."""
        self.query_one("#name", Input).focus()

    def say(self, message: str) -> None:
        """One sentence under the field."""
        self.query_one("#message", Static).update(message)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Try the name typed, once it is one the server would take."""
        try:
            name = usable_name(event.value)
        except BadName as refusal:
            self.say(f"Not that one: the name {refusal}.")
            return
        if lookalike_keys(name) & lookalike_keys(self.refused):
            self.say("Not that one: it looks like the name that was taken.")
            return
        self.post_message(NameChosen(name))

    def action_quit_app(self) -> None:
        """Leave the client with a failure status."""
        self.app.exit(1)
