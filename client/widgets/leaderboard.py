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


def fit_name(name: str, mark: str, width: int) -> str:
    """``name`` and its ``mark`` (`` (you)``, `` [bot]``) in at most ``width`` columns: a
    name too long ends in "…", and the mark always shows.

    >>> fit_name("annabelle", " (you)", 12)
    'annab… (you)'
    """
    room = width - len(mark)
    return (name if len(name) <= room else name[: room - 1] + "…") + mark


def shown_racers(heights: list[int], you: int | None, room: int | None) -> list[int]:
    """Which racers' lines to draw, in order, in ``room`` lines (``None``: all); ``-1``
    stands for a "…" line where racers are left out. The best come first, and our own
    line (``you``, an index) is always among them.

    >>> shown_racers([1] * 8, 7, 5)
    [0, 1, 2, -1, 7]
    >>> shown_racers([1] * 8, 1, 5)
    [0, 1, 2, 3, -1]
    >>> shown_racers([1, 1], 1, 5)
    [0, 1]
    """
    if room is None or sum(heights) <= room:
        return list(range(len(heights)))
    others = [index for index in range(len(heights)) if index != you]
    mine = [you] if you is not None else []
    shown = _with_gaps(mine, len(heights))
    for count in range(1, len(others) + 1):  # the best first, as many as fit
        candidate = _with_gaps(sorted([*others[:count], *mine]), len(heights))
        if sum(heights[i] if i >= 0 else 1 for i in candidate) > room:
            break
        shown = candidate
    return shown


def _with_gaps(indices: list[int], count: int) -> list[int]:
    """``indices`` with ``-1`` wherever racers between them (or after them) are left out."""
    drawn: list[int] = []
    expected = 0
    for index in indices:
        if index != expected:
            drawn.append(-1)
        drawn.append(index)
        expected = index + 1
    if expected != count:
        drawn.append(-1)
    return drawn


class Leaderboard(Widget):
    """One line per racer: place, name, bar of face-up piles, cards played, status."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "leaderboard--you",
        "leaderboard--bar",
        "leaderboard--done",
        "leaderboard--heading",
    }

    def __init__(
        self, heading: str = "Racers", *, id: str | None = None, fit: bool = False
    ) -> None:
        super().__init__(id=id)
        self.heading = heading
        self.fit = fit
        """Whether to fit the lines to the widget's height (the stylesheet gives it one),
        cutting racers from the middle so that our own line always shows."""
        self.entries: list[ProgressEntry] = []
        self.you: str | None = None
        self.piles = 16
        self.notes: dict[str, str] = {}
        """A word under a racer's line, by racer id (``disconnected, out in 0:42``)."""

    def show(
        self,
        entries: list[ProgressEntry],
        you: str | None,
        piles: int,
        notes: dict[str, str] | None = None,
    ) -> None:
        """Show ``entries`` (already in standings order), with ``notes`` under theirs."""
        self.entries, self.you, self.piles = entries, you, piles
        self.notes = notes or {}
        self.refresh(layout=True)

    def line_for(self, entry: ProgressEntry) -> str:
        """The plain text of ``entry``'s line (what tests and screen readers see)."""
        return self._line(entry, 0).plain

    def _line(self, entry: ProgressEntry, index: int) -> Text:
        style = self.get_component_rich_style
        mark = " (you)" if entry.racer == self.you else " [bot]" if entry.bot else ""
        name = fit_name(entry.name, mark, _NAME_WIDTH)
        place = ordinal(index + 1) if entry.status is RacerStatus.WON else f"{index + 1}."
        status = _STATUS_WORDS[entry.status]
        if entry.status is RacerStatus.WON:
            status = f"won, score {entry.score}"
        note = self.notes.get(entry.racer)
        if note:
            status = f"{status}, {note}" if status else note
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
        """The heading, then one line per racer (those that fit, when fitted)."""
        lines = [Text(self.heading, style=self.get_component_rich_style("leaderboard--heading"))]
        blocks = [self._line(entry, index) for index, entry in enumerate(self.entries)]
        you = next((i for i, e in enumerate(self.entries) if e.racer == self.you), None)
        room = self.size.height - 1 if self.fit and self.size.height else None
        left_out = Text("   …", style=self.get_component_rich_style("leaderboard--done"))
        heights = [block.plain.count("\n") + 1 for block in blocks]
        lines += [blocks[i] if i >= 0 else left_out for i in shown_racers(heights, you, room)]
        if not self.entries:
            lines.append(Text("nobody yet"))
        return Text("\n").join(lines)
