"""A tournament's standings and its races in progress, for entrants and spectators.

The standings table follows every ``tournament`` message. Beside it, each race in progress
is a :class:`~client.widgets.leaderboard.Leaderboard` with live progress bars; a digit key
opens that race on the watch screen, and ``escape`` comes back.
"""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Footer, Static

from client.race_state import RaceTracker
from client.screens.base import ClientScreen
from client.screens.race import Clock
from client.screens.requests import ServerRequest
from client.screens.results import ResultsScreen
from client.screens.watch import WatchScreen
from client.tournament_state import TournamentTracker, standing_cells
from client.widgets.leaderboard import Leaderboard
from protocol.tournament import (
    EntrantState,
    JoinTournament,
    LeaveTournament,
    SetArenaAvailable,
    TournamentFormat,
)

#: Digit keys open the races shown, first to ninth.
_RACE_KEYS = "123456789"


class TournamentScreen(ClientScreen):
    """Standings, where the tournament stands, and its races; ``playing`` adds entrant keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(key, f"open_race('{key}')", "watch a race", show=key == "1",
                    key_display="1-9")
            for key in _RACE_KEYS
        ),
        Binding("a", "toggle_available", "arena: break / pair me"),
        Binding("l", "leave_or_enter", "leave / enter"),
        Binding("q", "quit_app", "quit"),
    ]

    def __init__(
        self, tournament: TournamentTracker, *, playing: bool, clock: Clock = time.monotonic
    ) -> None:
        super().__init__()
        self.tournament = tournament
        self.playing = playing
        self.clock = clock
        self.composed = False
        """Whether the widgets exist yet (messages can arrive before they do)."""
        self._boards: dict[str, Leaderboard] = {}
        """The live progress of each race shown, by race id."""

    def compose(self) -> ComposeResult:
        """Standings on the left, the races in progress on the right."""
        yield Static("", id="title")
        yield Static("", id="link", markup=False)
        with Horizontal(id="main"):
            with Vertical(id="tournament-left"):
                yield Static("", id="phase")
                yield Static("", id="entrant-line")
                yield DataTable(id="tournament-standings", cursor_type="none")
            with VerticalScroll(id="tournament-races"):
                yield Static("", id="races-heading")
                yield Static("", id="races-unfollowed")
        yield Static("", id="message", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Draw what is known and count an arena's window down."""
        self.composed = True
        table = self.query_one("#tournament-standings", DataTable)
        table.add_columns("place", "entrant", "points", "stock left", "time", "games")
        self.refresh_from_tracker()
        self.set_interval(1.0, self._show_phase)

    def on_screen_resume(self) -> None:
        """Back on top (from a watched race): redraw, since only the screen on top is
        redrawn as messages come, and the standings and races have moved on meanwhile."""
        self.refresh_from_tracker()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Entrant keys only for entrants; the arena key only in an arena."""
        if action == "leave_or_enter":
            return self.playing
        if action == "toggle_available":
            state = self.tournament.state
            return self.playing and state is not None and state.format is TournamentFormat.ARENA
        return True

    def say(self, message: str) -> None:
        """One sentence on the message line."""
        self.query_one("#message", Static).update(message)

    @property
    def race_ids(self) -> list[str]:
        """The races shown with live progress, in the order of their keys."""
        return list(self._boards)

    def standings_text(self) -> list[tuple[str, ...]]:
        """The standings rows as shown (what tests read)."""
        state = self.tournament.state
        if state is None:
            return []
        return [standing_cells(line, self.tournament.you) for line in state.standings]

    def refresh_from_tracker(self) -> None:
        """Redraw everything from the tournament tracker."""
        if not self.composed or not self.is_attached:
            return  # drawn in on_mount once the widgets exist; gone once the app closes
        tournament, state = self.tournament, self.tournament.state
        if state is not None:
            self.query_one("#title", Static).update(
                Text(f"Tournament {state.name} [{state.tournament}] · {state.format.value}")
            )
            self.query_one("#entrant-line", Static).update(Text(tournament.entrant_line()))
            table = self.query_one("#tournament-standings", DataTable)
            table.clear()
            for row in self.standings_text():
                table.add_row(*(Text(cell) for cell in row))
        self._show_phase()
        self.refresh_races()
        self.refresh_bindings()

    def _show_phase(self) -> None:
        if self.is_attached:
            phase = self.tournament.phase_line(self.clock())
            self.query_one("#phase", Static).update(Text(phase))

    def refresh_race(self, race_id: str) -> None:
        """Redraw one race's live progress (many times a second while it runs)."""
        board, tracker = self._boards.get(race_id), self.tournament.races.get(race_id)
        if board is None or tracker is None or not self.is_attached:
            self.refresh_races()
            return
        board.heading = self._heading(race_id, tracker)
        board.show(tracker.leaderboard(), None, tracker.rules.grid_size ** 2)

    def refresh_races(self) -> None:
        """Redraw the live progress of the races followed, and list the others."""
        if not self.composed or not self.is_attached:
            return
        tournament, state = self.tournament, self.tournament.state
        panel = self.query_one("#tournament-races", VerticalScroll)
        for race_id in [r for r in self._boards if r not in tournament.races]:
            self._boards.pop(race_id).remove()
        for race_id in tournament.races:
            if race_id not in self._boards:
                self._boards[race_id] = Leaderboard("")
                panel.mount(self._boards[race_id], before=self.query_one("#races-unfollowed"))
            self.refresh_race(race_id)
        shown = len(self._boards)
        heading = "Races in progress" if shown else "No race in progress."
        if shown:
            heading += ": press 1-9 to watch one"
        self.query_one("#races-heading", Static).update(Text(heading))
        names = {line.entrant: line.name for line in state.standings} if state else {}
        others = [
            f"Race {race.race}: " + ", ".join(names.get(r, r) for r in race.racers)
            for race in (state.races if state else ())
            if race.race not in tournament.races
        ]
        self.query_one("#races-unfollowed", Static).update(Text("\n".join(others)))

    def _heading(self, race_id: str, tracker: RaceTracker) -> str:
        index = self.race_ids.index(race_id)
        key = f"{_RACE_KEYS[index]}. " if index < len(_RACE_KEYS) else ""
        done = " · finished" if tracker.finished is not None else ""
        return f"{key}Race {race_id}{done}"

    # ----------------------------------------------------------------- keys

    def action_open_race(self, key: str) -> None:
        """Open the race shown as number ``key`` on the watch screen, with every board."""
        index = _RACE_KEYS.find(key)
        races = self.race_ids
        if not 0 <= index < len(races):
            self.say("No race has that number.")
            return
        self.app.push_screen(TournamentRaceScreen(self.tournament.races[races[index]]))

    def action_toggle_available(self) -> None:
        """Arena: take a break from pairing, or ask to be paired again."""
        tournament = self.tournament
        tournament.available = not tournament.available
        self.post_message(ServerRequest(
            SetArenaAvailable(tournament=tournament.code, available=tournament.available)
        ))
        self.query_one("#entrant-line", Static).update(Text(tournament.entrant_line()))

    def action_leave_or_enter(self) -> None:
        """Withdraw (points are kept), or enter again after leaving."""
        mine, code = self.tournament.mine, self.tournament.code
        if mine is not None and mine.state is EntrantState.ACTIVE:
            self.post_message(ServerRequest(LeaveTournament(tournament=code)))
        else:
            self.post_message(ServerRequest(JoinTournament(tournament=code)))

    def action_quit_app(self) -> None:
        """Leave the client."""
        self.app.exit(0)


class TournamentResultsScreen(ResultsScreen):
    """The results of one of the entrant's races: ``n`` goes back to the standings."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "next_race", "standings"),
    ]


class TournamentRaceScreen(WatchScreen):
    """The watch screen opened from a tournament: ``escape`` goes back to the standings."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "standings"),
    ]

    def action_back(self) -> None:
        """Back to the tournament."""
        self.app.pop_screen()
