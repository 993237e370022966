"""The lobby: quick race, the daily deal and its boards, a private race with options, join
by code, the open public races."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Checkbox, DataTable, Footer, Input, Label, Static

from client.screens.base import ClientScreen
from client.screens.requests import ServerRequest, ShowDailyBoard
from engine import Ruleset
from protocol import CreateRace, JoinRace, ListRaces, QuickRace, RaceOptions, RaceSummary
from protocol.daily import DailyRace

DEFAULT_RACERS = 4
DEFAULT_MINUTES = 10
LIST_REFRESH = 3.0
"""Seconds between two requests for the open races while the lobby shows: the protocol
has no feed of the list, and a list a few seconds old is fresh enough to pick from."""


def read_options(max_racers: str, minutes: str, public: bool) -> RaceOptions:
    """Race options from the lobby's form; ``ValueError`` says which field is wrong.

    >>> read_options("3", "5", False).time_limit
    300
    """
    try:
        racers = int(max_racers)
    except ValueError:
        raise ValueError(f"racers must be a whole number, not {max_racers!r}") from None
    try:
        limit = float(minutes)
    except ValueError:
        raise ValueError(f"minutes must be a number, not {minutes!r}") from None
    if not 1 <= racers <= 1000:
        raise ValueError("racers must be from 1 to 1000")
    if not 0 < limit <= 1440:
        raise ValueError("minutes must be more than 0 and at most 1440")
    return RaceOptions(
        max_racers=racers,
        min_racers=min(2, racers),
        time_limit=max(1, round(limit * 60)),
        ruleset=Ruleset(),
        public=public,
        auto_start=False,  # a host's race starts when everyone in it says ready
    )


class LobbyScreen(ClientScreen):
    """Where a player picks a race. The app does the talking; this screen only asks."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "refresh_races", "refresh races"),
        Binding("q,escape", "leave", "quit"),
    ]

    def __init__(self, name: str) -> None:
        super().__init__()
        self.player = name
        self.races: list[RaceSummary] = []
        self._table_ready = False
        """Whether the races table has its columns (once mounted): it shows races then."""

    def compose(self) -> ComposeResult:
        """Actions on the left, open races on the right."""
        yield Static(f"Foursquare Race · lobby · playing as {self.player}", id="title",
                     markup=False)
        yield Static("", id="link", markup=False)
        with Horizontal(id="lobby"):
            with Vertical(id="actions"):
                with Horizontal(id="quick-row"):
                    yield Button("Quick race", id="quick", variant="primary")
                    yield Button("Daily", id="daily")
                    yield Button("Boards", id="daily-board")
                yield Label("Join a race by its code")
                yield Input(placeholder="race code, then Enter", id="code")
                yield Label("Create a race (private unless public)")
                with Horizontal(classes="form-row"):
                    yield Label("racers", classes="form-label")
                    yield Input(str(DEFAULT_RACERS), id="max-racers", classes="form-number")
                    yield Label("minutes", classes="form-label")
                    yield Input(str(DEFAULT_MINUTES), id="minutes", classes="form-number")
                with Horizontal(classes="form-row"):
                    yield Checkbox("public", id="public")
                    yield Button("Create race", id="create")
            with Vertical(id="races-panel"):
                yield Label("Public races (kept up to date): Enter joins")
                yield DataTable(id="races", cursor_type="row")
        yield Static("", id="message", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Set up the races table and ask for the list."""
        table = self.query_one("#races", DataTable)
        table.add_columns("code", "racers", "rules", "time limit")
        self._table_ready = True
        self._fill_table()  # with a list that came before the screen was mounted, if any
        self.action_refresh_races()
        self.set_interval(LIST_REFRESH, self.action_refresh_races)

    def show_races(self, races: list[RaceSummary]) -> None:
        """Show these open public races (the table shows them once the screen is mounted)."""
        self.races = races
        if self._table_ready:
            self._fill_table()

    def _fill_table(self) -> None:
        table = self.query_one("#races", DataTable)
        table.clear()
        for race in self.races:
            limit = f"{race.time_limit // 60} min" if race.time_limit else "none"
            table.add_row(
                race.race, f"{race.racers}/{race.max_racers}", race.ruleset.notation(), limit,
                key=race.race,
            )

    def say(self, message: str) -> None:
        """One sentence on the message line."""
        self.query_one("#message", Static).update(message)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        """Quick race, today's daily deal, its boards, or create race."""
        if event.button.id == "quick":
            self.post_message(ServerRequest(QuickRace()))
        elif event.button.id == "daily":
            self.post_message(ServerRequest(DailyRace()))
        elif event.button.id == "daily-board":
            self.post_message(ShowDailyBoard())
        elif event.button.id == "create":
            try:
                options = read_options(
                    self.query_one("#max-racers", Input).value,
                    self.query_one("#minutes", Input).value,
                    self.query_one("#public", Checkbox).value,
                )
            except ValueError as error:
                self.say(f"Cannot create that race: {error}.")
                return
            self.post_message(ServerRequest(CreateRace(options=options)))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Join by code."""
        code = event.value.strip()
        if event.input.id == "code" and code:
            self.post_message(ServerRequest(JoinRace(race=code)))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Join the selected public race."""
        if event.row_key.value is not None:
            self.post_message(ServerRequest(JoinRace(race=event.row_key.value)))

    def action_refresh_races(self) -> None:
        """Ask the server for the open races."""
        self.post_message(ServerRequest(ListRaces()))

    def action_leave(self) -> None:
        """Leave the client."""
        self.app.exit(0)
