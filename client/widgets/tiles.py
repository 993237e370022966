"""Every racer's board, small and side by side: what the watch and replay screens tile."""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.containers import Grid, Vertical
from textual.events import Resize
from textual.widgets import Static

from client.board import BoardView
from client.widgets.grid import GridView
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
