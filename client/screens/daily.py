"""The daily deal in the terminal: today's board and yesterday's revealed one, and the
sealed result of a daily room."""

from __future__ import annotations

import datetime
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Footer, Label, Static

from client.screens.base import ClientScreen
from client.screens.requests import BackToLobby, ServerRequest, ShowDailyBoard
from client.screens.results import RACER_COLUMN, RESULT_WORDS, par_text
from client.widgets.leaderboard import fit_name
from protocol import RacePar
from protocol.daily import Daily, DailyEntry, DailyResult, GetDaily
from protocol.result import verify_result

#: Lines of each day's board the screen asks for.
BOARD_LINES = 20


def utc_time(ms: int) -> str:
    """A server time (ms) as people read it: ``2026-12-02 00:10 UTC``.

    >>> utc_time(1_796_170_215_000)
    '2026-12-02 00:10 UTC'
    """
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def previous_day(day: str) -> str:
    """The day before ``day`` (``YYYY-MM-DD``).

    >>> previous_day("2026-12-01")
    '2026-11-30'
    """
    return (datetime.date.fromisoformat(day) - datetime.timedelta(days=1)).isoformat()


def time_text(finish_ms: int | None) -> str:
    """A finish time as ``m:ss.t`` (empty when timed out)."""
    if finish_ms is None:
        return ""
    minutes, rest = divmod(finish_ms, 60_000)
    return f"{minutes}:{rest / 1000:04.1f}"


def board_summary(daily: Daily) -> str:
    """What a day's board says above its lines: its commitment, and either when it is
    revealed or its seed, its par and whether every line shown replays on it."""
    head = f"{daily.day} · {daily.total} ranked · commitment {daily.commitment[:16]}…"
    if not daily.revealed or daily.seed is None:
        return f"{head}\nSealed: seed and moves revealed at {utc_time(daily.reveal_at)}"
    par = daily.par
    par_words = "par not searched yet" if par is None else par_text(RacePar(
        race="daily", score=par.score, proven=par.proven, cards_used=par.cards_used,
        at_most=par.at_most,
    ))
    check = verify_result(daily.to_result())
    mark = (
        "✓ verified: the seed matches the commitment, and every line shown replays to its "
        "result" if check.ok else "✗ NOT verified: " + "; ".join(check.problems)
    )
    return f"{head}\nSeed {daily.seed} · {par_words}\n{mark}"


def entry_row(entry: DailyEntry) -> tuple[str, ...]:
    """A board line's cells."""
    place = "-" if entry.place is None else str(entry.place)
    name = fit_name(entry.name, " [bot]" if entry.bot else "", RACER_COLUMN)
    score = "" if entry.score is None else str(entry.score)
    return (place, name, RESULT_WORDS.get(entry.status, entry.status.value), score,
            str(entry.cards_played), str(entry.face_up), time_text(entry.finish_ms))


class DailyBoardScreen(ClientScreen):
    """Today's board (sealed until the day is over) beside yesterday's, revealed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "refresh", "refresh"),
        Binding("q,escape", "back", "lobby"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.boards: dict[str, Daily] = {}
        """The boards shown, by day."""
        self.today: str | None = None

    def compose(self) -> ComposeResult:
        """Two boards side by side, each with its summary."""
        yield Static("Foursquare Race · the daily deal", id="title", markup=False)
        with Horizontal(id="daily-boards"):
            for which, title in (("today", "Today"), ("yesterday", "Yesterday")):
                with Vertical(classes="daily-board"):
                    yield Label(title)
                    yield Static("asking the server…", id=f"{which}-summary", markup=False)
                    yield DataTable(id=f"{which}-lines", cursor_type="row")
        yield Static("", id="message", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Set up the tables and ask for today's board (yesterday's follows)."""
        for which in ("today", "yesterday"):
            table = self.query_one(f"#{which}-lines", DataTable)
            table.add_columns("#", "player", "result", "score", "cards", "up", "time")
        self.action_refresh()

    def action_refresh(self) -> None:
        """Ask for today's board again."""
        self.post_message(ServerRequest(GetDaily(limit=BOARD_LINES)))

    def show_daily(self, daily: Daily) -> None:
        """Show a board the server sent: today's (the first asked for), or yesterday's."""
        if self.today is None or daily.day >= self.today:
            first = self.today is None
            self.today = daily.day
            self._fill("today", daily)
            if first:
                self.post_message(ServerRequest(GetDaily(day=previous_day(daily.day),
                                                         limit=BOARD_LINES)))
        elif daily.day == previous_day(self.today):
            self._fill("yesterday", daily)

    def no_board(self, sentence: str) -> None:
        """Yesterday had no deal (or the server refused): say so in its place."""
        self.query_one("#yesterday-summary", Static).update(sentence)

    def _fill(self, which: str, daily: Daily) -> None:
        self.boards[daily.day] = daily
        summary = board_summary(daily)
        if daily.you is not None:
            you = daily.you
            place = "not ranked (a guest)" if you.place is None else f"place {you.place}"
            summary += f"\nYou: {RESULT_WORDS.get(you.status, you.status.value)}, {place}"
        self.query_one(f"#{which}-summary", Static).update(summary)
        table = self.query_one(f"#{which}-lines", DataTable)
        table.clear()
        for entry in daily.entries:
            table.add_row(*entry_row(entry))

    def say(self, message: str) -> None:
        """One sentence on the message line."""
        self.query_one("#message", Static).update(message)

    def action_back(self) -> None:
        """Back to the lobby."""
        self.post_message(BackToLobby())


class DailyResultScreen(ClientScreen):
    """A daily room's end: its standings, sealed (no seed, no moves) until the reveal."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "board", "the day's board"),
        Binding("q,escape,enter", "back", "lobby"),
    ]

    def __init__(self, result: DailyResult) -> None:
        super().__init__()
        self.result = result

    def compose(self) -> ComposeResult:
        """The room's standings and when the day is revealed."""
        result = self.result
        yield Static(f"Foursquare Race · the daily deal of {result.day} · done",
                     id="title", markup=False)
        yield Static(
            f"Your result is on the day's board. The seed and everyone's moves are revealed "
            f"at {utc_time(result.reveal_at)}, when every line can be replayed; until then "
            "nobody can race the deal twice.",
            id="sealed", markup=False,
        )
        yield DataTable(id="standings", cursor_type="row")
        yield Static("", id="message", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Fill the standings."""
        table = self.query_one("#standings", DataTable)
        table.add_columns("#", "racer", "result", "score", "cards", "up", "time")
        for line in self.result.standings:
            table.add_row(
                str(line.place), fit_name(line.name, " [bot]" if line.bot else "", RACER_COLUMN),
                RESULT_WORDS.get(line.status, line.status.value),
                "" if line.score is None else str(line.score), str(line.cards_played),
                str(line.face_up), time_text(line.finish_ms),
            )

    def say(self, message: str) -> None:
        """One sentence on the message line."""
        self.query_one("#message", Static).update(message)

    def action_board(self) -> None:
        """Show the day's board."""
        self.post_message(ShowDailyBoard())

    def action_back(self) -> None:
        """Back to the lobby."""
        self.post_message(BackToLobby())
