"""The result of a race: standings, the player's moves, and the seed checked locally."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from client.player_views import rating_line
from client.race_state import RaceTracker
from client.screens.base import ClientScreen
from client.screens.replay import replay_of
from client.screens.requests import BackToLobby
from client.widgets.leaderboard import fit_name, ordinal
from client.wording import verdict
from engine import LossReason, format_moves
from protocol import RaceFinished, RacePar, RacerStatus

RACER_COLUMN = 20
"""Columns the racer's name takes in the standings (longer names end in "…"), so that
at 80 columns every other column, the score and the time included, still shows."""

RESULT_WORDS = {
    RacerStatus.WON: "won",
    RacerStatus.LOST: "lost",
    RacerStatus.RESIGNED: "resigned",
    RacerStatus.TIMED_OUT: "out of time",
}


def verification_line(tracker: RaceTracker) -> str:
    """The seed and whether this client could confirm the whole result by replaying it."""
    finished = tracker.finished
    if finished is None:
        return ""
    return verdict(finished.seed, tracker.verify().problems,
                   "the commitment published before the start")


def par_text(par: RacePar) -> str:
    """The deal's par as shown: ``par 24 (proven)``, a proven range such as par 22 to
    23 (written with an en dash), or ``par ≥ 23`` for a lower bound alone."""
    if par.score is None:
        if par.proven:
            return "no win possible"
        known = "" if par.at_most is None else f" (at most {par.at_most})"
        return f"par unknown: no winning line found{known}"
    return f"par {par_value(par)} (proven)" if par.proven else f"par {par_value(par)}"


def par_value(par: RacePar) -> str:
    """The par's number or range: ``24``, 22 to 23 (an en dash between), or ``≥ 23``
    with no upper bound."""
    if par.proven or par.at_most == par.score:
        return str(par.score)
    if par.at_most is None:
        return f"≥ {par.score}"
    return f"{par.score}\N{EN DASH}{par.at_most}"


def score_text(score: int | None, par: RacePar | None) -> str:
    """A racer's score, beside the par once known: ``22 / par 24``, or a range."""
    if score is None:
        return ""
    if par is None or par.score is None:
        return str(score)
    return f"{score} / par {par_value(par)}"


def par_line(tracker: RaceTracker) -> str:
    """The deal's par and every winner's score beside it; empty until the par arrives."""
    par, finished = tracker.par, tracker.finished
    if par is None or finished is None:
        return ""
    scores = [
        f"{standing.name} {score_text(standing.score, par)}"
        for standing in finished.standings
        if standing.score is not None
    ]
    return "Deal: " + par_text(par) + "".join(f"\n{line}" for line in scores)


def standings_rows(
    finished: RaceFinished,
    you: str | None,
    reasons: Mapping[str, LossReason] | None = None,
    par: RacePar | None = None,
) -> list[tuple[Text, ...]]:
    """One row per racer: place, name, result (with why, for a loss), score (beside the
    deal's par, once known), cards, time."""
    reasons = reasons or {}
    rows: list[tuple[Text, ...]] = []
    for standing in finished.standings:
        seconds = (
            f"{standing.finish_ms / 1000:.1f} s" if standing.finish_ms is not None else "—"
        )
        marks = (" (you)" if standing.racer == you else "") + (" [bot]" if standing.bot else "")
        rows.append((
            Text(ordinal(standing.place)),
            Text(fit_name(standing.name, marks, RACER_COLUMN)),
            Text(_result_words(standing.status, reasons.get(standing.racer))),
            Text(score_text(standing.score, par)),
            Text(str(standing.cards_played)),
            Text(seconds),
        ))
    return rows


def _result_words(status: RacerStatus, reason: LossReason | None) -> str:
    words = RESULT_WORDS.get(status, status.value)
    if status is RacerStatus.LOST and reason is not None:
        words += {LossReason.FACE_DOWN: ": face down", LossReason.STOCK_EMPTY: ": stock out"}[
            reason
        ]
    return words


class ResultsScreen(ClientScreen):
    """After the race: ``n`` goes back to the lobby for another."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "next_race", "another race"),
        Binding("r", "replay", "replay"),
        Binding("q", "quit_app", "quit"),
    ]

    def __init__(self, tracker: RaceTracker) -> None:
        super().__init__()
        self.tracker = tracker
        self._columns = False
        """Whether the standings table has its columns (messages can arrive before)."""

    def compose(self) -> ComposeResult:
        """Standings table, our new rating, the par, then the seed check, then the
        player's moves."""
        yield Static(f"Race {self.tracker.code} · results", id="title")
        yield DataTable(id="standings", cursor_type="none")
        yield Static("", id="rating")
        yield Static("", id="par")
        yield Static("", id="verified")
        yield Static("", id="my-moves")
        yield Static("", id="link", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Fill in the result."""
        finished = self.tracker.finished
        if finished is None:
            return
        table = self.query_one("#standings", DataTable)
        table.add_column("place")
        table.add_column("racer", width=RACER_COLUMN)
        table.add_columns("result", "score", "played", "time")
        self._columns = True
        self.refresh_from_tracker()
        self.query_one("#verified", Static).update(Text(verification_line(self.tracker)))
        mine = [s for s in finished.standings if s.racer == self.tracker.you]
        if mine:
            self.query_one("#my-moves", Static).update(
                Text(f"Your moves: {format_moves(mine[0].moves) or '(none)'}")
            )

    def refresh_from_tracker(self) -> None:
        """Redraw the standings, our new rating and the par (both arrive after the
        result)."""
        finished = self.tracker.finished
        if finished is None or not self._columns or not self.is_attached:
            return
        table = self.query_one("#standings", DataTable)
        table.clear()
        reasons = {
            racer: entry.reason
            for racer, entry in self.tracker.progress.items()
            if entry.reason is not None
        }
        for row in standings_rows(finished, self.tracker.you, reasons, self.tracker.par):
            table.add_row(*row)
        rating = self.tracker.rating
        self.query_one("#rating", Static).update(
            Text("" if rating is None else rating_line(rating))
        )
        self.query_one("#par", Static).update(Text(par_line(self.tracker)))

    @property
    def par_shown(self) -> str:
        """The par line as shown."""
        return str(self.query_one("#par", Static).render())

    @property
    def rating_shown(self) -> str:
        """Our new rating's line as shown (empty while none has come)."""
        return str(self.query_one("#rating", Static).render())

    @property
    def verified_text(self) -> str:
        """The verification line as shown."""
        return str(self.query_one("#verified", Static).render())

    def on_screen_resume(self) -> None:
        """Back from the replay: show what came meanwhile (the rating, the par)."""
        self.refresh_from_tracker()

    def action_replay(self) -> None:
        """Watch the race again, every racer's board, move by move."""
        replay = replay_of(self.tracker, verification_line(self.tracker))
        if not isinstance(replay, str):
            self.app.push_screen(replay)

    def action_next_race(self) -> None:
        """Back to the lobby."""
        self.post_message(BackToLobby())

    def action_quit_app(self) -> None:
        """Leave the client."""
        self.app.exit(0)
