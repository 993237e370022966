"""The Textual application that hosts every screen of the client."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import App
from textual.screen import Screen


class FoursquareApp(App[int]):
    """The full-screen client; ``first_screen`` builds the screen it opens on.

    The screens are the same whatever the mode (solo, play, watch), so one app with a
    different first screen serves every command and every test.
    """

    CSS_PATH = "foursquare.tcss"
    TITLE = "Foursquare Race"

    def __init__(self, first_screen: Callable[[], Screen[None]]) -> None:
        super().__init__()
        self._first_screen = first_screen

    def on_mount(self) -> None:
        """Open the first screen over the (empty) default one, so it can be switched.

        Textual calls this for subclasses too, after their own ``on_mount``.
        """
        self.push_screen(self._first_screen())
