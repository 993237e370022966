"""The lobby: quick race, the daily deal and its boards, a private race with options, join
by code, the open public races, and the leaderboards of the published rules' pool, kept
up to date (by rating, by wins, by best score; bots shown marked, or left out), from
which a player's profile opens."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, Checkbox, DataTable, Footer, Input, Label, Static

from client.player_views import BOARD_TITLES, board_row, next_board
from client.screens.base import ClientScreen
from client.screens.requests import OpenProfile, ServerRequest, ShowDailyBoard
from engine import Ruleset
from protocol import CreateRace, JoinRace, ListRaces, QuickRace, RaceOptions, RaceSummary
from protocol.daily import DailyRace
from protocol.players import Board, GetLeaderboard, Leaderboard

DEFAULT_RACERS = 4
DEFAULT_MINUTES = 10
LIST_REFRESH = 3.0
"""Seconds between two requests for the open races while the lobby shows: the protocol
has no feed of the list, and a list a few seconds old is fresh enough to pick from."""
BOARD_REFRESH = 10.0
"""Seconds between two requests for the leaderboard's page while the lobby shows: ratings
move when races end, so a board ten seconds old is fresh enough."""
BOARD_LINES = 20
"""Lines of a leaderboard page in the lobby."""


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
        Binding("b", "next_board", "next leaderboard"),
        Binding("f", "filter_bots", "bots shown/hidden"),
        Binding("n", "next_page", "next page"),
        Binding("t", "top_page", "top"),
        Binding("p", "own_profile", "your profile"),
        Binding("q,escape", "leave", "quit"),
    ]

    def __init__(self, name: str) -> None:
        super().__init__()
        self.player = name
        self.races: list[RaceSummary] = []
        self._table_ready = False
        """Whether the races table has its columns (once mounted): it shows races then."""
        self.board = Board.RATING
        self.bots = True
        """Whether the leaderboard shows bots (marked) or leaves them out."""
        self.page_after: str | None = None
        """The cursor the page shown starts after (``None``: the top of the board)."""
        self.page: Leaderboard | None = None

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
                yield Static("", id="board-title", markup=False)
                yield DataTable(id="board", cursor_type="row")
        yield Static("", id="message", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Set up the races table and ask for the list."""
        table = self.query_one("#races", DataTable)
        table.add_columns("code", "racers", "rules", "time limit")
        self.query_one("#board", DataTable).add_columns(
            "#", "player", "rating", "games", "wins", "best"
        )
        self._table_ready = True
        self._fill_table()  # with a list that came before the screen was mounted, if any
        self._title_board()
        self.action_refresh_races()
        self.set_interval(LIST_REFRESH, self.action_refresh_races)
        self.ask_board()
        self.set_interval(BOARD_REFRESH, self.ask_board)

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

    # ------------------------------------------------------------ leaderboards

    def ask_board(self) -> None:
        """Ask for the leaderboard's page shown (again: it moves as races end)."""
        self.post_message(ServerRequest(GetLeaderboard(
            board=self.board, bots=self.bots, after=self.page_after, limit=BOARD_LINES,
        )))

    def show_board(self, page: Leaderboard) -> None:
        """Show a page of a leaderboard, if it is the one asked for last (an answer to an
        earlier choice of board is dropped)."""
        if (page.board, page.bots) != (self.board, self.bots) or not self._table_ready:
            return
        self.page = page
        table = self.query_one("#board", DataTable)
        table.clear()
        for entry in page.entries:
            table.add_row(*board_row(entry), key=entry.player)
        self._title_board()

    def _title_board(self) -> None:
        shown = "with bots" if self.bots else "without bots"
        where = ""
        if self.page is not None and self.page.entries:
            first, last = self.page.entries[0].rank, self.page.entries[-1].rank
            where = f" · {first}-{last} of {self.page.total}"
        elif self.page is not None:
            where = " · nobody rated yet"
        self.query_one("#board-title", Static).update(
            f"Leaderboard: {BOARD_TITLES[self.board]}, {shown}{where} "
            f"({Ruleset().notation()} rules). Enter: profile"
        )

    def _choose_board(self, board: Board, bots: bool) -> None:
        self.board, self.bots, self.page_after, self.page = board, bots, None, None
        self.query_one("#board", DataTable).clear()
        self._title_board()
        self.ask_board()

    def action_next_board(self) -> None:
        """Rating, then most wins, then best scores."""
        self._choose_board(next_board(self.board), self.bots)

    def action_filter_bots(self) -> None:
        """Show bots (always marked) or leave them out."""
        self._choose_board(self.board, not self.bots)

    def action_next_page(self) -> None:
        """The page after the one shown (if the board goes on)."""
        if self.page is None or self.page.next is None:
            self.say("That is the end of the leaderboard.")
            return
        self.page_after = self.page.next
        self.ask_board()

    def action_top_page(self) -> None:
        """Back to the top of the leaderboard."""
        self.page_after = None
        self.ask_board()

    def action_own_profile(self) -> None:
        """Your own profile (a claimed player's)."""
        self.post_message(OpenProfile(None, self.player))

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
        """Join the selected public race, or open the selected player's profile."""
        key = event.row_key.value
        if key is None:
            return
        if event.data_table.id == "races":
            self.post_message(ServerRequest(JoinRace(race=key)))
        elif event.data_table.id == "board" and self.page is not None:
            shown = next((e.name for e in self.page.entries if e.player == key), key)
            self.post_message(OpenProfile(key, shown))

    def action_refresh_races(self) -> None:
        """Ask the server for the open races."""
        self.post_message(ServerRequest(ListRaces()))

    def action_leave(self) -> None:
        """Leave the client."""
        self.app.exit(0)
