"""Cards drawn as text: a card is a small box, three lines high, with rank and suit.

Colours come from the widget's component classes, so that they live in the stylesheet:
the caller passes a :class:`CardPalette` of Rich styles.

>>> from engine import Card
>>> [line.plain for line in draw_card(Card.parse("TH"), 1, CardPalette.plain())]
['╭─────╮', '│ 10♥ │', '╰─────╯']
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from client.board import PileView
from engine import Card

CARD_WIDTH = 7
"""Columns a card takes on screen, borders included."""
CARD_HEIGHT = 3
"""Lines a card takes on screen, borders included."""

SUIT_SYMBOLS = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}
RED_SUITS = frozenset("DH")
_INNER = CARD_WIDTH - 2
_TIMES = "\N{MULTIPLICATION SIGN}"


@dataclass(frozen=True, slots=True)
class CardPalette:
    """The styles a card is drawn with."""

    black: Style
    red: Style
    back: Style
    edge: Style

    @classmethod
    def plain(cls) -> CardPalette:
        """No colour at all (for doctests and plain text)."""
        return cls(Style(), Style(), Style(), Style())


def card_label(card: Card) -> str:
    """Rank and suit symbol as a person reads them: ``10♥``, ``A♠``."""
    rank = {1: "A", 10: "10"}.get(card.rank, str(card.rank))
    return rank + SUIT_SYMBOLS[card.suit]


def _frame(middle: Text, height: int, edge: Style) -> list[Text]:
    """Wrap the middle line in a box whose bottom edge tells the pile height."""
    count = f"{_TIMES}{height}" if height > 1 else ""
    bottom = "╰" + "─" * (_INNER - len(count)) + count + "╯"
    return [
        Text("╭" + "─" * _INNER + "╮", style=edge),
        Text.assemble(("│", edge), middle, ("│", edge)),
        Text(bottom, style=edge),
    ]


def draw_card(card: Card, height: int, palette: CardPalette) -> list[Text]:
    """A face-up card on a pile of ``height``."""
    style = palette.red if card.suit in RED_SUITS else palette.black
    return _frame(Text(card_label(card).center(_INNER), style=style), height, palette.edge)


def draw_back(height: int, palette: CardPalette) -> list[Text]:
    """A face-down card: its back, whatever its face (hidden from everyone alike)."""
    return _frame(Text("░" * _INNER, style=palette.back), height, palette.edge)


def draw_pile(pile: PileView, palette: CardPalette) -> list[Text]:
    """A pile's top card as the viewer may see it."""
    if pile.face_up and pile.top is not None:
        return draw_card(pile.top, pile.height, palette)
    return draw_back(pile.height, palette)


FOG = "▒▒▒"
"""A spot the fog hides, on a compact board: a card may lie there, or none."""


def draw_compact(pile: PileView | None, palette: CardPalette, fogged: bool = False) -> Text:
    """A pile in one line, three columns: ``10♥``, `` 7♠``, ``░░░`` face down, `` · `` empty,
    or ``▒▒▒`` for a spot that may hold a card the fog hides (when ``fogged``)."""
    if pile is None:
        return Text(FOG if fogged else " · ", style=palette.edge)
    if pile.face_up and pile.top is not None:
        style = palette.red if pile.top.suit in RED_SUITS else palette.black
        return Text(card_label(pile.top).rjust(3), style=style)
    return Text("░░░", style=palette.back)


def draw_space(mark: str, edge: Style) -> list[Text]:
    """An empty position; ``mark`` in the middle (a dot for a target, blank otherwise)."""
    if not mark:
        return [Text(" " * CARD_WIDTH) for _ in range(CARD_HEIGHT)]
    return [
        Text("╭ ─ ─ ╮", style=edge),
        Text(mark.center(CARD_WIDTH), style=edge),
        Text("╰ ─ ─ ╯", style=edge),
    ]
