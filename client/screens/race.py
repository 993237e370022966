"""The race screen: the grid, the status panel, a message line, and room for a side panel.

:class:`RaceScreen` draws; what a placement means belongs to subclasses: the solo screen
plays it on a local game, the network race sends it to the server.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Center, Horizontal, Middle, Vertical
from textual.widget import Widget
from textual.widgets import Footer, Static

from client.board import BoardView
from client.screens.base import ClientScreen
from client.widgets.grid import GridView
from client.widgets.race_status import RaceStatus
from engine import Position

Clock = Callable[[], float]
"""Seconds from any fixed origin; injected so that tests control time."""

CLOCK_TICK = 0.1


class RaceScreen(ClientScreen):
    """A racer's view of a race: subclasses implement :meth:`place`."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "leave", "quit")]

    def __init__(self, title: str, clock: Clock = time.monotonic) -> None:
        super().__init__()
        self.heading = title
        self.clock = clock
        self._clock_origin: float | None = None
        self._clock_stopped_at: float | None = None

    def compose(self) -> ComposeResult:
        """Title, grid beside the status panel (and any side widgets), message, keys."""
        yield Static(self.heading, id="title", markup=False)
        with Horizontal(id="main"):
            with Middle(id="board"), Center():
                yield GridView(id="grid")
            with Vertical(id="side"):
                yield RaceStatus(id="status")
                yield from self.compose_side()
        yield Static("", id="message", markup=False)
        yield Footer()

    def compose_side(self) -> Iterable[Widget]:
        """Extra widgets under the status panel (the opponents, in a network race)."""
        return ()

    def on_mount(self) -> None:
        """Tick the race clock. (Textual also calls the subclasses' own ``on_mount``.)"""
        self.set_interval(CLOCK_TICK, self.tick_clock)

    @property
    def grid(self) -> GridView:
        """The racer's grid widget."""
        return self.query_one("#grid", GridView)

    @property
    def status_panel(self) -> RaceStatus:
        """The panel with the card in hand, stock, meter and clock."""
        return self.query_one("#status", RaceStatus)

    def show_board(self, board: BoardView, flipped: Iterable[Position] = ()) -> None:
        """Draw ``board``, flashing the positions in ``flipped``."""
        self.grid.show(board, flipped)
        self.status_panel.show(board)

    def say(self, message: str) -> None:
        """Put one sentence on the message line."""
        self.query_one("#message", Static).update(message)

    @property
    def message(self) -> str:
        """The sentence on the message line now."""
        return str(self.query_one("#message", Static).render())

    # ------------------------------------------------------------------ clock

    def start_clock(self, already_elapsed: float = 0.0) -> None:
        """Start (or restart) the race clock, ``already_elapsed`` seconds in."""
        self._clock_origin = self.clock() - already_elapsed
        self._clock_stopped_at = None
        self.tick_clock()

    def stop_clock(self) -> None:
        """Freeze the clock where it stands (the race is over for this racer)."""
        if self._clock_stopped_at is None:
            self._clock_stopped_at = self.clock()
            self.tick_clock()

    def tick_clock(self) -> None:
        """Show the time elapsed on the race clock."""
        if self._clock_origin is None:
            return
        now = self._clock_stopped_at if self._clock_stopped_at is not None else self.clock()
        self.status_panel.elapsed = now - self._clock_origin

    # ------------------------------------------------------------------ moves

    def on_grid_view_chosen(self, event: GridView.Chosen) -> None:
        """The racer chose a position for the card in hand."""
        event.stop()
        self.place(event.position)

    def place(self, position: Position) -> None:
        """Play the card in hand at ``position``: locally in solo, through the server in a
        race. Every subclass says which (Textual's metaclass rules out ``abc`` here)."""
        raise NotImplementedError(f"{type(self).__name__} does not say how to play a card")

    def action_leave(self) -> None:
        """Leave the client."""
        self.app.exit(0)
