"""A player's profile: its rating in each pool with the rating's history as a chart, its
counts (games, wins, best score, average stock left) and its latest races, each with the
command that watches it again.

Opened over the lobby (your own profile, or a leaderboard line's player) or by
``foursquare profile NAME``. It asks nothing itself: the app sends ``get_profile`` and
hands the answer (or the refusal) to :meth:`ProfileScreen.show` (or :meth:`say`).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Label, Static
from textual_plotext import PlotextPlot

from client.player_views import (
    PROVISIONAL_NOTE,
    WATCH_COMMAND,
    player_name,
    pool_row,
    race_row,
    rating_text,
)
from protocol.players import PoolRecord, Profile


class ProfileScreen(ModalScreen[None]):
    """One player's profile, over the screen that opened it (Escape closes it; opened
    on its own, by ``foursquare profile``, Escape quits)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q", "close", "back"),
    ]

    def __init__(self, asked: str, *, alone: bool = False) -> None:
        super().__init__()
        self.asked = asked
        """Who was asked for (a name or an id), for the title until the answer comes."""
        self.alone = alone
        self.profile: Profile | None = None
        self.charted: PoolRecord | None = None
        """The pool whose rating history the chart draws."""

    def compose(self) -> ComposeResult:
        """Title, pools and chart side by side, then the recent races."""
        with Vertical(id="profile"):
            yield Static(f"Profile of {self.asked} · asking the server…", id="profile-title",
                         markup=False)
            with Horizontal(id="profile-top"):
                with Vertical(id="profile-pools"):
                    yield Label("Ratings by rules (Enter charts one)")
                    yield DataTable(id="pools", cursor_type="row")
                yield PlotextPlot(id="rating-chart")
            yield Label("Recent races: Enter shows how to watch one again")
            yield DataTable(id="recent", cursor_type="row")
            yield Static("", id="profile-message", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Columns for the tables; the profile if it came before the screen was up."""
        self.query_one("#pools", DataTable).add_columns(
            "rules", "rating", "games", "wins", "won", "best", "avg stock left"
        )
        self.query_one("#recent", DataTable).add_columns(
            "race", "ended (UTC)", "place", "outcome", "score", "rating after", "watch again"
        )
        if self.profile is not None:
            self._fill()

    def show(self, profile: Profile) -> None:
        """Show the server's answer."""
        self.profile = profile
        self.charted = profile.pools[0] if profile.pools else None
        if self.is_mounted:
            self._fill()

    def say(self, sentence: str) -> None:
        """A sentence under the races (a refusal, or how to watch a race)."""
        self.query_one("#profile-message", Static).update(sentence)

    def _fill(self) -> None:
        profile = self.profile
        assert profile is not None
        title = f"Profile of {player_name(profile.name, profile.bot)} · player {profile.player}"
        if profile.pools:
            best = profile.pools[0]
            title += f" · rating {rating_text(best.rating, best.provisional)}"
            if best.provisional:
                title += f" ({PROVISIONAL_NOTE})"
        else:
            title += " · not rated yet"
        self.query_one("#profile-title", Static).update(title)
        pools = self.query_one("#pools", DataTable)
        pools.clear()
        for number, pool in enumerate(profile.pools):
            pools.add_row(*pool_row(pool), key=str(number))
        recent = self.query_one("#recent", DataTable)
        recent.clear()
        for race in profile.recent:
            recent.add_row(*race_row(race), key=race.race)
        self._chart()

    def _chart(self) -> None:
        """Draw the charted pool's rating after each of its latest rated races."""
        chart = self.query_one("#rating-chart", PlotextPlot)
        plot = chart.plt
        plot.clear_data()
        plot.clear_figure()
        pool = self.charted
        if pool is None or not pool.history:
            plot.title("Rating history: no rated race yet")
        else:
            points = [point / 100 for point in pool.history]
            plot.plot(list(range(1, len(points) + 1)), points, marker="braille")
            plot.title(f"Rating after each rated race ({pool.ruleset.notation()})")
            plot.xlabel("rated race")
        chart.refresh()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """A pool: chart it. A race: say how to watch it again."""
        key = event.row_key.value
        if key is None or self.profile is None:
            return
        if event.data_table.id == "pools":
            self.charted = self.profile.pools[int(key)]
            self._chart()
        elif event.data_table.id == "recent":
            self.say(f"Watch race {key} again: {WATCH_COMMAND.format(race=key)}")

    def action_close(self) -> None:
        """Back to where the profile was opened from (or quit, if opened alone)."""
        if self.alone:
            self.app.exit(0)
        else:
            self.dismiss(None)
