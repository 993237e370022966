"""The floating grid: piles drawn as cards, legal targets marked, a cursor to place with.

Keys move the cursor (arrows or hjkl, Tab to the next legal target) and Enter or space
places the card; a click places it where the mouse is. Either way the widget only posts
:class:`GridView.Chosen`: the screen decides what a choice means.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.events import Click
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget

from client.board import BoardView
from client.widgets.cards import (
    CARD_HEIGHT,
    CARD_WIDTH,
    FOG,
    CardPalette,
    draw_compact,
    draw_pile,
    draw_space,
)
from engine import Position, Ruleset

FLASH_SECONDS = 0.8
"""How long the cards that turned stay highlighted after a flip."""
_GAP = 1
_COMPACT_WIDTH = 3


class GridView(Widget, can_focus=True):
    """One racer's grid. ``interactive`` grids have a cursor and post choices."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "grid--black",
        "grid--red",
        "grid--back",
        "grid--edge",
        "grid--target",
        "grid--cursor",
        "grid--flash",
        "grid--highlight",
    }

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1, 0)", "up", show=False),
        Binding("down,j", "move(1, 0)", "down", show=False),
        Binding("left,h", "move(0, -1)", "left", show=False),
        Binding("right,l", "move(0, 1)", "right", show=False),
        Binding("tab", "next_target", "next target", show=False),
        Binding("enter,space", "choose", "place"),
    ]

    cursor: reactive[Position] = reactive((0, 0))
    flashed: reactive[frozenset[Position]] = reactive(frozenset())
    highlight: reactive[Position | None] = reactive(None)
    """A spot to point out (a hint, a card taken back): the board has no coordinates to
    name it by, so it is drawn in its own colour until the next placement."""

    class Chosen(Message):
        """The player picked ``position`` for the card in hand."""

        def __init__(self, grid: GridView, position: Position) -> None:
            super().__init__()
            self.grid = grid
            self.position = position

        @property
        def control(self) -> GridView:
            """The grid the choice was made on."""
            return self.grid

    def __init__(
        self,
        board: BoardView | None = None,
        *,
        interactive: bool = True,
        compact: bool = False,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.board = board or BoardView(Ruleset())
        self.interactive = interactive
        self.can_focus = interactive
        self.compact = compact
        """One line per row, three columns per pile: for many boards at once."""
        self.cell_width = _COMPACT_WIDTH if compact else CARD_WIDTH
        self.cell_height = 1 if compact else CARD_HEIGHT

    # ------------------------------------------------------------------ state

    def show(self, board: BoardView, flipped: Iterable[Position] = ()) -> None:
        """Draw ``board``; the positions in ``flipped`` flash for a moment."""
        self.board = board
        rows, cols = board.window()
        row, col = self.cursor
        off_window = row not in rows or col not in cols
        if off_window or (board.targets and self.cursor not in board.targets):
            self.cursor = self._nearest_target(self.cursor)
        turned = frozenset(flipped)
        if turned:
            self.flashed = turned
            self.set_timer(FLASH_SECONDS, self._end_flash)
        self.refresh(layout=True)

    def _end_flash(self) -> None:
        self.flashed = frozenset()

    def _nearest_target(self, near: Position) -> Position:
        if not self.board.targets:
            return near if near in self.board.piles else next(iter(self.board.piles), (0, 0))
        return min(
            self.board.targets,
            key=lambda target: (abs(target[0] - near[0]) + abs(target[1] - near[1]), target),
        )

    # ---------------------------------------------------------------- actions

    def action_move(self, d_row: int, d_col: int) -> None:
        """Move the cursor one place, staying inside the drawn window."""
        rows, cols = self.board.window()
        row = min(max(self.cursor[0] + d_row, rows.start), rows.stop - 1)
        col = min(max(self.cursor[1] + d_col, cols.start), cols.stop - 1)
        self.cursor = (row, col)

    def action_next_target(self) -> None:
        """Jump to the next legal target in reading order, wrapping around."""
        targets = sorted(self.board.targets)
        if targets:
            later = [t for t in targets if t > self.cursor]
            self.cursor = later[0] if later else targets[0]

    def action_choose(self) -> None:
        """Place the card at the cursor."""
        if self.interactive:
            self.post_message(self.Chosen(self, self.cursor))

    def on_click(self, event: Click) -> None:
        """Place the card where the mouse was clicked."""
        offset = event.get_content_offset(self)
        if offset is None or not self.interactive:
            return
        position = self.position_at(offset.x, offset.y)
        if position is not None:
            self.cursor = position
            self.post_message(self.Chosen(self, position))

    def position_at(self, x: int, y: int) -> Position | None:
        """The grid position drawn at content coordinates ``(x, y)``, if any."""
        rows, cols = self.board.window()
        column_index, within = divmod(x, self.cell_width + _GAP)
        row_index = y // self.cell_height
        inside = 0 <= column_index < len(cols) and 0 <= row_index < len(rows)
        if within >= self.cell_width or not inside:
            return None
        return rows[row_index], cols[column_index]

    def offset_of(self, position: Position) -> tuple[int, int]:
        """Content coordinates of the middle of ``position``; the inverse of :meth:`position_at`."""
        rows, cols = self.board.window()
        return (
            cols.index(position[1]) * (self.cell_width + _GAP) + self.cell_width // 2,
            rows.index(position[0]) * self.cell_height + self.cell_height // 2,
        )

    # -------------------------------------------------------------- rendering

    def _palette(self, edge: Style) -> CardPalette:
        style = self.get_component_rich_style
        return CardPalette(
            black=style("grid--black"), red=style("grid--red"), back=style("grid--back"), edge=edge
        )

    def _draw_cell(self, position: Position) -> list[Text]:
        style = self.get_component_rich_style
        is_target = position in self.board.targets
        if self.interactive and position == self.cursor and self.board.card is not None:
            edge = style("grid--cursor")
        elif is_target:
            edge = style("grid--target")
        else:
            edge = style("grid--edge")
        pile = self.board.piles.get(position)
        if self.compact:
            lines = [draw_compact(pile, self._palette(edge), fogged=self.board.fogged > 0)]
        elif pile is None:
            cursor_here = self.interactive and position == self.cursor and self.board.card
            lines = draw_space("·" if is_target else (" " if cursor_here else ""), edge)
        else:
            lines = draw_pile(pile, self._palette(edge))
        marks = [
            style(component)
            for component, marked in (
                ("grid--flash", position in self.flashed),
                ("grid--highlight", position == self.highlight),
            )
            if marked
        ]
        for mark in marks:
            for line in lines:
                line.stylize(mark)
        return lines

    def render(self) -> Text:
        """The window of the grid, row by row, each row three lines of cards."""
        rows, cols = self.board.window()
        lines: list[Text] = []
        for row in rows:
            cells = [self._draw_cell((row, col)) for col in cols]
            for line_index in range(self.cell_height):
                lines.append(Text(" " * _GAP).join(cell[line_index] for cell in cells))
        if self.compact and self.board.fogged:
            # Short enough for a tile: "▒▒▒ +12 in the fog".
            lines.append(Text(f"{FOG} +{self.board.fogged} in the fog",
                              style=self.get_component_rich_style("grid--edge")))
        drawing = Text("\n").join(lines)
        drawing.no_wrap = True  # a grid cut short beats a grid scrambled by wrapping
        return drawing

    def watch_cursor(self) -> None:
        """Redraw when the cursor moves."""
        self.refresh()

    def watch_flashed(self) -> None:
        """Redraw when a flash starts or ends."""
        self.refresh()

    def watch_highlight(self) -> None:
        """Redraw when a spot is pointed out or no longer."""
        self.refresh()
