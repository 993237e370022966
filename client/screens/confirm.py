"""A yes-or-no question before a step that cannot be taken back (quit a race, resign, a
new deal that throws away the game in progress)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static


class ConfirmScreen(ModalScreen[bool]):
    """Asks ``question``; dismisses with ``True`` for yes (``y`` or Enter), ``False`` for
    no (``n`` or Escape)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y,enter", "answer(True)", "yes"),
        Binding("n,escape", "answer(False)", "no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        """The question and the keys that answer it."""
        with Vertical(id="confirm"):
            yield Static(Text(self.question), id="question")
            yield Static(Text("y or Enter: yes     n or Escape: no"), id="answers")

    def action_answer(self, yes: bool) -> None:
        """Close the question with the answer."""
        self.dismiss(yes)
