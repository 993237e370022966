"""Watching a race: every board tiled, a live leaderboard, the fog shown for what it is."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical
from textual.events import Resize
from textual.widgets import Footer, Static

from client.race_state import RaceTracker, board_view
from client.screens.base import ClientScreen
from client.screens.results import par_line, verification_line
from client.widgets.cards import FOG
from client.widgets.grid import GridView
from client.widgets.leaderboard import Leaderboard
from client.wording import plural
from protocol import RacerStatus, RaceState

TILE_WIDTH = 20
"""Columns one compact board takes, with its gutter (a 4x4 grid is 15 wide)."""


def fog_note(line: int | None) -> str:
    """What the fog hides, for the line under the leaderboard.

    >>> fog_note(1).split(",")[0], fog_note(0).split(",")[0]
    ('Fog: each board shows its first card only', 'Fog: each board shows no card yet')
    """
    if line is None or line == 0:
        shown = "no card yet"
    else:
        shown = "its first card only" if line == 1 else f"its first {line} cards only"
    return (
        f"Fog: each board shows {shown}, as far as every racer still racing has drawn. "
        f"{FOG} marks where cards may lie unseen (+N counts them); ░░░ is a face-down card."
    )


class WatchScreen(ClientScreen):
    """A spectator's view of one race."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit_app", "quit")]

    def __init__(self, tracker: RaceTracker) -> None:
        super().__init__()
        self.tracker = tracker
        self.composed = False
        """Whether the widgets exist yet (messages can arrive before they do)."""
        self._tiles: dict[str, GridView] = {}
        """Each racer's board widget, by racer id."""

    def compose(self) -> ComposeResult:
        """Tiles on the left, leaderboard and race facts on the right."""
        yield Static("Watching", id="title")
        with Horizontal(id="main"):
            yield Grid(id="tiles")
            with Vertical(id="side"):
                yield Leaderboard("Leaderboard", id="leaderboard")
                yield Static("", id="fog")
                yield Static("", id="par")
                yield Static("", id="verified")
                yield Static("", id="link", markup=False)
        yield Footer()

    def on_resize(self, event: Resize) -> None:
        """As many columns of boards as fit side by side (Textual also calls the base's)."""
        tiles = self.query_one("#tiles", Grid)
        tiles.styles.grid_size_columns = max(1, tiles.size.width // TILE_WIDTH)

    def on_mount(self) -> None:
        """Draw what is known."""
        self.composed = True
        self.refresh_from_tracker()

    def say(self, message: str) -> None:
        """A sentence under the leaderboard."""
        self.query_one("#fog", Static).update(Text(message))

    def refresh_from_tracker(self) -> None:
        """Redraw tiles and leaderboard from the tracker."""
        if not self.composed or not self.is_attached:
            return  # drawn in on_mount once the widgets exist; gone once the app closes
        tracker, snapshot = self.tracker, self.tracker.snapshot
        if snapshot is None:
            return
        state = "finished" if tracker.finished else snapshot.state.value
        racers = plural(len(snapshot.racers), "racer")
        self.query_one("#title", Static).update(
            Text(f"Watching race {snapshot.race} · {state} · {racers}")
        )
        names = tracker.names()
        tiles = self.query_one("#tiles", Grid)
        for racer in names:
            if racer not in self._tiles:
                grid = GridView(interactive=False, compact=True)
                self._tiles[racer] = grid
                tiles.mount(Vertical(Static(Text(names[racer]), classes="tile-name"), grid,
                                     classes="tile"))
        for racer, board in tracker.boards.items():
            progress = tracker.progress.get(racer)
            status = progress.status if progress is not None else RacerStatus.WAITING
            played = progress.cards_played if progress is not None else board.shown
            if racer in self._tiles:
                self._tiles[racer].show(board_view(board, tracker.rules, status, played))
        self.query_one("#leaderboard", Leaderboard).show(
            tracker.leaderboard(), None, tracker.rules.grid_size ** 2
        )
        fogged = snapshot.options.fog and tracker.finished is None
        if snapshot.state is RaceState.LOBBY or snapshot.state is RaceState.COUNTDOWN:
            self.say("The race has not started yet.")
        elif fogged:
            self.say(fog_note(tracker.fog_line))
        else:
            self.say("Boards show every move; face-down cards stay hidden.")
        self.query_one("#par", Static).update(Text(par_line(tracker)))
        self.query_one("#verified", Static).update(Text(verification_line(tracker)))

    def action_quit_app(self) -> None:
        """Leave the client."""
        self.app.exit(0)
