"""Watching a finished race again: every board tiled, move by move, with play, pause,
step and speed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import Static

from client.race_state import RaceTracker, board_view, rank_progress
from client.replay import Frame, Replay, ReplayError
from client.screens.base import ClientScreen
from client.widgets.leaderboard import Leaderboard
from client.widgets.tiles import BoardTiles, tiled_screen
from client.wording import plural, verdict
from protocol.result import verify_result

SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
"""How fast a replay may go, in race seconds per second; ``+`` and ``-`` move along."""

FIRST_SPEED = SPEEDS.index(1.0)
"""A replay starts at the race's own pace."""

TICK_SECONDS = 0.05
"""How often a playing replay looks at its clock to show the moves due."""

NOTHING_HIDDEN = (
    "Nothing is hidden in a replay: the race is over and its seed revealed, so every "
    "board shows every move as it was made (face-down cards as the racer saw them)."
)


def race_clock(ms: float) -> str:
    """Race time as shown: minutes, seconds and tenths.

    >>> race_clock(83_420), race_clock(0)
    ('1:23.4', '0:00.0')
    """
    tenths = int(ms // 100)
    return f"{tenths // 600}:{tenths % 600 // 10:02d}.{tenths % 10}"


def speed_text(speed: float) -> str:
    """``x2``, ``x0.5``.

    >>> speed_text(2.0), speed_text(0.25)
    ('x2', 'x0.25')
    """
    return f"x{speed:g}"


def check_line(replay: Replay) -> str:
    """Whether the record holds up, checked here: its seed against the commitment it
    carries, every racer's moves against the result claimed."""
    problems = verify_result(replay.result).problems
    return verdict(replay.result.seed, problems, "the record's commitment")


def replay_of(tracker: RaceTracker, verdict: str) -> ReplayScreen | str:
    """The replay of the race ``tracker`` saw finish (its check, ``verdict``, shown with
    it); or the sentence saying why there is none."""
    if tracker.finished is None:
        return "The race is not over: a race is replayed once it has finished."
    try:
        return ReplayScreen(Replay(tracker.finished.to_result()), verdict=verdict)
    except (ReplayError, ValueError) as error:
        return f"This race cannot be replayed: {error}"


class ReplayScreen(ClientScreen):
    """A finished race, replayed from its record. It starts playing at once, at the
    race's own pace; ``clock`` (seconds, never going back) paces it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "play_pause", "play/pause"),
        Binding("left,h", "step(-1)", "back", key_display="←"),
        Binding("right,l", "step(1)", "step", key_display="→"),
        Binding("minus", "speed(-1)", "slower", key_display="-"),
        Binding("plus,equals_sign", "speed(1)", "faster", key_display="+"),
        # Not in the footer, which 80 columns cannot fit them in: the panel names them.
        Binding("home,g", "go_to_start", "start", key_display="Home", show=False),
        Binding("end,G", "go_to_end", "end", key_display="End", show=False),
        Binding("escape", "close", "close"),
        Binding("q", "quit_app", "quit"),
    ]

    def __init__(
        self,
        replay: Replay,
        *,
        clock: Callable[[], float] = time.monotonic,
        verdict: str | None = None,
    ) -> None:
        """``verdict`` is the check of the record to show, when the caller made a better
        one (against a commitment it saw before the start); by default the record is
        checked against itself."""
        super().__init__()
        self.replay = replay
        self.clock = clock
        self.verdict = verdict
        self.step = 0
        """How many moves of the timeline are shown."""
        self.position_ms = 0.0
        """Where the replay's clock stands, in race time."""
        self.playing = False
        self.speed_index = FIRST_SPEED
        self._ticked_at = 0.0
        self._timer: Timer | None = None

    @property
    def speed(self) -> float:
        """Race seconds played per second."""
        return SPEEDS[self.speed_index]

    def compose(self) -> ComposeResult:
        """Tiles on the left; the leaderboard, where the replay stands, and the check on
        the right."""
        result = self.replay.result
        racers = plural(len(result.racers), "racer")
        yield from tiled_screen(
            Text(f"Replay of race {result.race_id} · {racers}"),
            Static("", id="replay-position"),
            Static("", id="fog"),
            Static("", id="verified"),
        )

    def on_mount(self) -> None:
        """Show the start, and play."""
        self.query_one("#fog", Static).update(Text(NOTHING_HIDDEN))
        verdict = self.verdict if self.verdict is not None else check_line(self.replay)
        self.query_one("#verified", Static).update(Text(verdict))
        self._timer = self.set_interval(TICK_SECONDS, self.advance, pause=True)
        self.show_step(0)
        self.play()

    # -------------------------------------------------------------- playing

    def play(self) -> None:
        """Play from where the replay stands (from the start, when it is at the end)."""
        if self.step >= self.replay.length:
            self.position_ms = 0.0
            self.show_step(0)
        self.playing = True
        self._ticked_at = self.clock()
        if self._timer is not None:
            self._timer.resume()
        self._show_position()

    def pause(self) -> None:
        """Stop where the replay stands."""
        self.playing = False
        if self._timer is not None:
            self._timer.pause()
        self._show_position()

    def advance(self) -> None:
        """Move the replay's clock on by the time passed (times the speed) and show every
        move due by then; stop at the last."""
        if not self.playing:
            return
        now = self.clock()
        self.position_ms += (now - self._ticked_at) * 1000 * self.speed
        self._ticked_at = now
        due = self.replay.step_at(self.position_ms)
        if due != self.step:
            self.show_step(due)
        if due >= self.replay.length:
            self.pause()
        else:
            self._show_position()

    def show_step(self, step: int) -> None:
        """Draw the race after the first ``step`` moves."""
        frame = self.replay.frame(step)
        self.step = frame.step
        self._draw(frame)
        self._show_position()

    def _draw(self, frame: Frame) -> None:
        rules = self.replay.result.ruleset
        lines = {entry.racer: entry for entry in frame.progress}
        boards = {
            racer: board_view(board, rules, lines[racer].status, board.shown)
            for racer, board in frame.boards.items()
        }
        spot = None
        if frame.last is not None and frame.last_position is not None:
            spot = (frame.last.racer, frame.last_position)
        self.query_one("#tiles", BoardTiles).show(self.replay.names, boards, spot)
        final = frame.step == self.replay.length
        ranked = list(frame.progress) if final else rank_progress(frame.progress)
        self.query_one("#leaderboard", Leaderboard).show(ranked, None, rules.grid_size ** 2)

    def _show_position(self) -> None:
        replay = self.replay
        state = "▶ playing" if self.playing else "❚❚ paused"
        shown_ms = self.position_ms if self.playing else replay.time_of(self.step)
        where = (
            f"{state} {speed_text(self.speed)}\n"
            f"move {self.step} of {replay.length} · "
            f"{race_clock(min(shown_ms, replay.duration_ms))} of {race_clock(replay.duration_ms)}"
        )
        if replay.length and not replay.timed:
            where += "\nThe record has no move times: racers' moves in turn."
        where += "\nHome: the start · End: the end"
        self.query_one("#replay-position", Static).update(Text(where))

    # -------------------------------------------------------------- keys

    def action_play_pause(self) -> None:
        """Play, or pause."""
        if self.playing:
            self.pause()
        else:
            self.play()

    def action_step(self, by: int) -> None:
        """Pause, and show one move more (``by`` 1) or one fewer (-1)."""
        self.pause()
        self.show_step(max(0, min(self.step + by, self.replay.length)))
        self.position_ms = float(self.replay.time_of(self.step))
        self._show_position()

    def action_speed(self, by: int) -> None:
        """Go faster (``by`` 1) or slower (-1), within :data:`SPEEDS`."""
        self.speed_index = max(0, min(self.speed_index + by, len(SPEEDS) - 1))
        self._show_position()

    def action_go_to_start(self) -> None:
        """Back to the start (still playing, if it was)."""
        self.position_ms = 0.0
        self._ticked_at = self.clock()
        self.show_step(0)

    def action_go_to_end(self) -> None:
        """The race as it ended."""
        self.pause()
        self.show_step(self.replay.length)
        self.position_ms = float(self.replay.duration_ms)

    def action_close(self) -> None:
        """Back to the screen the replay was opened from; or leave, when there is none."""
        if len(self.app.screen_stack) > 2:  # Textual's default screen, then ours
            self.app.pop_screen()
        else:
            self.app.exit(0)

    def action_quit_app(self) -> None:
        """Leave the client."""
        self.app.exit(0)

    @property
    def position_text(self) -> str:
        """Where the replay stands, as shown."""
        return str(self.query_one("#replay-position", Static).render())
