"""Watching a race: every board tiled, a live leaderboard, the fog shown for what it is."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from client.race_state import RaceTracker, board_view
from client.screens.base import ClientScreen
from client.screens.replay import replay_of
from client.screens.results import par_line, verification_line
from client.widgets.cards import FOG
from client.widgets.leaderboard import Leaderboard
from client.widgets.tiles import BoardTiles, tiled_screen
from client.wording import plural
from protocol import RacerStatus, RaceState


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

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "replay", "replay"),
        Binding("q", "quit_app", "quit"),
    ]

    def __init__(self, tracker: RaceTracker) -> None:
        super().__init__()
        self.tracker = tracker
        self.composed = False
        """Whether the widgets exist yet (messages can arrive before they do)."""

    def compose(self) -> ComposeResult:
        """Tiles on the left, leaderboard and race facts on the right."""
        yield from tiled_screen(
            "Watching", Static("", id="fog"), Static("", id="par"), Static("", id="verified")
        )

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
        boards = {}
        for racer, board in tracker.boards.items():
            progress = tracker.progress.get(racer)
            status = progress.status if progress is not None else RacerStatus.WAITING
            played = progress.cards_played if progress is not None else board.shown
            boards[racer] = board_view(board, tracker.rules, status, played)
        self.query_one("#tiles", BoardTiles).show(tracker.names(), boards)
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

    def on_screen_resume(self) -> None:
        """Back from the replay: show what came meanwhile."""
        self.refresh_from_tracker()

    def action_replay(self) -> None:
        """Watch the race again from the start, once it is over."""
        replay = replay_of(self.tracker, verification_line(self.tracker))
        if isinstance(replay, str):
            self.say(replay)
        else:
            self.app.push_screen(replay)

    def action_quit_app(self) -> None:
        """Leave the client."""
        self.app.exit(0)
