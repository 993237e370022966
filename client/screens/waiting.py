"""The waiting room: who is in, who is ready, and the countdown to the start."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Footer, Static

from client.race_state import RaceTracker
from client.screens.base import ClientScreen
from client.screens.race import Clock
from client.screens.requests import BackToLobby, ServerRequest
from protocol import RaceState, Ready


class WaitingScreen(ClientScreen):
    """Shows the race's lobby; ``r`` toggles ready, ``escape`` leaves the race."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "toggle_ready", "ready / not ready"),
        Binding("escape", "leave_race", "leave race"),
        Binding("q", "quit_app", "quit"),
    ]

    def __init__(self, tracker: RaceTracker, clock: Clock = time.monotonic) -> None:
        super().__init__()
        self.tracker = tracker
        self.composed = False
        """Whether the widgets exist yet (messages can arrive before they do)."""
        self.clock = clock
        self._countdown_origin: tuple[float, float] | None = None

    def compose(self) -> ComposeResult:
        """Race facts, the racers table, the countdown line."""
        yield Static("", id="title")
        yield Static("", id="link", markup=False)
        yield Static("", id="race-info")
        yield DataTable(id="racers", cursor_type="none")
        yield Static("", id="countdown")
        yield Static("", id="message", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        """Draw what is known and tick the countdown."""
        self.composed = True
        self.query_one("#racers", DataTable).add_columns("racer", "ready", "")
        self.refresh_from_tracker()
        self.set_interval(0.25, self._show_countdown)

    def say(self, message: str) -> None:
        """One sentence on the message line."""
        self.query_one("#message", Static).update(message)

    def refresh_from_tracker(self) -> None:
        """Redraw from the race's latest snapshot."""
        if not self.composed or not self.is_attached:
            return  # drawn in on_mount once the widgets exist; gone once the app closes
        snapshot = self.tracker.snapshot
        if snapshot is None:
            return
        options = snapshot.options
        self.query_one("#title", Static).update(f"Race {snapshot.race} · waiting room")
        limit = f"{options.time_limit // 60} min" if options.time_limit else "no time limit"
        self.query_one("#race-info", Static).update(
            f"Code [b]{snapshot.race}[/b]: give it to friends so they can join.\n"
            f"Rules {options.ruleset.notation()}, {limit}, {options.min_racers} to "
            f"{options.max_racers} racers. Seed commitment {snapshot.commitment[:16]}…"
        )
        table = self.query_one("#racers", DataTable)
        table.clear()
        for racer in snapshot.racers:
            who = racer.name + (" (you)" if racer.racer == self.tracker.you else "")
            notes = ", ".join(
                note for note, present in (("bot", racer.bot), ("offline", not racer.connected))
                if present
            )
            table.add_row(Text(who), "✓ ready" if racer.ready else "…", notes)
        if snapshot.state is RaceState.COUNTDOWN and snapshot.starts_at is not None:
            self._countdown_origin = (
                self.clock(), (snapshot.starts_at - snapshot.server_time) / 1000
            )
        else:
            self._countdown_origin = None
        self._show_countdown()

    def _show_countdown(self) -> None:
        snapshot = self.tracker.snapshot
        line = self.query_one("#countdown", Static)
        if snapshot is None:
            return
        if self._countdown_origin is not None:
            received, remaining = self._countdown_origin
            left = max(remaining - (self.clock() - received), 0.0)
            line.update(f"Starting in {left:.0f} s…")
        else:
            options = snapshot.options
            start = (
                f"it counts down as soon as {options.min_racers} are in"
                if options.auto_start
                else f"it starts when at least {options.min_racers} are in and all are ready "
                "(press r)"
            )
            line.update(f"{len(snapshot.racers)} of {options.max_racers} racers in; {start}.")

    def _you_ready(self) -> bool:
        snapshot = self.tracker.snapshot
        if snapshot is None:
            return False
        return any(r.ready for r in snapshot.racers if r.racer == self.tracker.you)

    def action_toggle_ready(self) -> None:
        """Say ready, or take it back."""
        code = self.tracker.race
        if code is not None:
            self.post_message(ServerRequest(Ready(race=code, ready=not self._you_ready())))

    def action_leave_race(self) -> None:
        """Leave this race for the lobby at once: the app says so to the server, and a
        race left empty closes without a word back."""
        self.post_message(BackToLobby())

    def action_quit_app(self) -> None:
        """Leave the client."""
        self.app.exit(0)
