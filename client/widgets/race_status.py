"""The panel beside the grid: the card to place, the stock, the face-down meter, the clock."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget

from client.board import BoardView
from client.widgets.cards import CardPalette, draw_card
from engine import Ruleset, Status


def format_clock(seconds: float) -> str:
    """A race clock: ``1:05.3`` (minutes, seconds, tenths).

    >>> format_clock(65.34)
    '1:05.3'
    """
    tenths = int(max(seconds, 0.0) * 10)
    minutes, tenths = divmod(tenths, 600)
    return f"{minutes}:{tenths // 10:02d}.{tenths % 10}"


def face_down_meter(face_down: int, limit: int) -> str:
    """One box per allowed face-down card, filled as they are used; one more loses.

    >>> face_down_meter(2, 4)
    '■■□□  2 of 4'
    """
    filled = min(face_down, limit)
    return "■" * filled + "□" * (limit - filled) + f"  {face_down} of {limit}"


class RaceStatus(Widget):
    """What a racer needs besides the grid, refreshed as the board and the clock change."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "status--label",
        "status--black",
        "status--red",
        "status--edge",
        "status--danger",
    }

    elapsed: reactive[float] = reactive(0.0)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.board = BoardView(Ruleset())
        self.time_limit: float | None = None
        """Seconds the race allows, shown beside the clock when there is a limit."""

    def show(self, board: BoardView) -> None:
        """Show ``board``'s numbers and card in hand."""
        self.board = board
        self.refresh(layout=True)

    def _limit(self) -> str:
        if self.time_limit is None:
            return ""
        minutes, seconds = divmod(round(self.time_limit), 60)
        return f" of {minutes}:{seconds:02d}"

    def render(self) -> Text:
        """The card in hand as a card, then one labelled line per number."""
        style = self.get_component_rich_style
        board, label = self.board, style("status--label")
        lines: list[Text] = []
        if board.card is not None:
            palette = CardPalette(
                style("status--black"), style("status--red"), style("status--edge"),
                style("status--edge"),
            )
            lines.append(Text("Card to place", style=label))
            lines.extend(draw_card(board.card, 1, palette))
        elif board.status is Status.WON:
            lines.append(Text(f"Won! Score {board.score}", style=label))
        elif board.status is Status.LOST:
            lines.append(Text("Lost", style=style("status--danger")))
        limit = board.rules.face_down_limit
        meter = Text(face_down_meter(board.face_down, limit))
        if board.face_down >= limit:
            meter.stylize(style("status--danger"))
        lines += [
            Text(),
            Text.assemble(("Stock      ", label), f"{board.stock_left} left"),
            Text.assemble(("Face down  ", label), meter),
            Text.assemble(("Played     ", label), str(board.cards_played)),
            Text.assemble(("Clock      ", label), format_clock(self.elapsed), self._limit()),
        ]
        return Text("\n").join(lines)
