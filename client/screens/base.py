"""What every full screen of the client shares: a notice instead of garbage when the
terminal is too small to draw it.

Screens are laid out for 80 columns by 24 lines. Below that a grid of cards, the side
panel and the footer no longer fit, and Textual would crop or squeeze them into
something unreadable, so the screen hides its widgets and says what size it needs; it
comes back as it was once the terminal grows.
"""

from __future__ import annotations

from textual.events import Resize
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Static

MIN_SIZE = Size(80, 24)
"""The smallest terminal the screens are drawn for, in columns and lines."""


def too_small(size: Size) -> bool:
    """Whether a terminal of ``size`` is too small for the screens."""
    return size.width < MIN_SIZE.width or size.height < MIN_SIZE.height


def too_small_sentence(size: Size) -> str:
    """What the notice says.

    >>> too_small_sentence(Size(60, 20))[:61]
    'The terminal is too small: Foursquare Race needs 80x24, and t'
    """
    need, have = MIN_SIZE, size
    return (
        f"The terminal is too small: Foursquare Race needs {need.width}x{need.height}, and "
        f"this one is {have.width}x{have.height}. Make the window larger (or the font smaller)."
    )


class ClientScreen(Screen[None]):
    """A full screen of the client: subclasses compose their widgets as usual."""

    def on_mount(self) -> None:
        """Add the (hidden) notice. Textual calls this after the subclass's own ``on_mount``."""
        self.mount(Static("", id="too-small", markup=False))
        self._fit(self.app.size)

    def on_resize(self, event: Resize) -> None:
        """Show the notice, or the screen, as the terminal's size now allows."""
        self._fit(event.size)

    def _fit(self, size: Size) -> None:
        small = too_small(size)
        self.set_class(small, "-too-small")
        if small:
            for notice in self.query("#too-small"):
                if isinstance(notice, Static):
                    notice.update(too_small_sentence(size))

    @property
    def shows_too_small(self) -> bool:
        """Whether the screen shows the notice rather than its widgets."""
        return self.has_class("-too-small")
