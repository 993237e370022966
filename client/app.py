"""The Textual application that hosts every screen of the client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen, Screen

from client.screens.rules import RULES_KEY, RulesScreen


class FoursquareApp(App[int]):
    """The full-screen client; ``first_screen`` builds the screen it opens on.

    The screens are the same whatever the mode (solo, play, watch), so one app with a
    different first screen serves every command and every test. Questions and the rules
    open as overlays (modal screens) above the *main* screen, the one that shows the game.
    """

    CSS_PATH = "foursquare.tcss"
    TITLE = "Foursquare Race"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(RULES_KEY, "show_rules", "rules", key_display="F1"),
    ]

    def __init__(self, first_screen: Callable[[], Screen[None]]) -> None:
        super().__init__()
        self._first_screen = first_screen

    async def on_mount(self) -> None:
        """Open the first screen over the (empty) default one, so it can be switched.

        Textual calls this for subclasses too, after their own ``on_mount``.
        """
        await self.push_screen(self._first_screen())
        await self.first_screen_shown()

    async def first_screen_shown(self) -> None:
        """Called once the first screen is mounted; subclasses start their work here."""

    @property
    def main_screen(self) -> Screen[Any]:
        """The screen under any overlays: the one that shows the game."""
        under: list[Screen[Any]] = [s for s in self.screen_stack if not isinstance(s, ModalScreen)]
        return under[-1] if under else self.screen

    async def close_overlays(self) -> None:
        """Close the questions and panels open over the main screen."""
        while isinstance(self.screen, ModalScreen) and len(self.screen_stack) > 1:
            await self.pop_screen()

    async def show_main(self, screen: Screen[Any]) -> None:
        """Replace the main screen with ``screen``, closing any overlay above it first (a
        question about the race that has just ended no longer makes sense)."""
        await self.close_overlays()
        await self.switch_screen(screen)

    def action_show_rules(self) -> None:
        """Open the rules over the current screen (F1 again closes them)."""
        if not isinstance(self.screen, RulesScreen):
            self.push_screen(RulesScreen())
