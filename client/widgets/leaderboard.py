"""The racers of a race, best first, each with a progress bar and where they finished."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.widget import Widget

from protocol import ProgressEntry, RacerStatus

BAR_WIDTH = 8
_NAME_WIDTH = 13

_STATUS_WORDS = {
    RacerStatus.WAITING: "waiting",
    RacerStatus.RACING: "",
    RacerStatus.WON: "won",
    RacerStatus.LOST: "lost",
    RacerStatus.RESIGNED: "resigned",
    RacerStatus.TIMED_OUT: "out of time",
}


def progress_bar(face_up: int, piles: int, width: int = BAR_WIDTH) -> str:
    """Face-up piles out of the grid's, as a bar.

    >>> progress_bar(8, 16, 8)
    '████░░░░'
    """
    filled = round(width * min(face_up, piles) / piles) if piles else 0
    return "█" * filled + "░" * (width - filled)


def ordinal(place: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ... ``11th``, ``21st``.

    >>> [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 21, 22)]
    ['1st', '2nd', '3rd', '4th', '11th', '12th', '21st', '22nd']
    """
    suffix = "th" if 10 <= place % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(place % 10, "th")
    return f"{place}{suffix}"


class Leaderboard(Widget):
    """One line per racer: place, name, bar of face-up piles, cards played, status."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "leaderboard--you",
        "leaderboard--bar",
        "leaderboard--done",
        "leaderboard--heading",
    }

    def __init__(self, heading: str = "Racers", *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.heading = heading
        self.entries: list[ProgressEntry] = []
        self.you: str | None = None
        self.piles = 16

    def show(
        self, entries: list[ProgressEntry], you: str | None, piles: int
    ) -> None:
        """Show ``entries`` (already in standings order)."""
        self.entries, self.you, self.piles = entries, you, piles
        self.refresh(layout=True)

    def line_for(self, entry: ProgressEntry) -> str:
        """The plain text of ``entry``'s line (what tests and screen readers see)."""
        return self._line(entry, 0).plain

    def _line(self, entry: ProgressEntry, index: int) -> Text:
        style = self.get_component_rich_style
        mark = " (you)" if entry.racer == self.you else " [bot]" if entry.bot else ""
        name = entry.name[: _NAME_WIDTH - len(mark)] + mark
        place = ordinal(index + 1) if entry.status is RacerStatus.WON else f"{index + 1}."
        status = _STATUS_WORDS[entry.status]
        if entry.status is RacerStatus.WON:
            status = f"won, score {entry.score}"
        line = Text.assemble(
            (f"{place:>3} ", style("leaderboard--done") if status else ""),
            (f"{name:<{_NAME_WIDTH}} ", style("leaderboard--you") if mark == " (you)" else ""),
            (progress_bar(entry.face_up, self.piles), style("leaderboard--bar")),
            f" {entry.cards_played:>2}",
        )
        if status:
            line.append(f"\n     {status}", style("leaderboard--done"))
        return line

    def render(self) -> Text:
        """The heading, then one line per racer."""
        lines = [Text(self.heading, style=self.get_component_rich_style("leaderboard--heading"))]
        lines += [self._line(entry, index) for index, entry in enumerate(self.entries)]
        if not self.entries:
            lines.append(Text("nobody yet"))
        return Text("\n").join(lines)
