"""Every racer's board, small and side by side: what the watch and replay screens tile."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Grid, Horizontal, Vertical
from textual.events import Resize
from textual.widget import Widget
from textual.widgets import Footer, Static

from client.board import BoardView
from client.widgets.grid import GridView
from client.widgets.leaderboard import Leaderboard
from engine import Position

TILE_WIDTH = 20
"""Columns one compact board takes, with its gutter (a 4x4 grid is 15 wide)."""


class BoardTiles(Grid):
    """One compact board per racer, under its name, in as many columns as fit."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.grids: dict[str, GridView] = {}
        """Each racer's board widget, by racer id."""

    def on_resize(self, event: Resize) -> None:
        """As many columns of boards as fit side by side."""
        self.styles.grid_size_columns = max(1, event.size.width // TILE_WIDTH)

    def show(
        self,
        names: Mapping[str, str],
        boards: Mapping[str, BoardView],
        spot: tuple[str, Position] | None = None,
    ) -> None:
        """Draw ``boards`` (by racer id), adding a tile for each racer of ``names`` not
        tiled yet; ``spot`` (a racer and a position on its board) is pointed out, and
        every other highlight cleared."""
        for racer, name in names.items():
            if racer not in self.grids:
                grid = GridView(interactive=False, compact=True)
                self.grids[racer] = grid
                self.mount(Vertical(Static(Text(name), classes="tile-name"), grid,
                                    classes="tile"))
        for racer, board in boards.items():
            tile = self.grids.get(racer)
            if tile is not None:
                tile.show(board)
                tile.highlight = spot[1] if spot is not None and spot[0] == racer else None


def tiled_screen(title: str | Text, *facts: Widget) -> ComposeResult:
    """The layout of the screens that tile every board (watching, a replay): the title;
    the tiles, and beside them the leaderboard, the ``facts`` and the link's state; the
    footer. Call it from a screen's ``compose`` with ``yield from``."""
    yield Static(title, id="title")
    with Horizontal(id="main"):
        yield BoardTiles(id="tiles")
        with Vertical(id="side"):
            yield Leaderboard("Leaderboard", id="leaderboard")
            yield from facts
            yield Static("", id="link", markup=False)
    yield Footer()
