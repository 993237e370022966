"""The rules of Foursquare on one panel, reachable from every screen with F1.

The text follows docs/rules.md; its numbers come from the ruleset, so a race with other
rules would read true too. The flip rule is shown as the worked example of the rules page:
a row before and after a card is placed at its end, drawn with the cards of the race
screen.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from client.board import PileView
from client.widgets.cards import CARD_HEIGHT, CARD_WIDTH, CardPalette, draw_pile
from engine import Card, Ruleset

RULES_KEY = "f1"
"""The key that opens (and closes) the rules, on every screen."""

_BEFORE = (("4S", True), ("9H", True), ("7C", False), None)
_AFTER = (("4S", False), ("9H", False), ("7C", True), ("TD", True))


def _cell(spot: tuple[str, bool] | None) -> list[Text]:
    """A card as the race screen draws it (its back when face down), or an empty spot."""
    if spot is None:
        return [Text(" " * CARD_WIDTH)] * CARD_HEIGHT
    card, face_up = spot
    return draw_pile(PileView(Card.parse(card), face_up, 1), CardPalette.plain())


def _row_picture(row: tuple[tuple[str, bool] | None, ...], label: str) -> Text:
    """One row of cards, ``label`` before its middle line."""
    cells = [_cell(spot) for spot in row]
    lines = [
        Text(label if index == CARD_HEIGHT // 2 else " " * len(label))
        + Text(" ").join(cell[index] for cell in cells)
        for index in range(CARD_HEIGHT)
    ]
    return Text("\n").join(lines)


def rules_text(rules: Ruleset) -> Text:
    """The rules as one text, with the worked flip drawn in the middle."""
    size, capacity, limit = rules.grid_size, rules.pile_capacity, rules.face_down_limit
    piles = size * size
    neighbour = "sharing an edge" if rules.adjacency.value == "edge" else "edge or corner"
    text = Text()
    text.append("How to play\n", style="bold")
    text.append(
        "Forty cards, Ace (1, low) to Ten (high); suits play no part. Turn over the top "
        "card of the stock and place it; then the next, and so on.\n"
        "• The first card goes anywhere.\n"
        f"• Each later card goes on a pile of fewer than {capacity} cards, or on an empty "
        f"spot next to a pile ({neighbour}). All the piles must fit in a {size} x {size} "
        "box, which floats.\n"
        "• Only the top card of each pile counts.\n\n"
    )
    text.append("Flipping\n", style="bold")
    text.append(
        "Right after you place a card, look along its row. If it is higher than every "
        "other face-up top in the row, or lower than all of them, or there are none, every "
        "other top card in the row flips over (face up goes face down, face down comes face "
        "up). A tie is neither higher nor lower. Your card itself stays face up. Then the "
        "same along its column. Face-down cards are never compared: their ranks are "
        "hidden.\n\n"
        "Place 10♦ at the end of this row (the card showing its back is a face-down 7♣):\n"
    )
    text.append_text(_row_picture(_BEFORE, "before  "))
    text.append("\n")
    text.append_text(_row_picture(_AFTER, "after   "))
    text.append(
        "\n10 is higher than the face-up 4 and 9, so the row flips: 4♠ and 9♥ go face down, "
        "7♣ comes face up. An 8, between 4 and 9, would have flipped nothing.\n\n"
    )
    text.append("Winning and losing\n", style="bold")
    text.append(
        f"• More than {limit} face-down top cards: you lose.\n"
        f"• {piles} piles, all face up: you win. Your score is the number of cards left in "
        "the stock.\n"
        "• The stock runs out first: you lose.\n\n"
        "In a race everyone is dealt the same stock. The winners rank by score, then by "
        "time; then the others by face-up piles. The full rules and rulings: docs/rules.md."
    )
    return text


class RulesScreen(ModalScreen[None]):
    """The rules over whatever screen was showing; Escape or F1 closes them."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(f"escape,q,{RULES_KEY}", "close", "close the rules"),
    ]

    def __init__(self, rules: Ruleset = Ruleset()) -> None:
        super().__init__()
        self.rules = rules

    def compose(self) -> ComposeResult:
        """The rules, scrollable, and the keys."""
        with VerticalScroll(id="rules"):
            yield Static(rules_text(self.rules), id="rules-text")
        yield Footer()

    def on_mount(self) -> None:
        """Focus the text, so that the arrows and Page keys scroll it."""
        self.query_one("#rules", VerticalScroll).focus()

    def action_close(self) -> None:
        """Back to the screen underneath."""
        self.dismiss(None)
