"""The race screen in a network race: moves go to the server, opponents race alongside."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widget import Widget
from textual.widgets import Static

from client.race_state import FINISHED_STATUSES, RaceTracker
from client.screens.confirm import ConfirmScreen
from client.screens.race import Clock, RaceScreen
from client.screens.requests import ServerRequest
from client.widgets.leaderboard import Leaderboard
from engine import Position
from protocol import Place, RacerStatus, Resign

_END_WORDS = {
    RacerStatus.WON: "You completed the grid!",
    RacerStatus.LOST: "Your game is lost.",
    RacerStatus.RESIGNED: "You resigned.",
    RacerStatus.TIMED_OUT: "Time is up.",
}


class NetworkRaceScreen(RaceScreen):
    """The racer's own grid from the mirror, the others as progress bars."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+x", "resign", "resign"),
        Binding("question_mark", "no_hints", show=False),
        Binding("q", "leave", "quit"),
    ]

    def __init__(self, tracker: RaceTracker, clock: Clock = time.monotonic) -> None:
        super().__init__(f"Race {tracker.code}", clock)
        self.tracker = tracker
        self.composed = False
        """Whether the widgets exist yet (messages can arrive before they do)."""
        self._snapshot_seen: tuple[object, float] | None = None
        """The latest race snapshot drawn, and when (this screen's clock) it was first."""

    def compose_side(self) -> Iterable[Widget]:
        """The opponents panel and the link state."""
        yield Leaderboard("Racers", id="opponents", fit=True)
        yield Static("", id="link", markup=False)

    def on_mount(self) -> None:
        """Draw the race as it stands and start the clock from the server's start time."""
        self.composed = True
        snapshot = self.tracker.snapshot
        if snapshot is not None:
            self.status_panel.time_limit = snapshot.options.time_limit
        if snapshot is not None and snapshot.started_at is not None:
            self.start_clock((snapshot.server_time - snapshot.started_at) / 1000)
        else:
            self.start_clock()
        self.refresh_from_tracker()
        self.say("Race! Arrows or hjkl and Enter (or click) to place; ctrl+x resigns.")

    def refresh_from_tracker(self, flipped: Iterable[Position] = ()) -> None:
        """Redraw the grid, the status panel and the opponents."""
        if not self.composed or not self.is_attached:
            return  # drawn in on_mount once the widgets exist; gone once the app closes
        mirror = self.tracker.mirror
        if mirror is not None:
            self.show_board(mirror.view(), flipped)
            if mirror.status in FINISHED_STATUSES and self._clock_stopped_at is None:
                self.stop_clock()
                self.say(f"{_END_WORDS[mirror.status]} Waiting for the others to finish…")
        self._show_opponents()

    def _show_opponents(self) -> None:
        self.query_one("#opponents", Leaderboard).show(
            self.tracker.leaderboard(), self.tracker.you,
            self.tracker.rules.grid_size ** 2, self._away_notes(),
        )

    def _away_notes(self) -> dict[str, str]:
        """Who is away, and how long before the server counts them out."""
        snapshot = self.tracker.snapshot
        if self._snapshot_seen is None or self._snapshot_seen[0] is not snapshot:
            self._snapshot_seen = (snapshot, self.clock())
        return self.tracker.away_notes(self.clock() - self._snapshot_seen[1])

    def tick_clock(self) -> None:
        """Tick the race clock, and the time left to racers who are away."""
        super().tick_clock()
        if not self.composed or not self.is_attached:
            return
        if self.tracker.away_notes(0.0) or self.query_one("#opponents", Leaderboard).notes:
            self._show_opponents()

    def place(self, position: Position) -> None:
        """Send the move; the board changes when the server accepts it."""
        mirror, code = self.tracker.mirror, self.tracker.race
        if mirror is None or code is None or mirror.in_hand is None or mirror.pending:
            return
        reason = mirror.game().why_illegal(position)
        if reason is not None:
            self.say(f"Not there: {reason}.")
            return
        mirror.pending = (mirror.move_number, position)
        self.post_message(
            ServerRequest(Place(race=code, move=mirror.move_number, row=position[0],
                                col=position[1]))
        )
        self.refresh_from_tracker()

    def action_no_hints(self) -> None:
        """Hints are for practice; say so rather than ignore the key."""
        self.say("No hints in a race: they are for foursquare solo.")

    @property
    def still_racing(self) -> bool:
        """Whether our game in this race is still going (quitting or resigning loses it)."""
        mirror = self.tracker.mirror
        return mirror is not None and mirror.status not in FINISHED_STATUSES

    def action_resign(self) -> None:
        """Give up this race, once the racer has said yes."""
        code = self.tracker.race
        if code is None or not self.still_racing:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.post_message(ServerRequest(Resign(race=code)))

        self.app.push_screen(ConfirmScreen("Resign? Your game in this race ends here."), answered)

    def action_leave(self) -> None:
        """Leave the client; while our game goes on, only once the racer has said yes."""
        if not self.still_racing:
            self.app.exit(0)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.exit(0)

        self.app.push_screen(ConfirmScreen(
            "Quit? Your game stays in the race: run foursquare play again to carry on "
            "while the race runs."
        ), answered)
