"""Solo practice: the race screen on a local game, with undo, hints and new deals."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import Static

from client.advice import suggest
from client.board import BoardView
from client.screens.confirm import ConfirmScreen
from client.screens.race import Clock, RaceScreen
from client.wording import plural
from engine import (
    Flipped,
    Game,
    IllegalMove,
    Position,
    Ruleset,
    Status,
    replay,
)


def random_seed() -> str:
    """A fresh seed for a new solo deal."""
    return secrets.token_hex(8)


def describe_end(game: Game) -> str:
    """The sentence shown when a game ends."""
    if game.status is Status.WON:
        left = plural(game.score or 0, "card")
        return f"Won with {left} left: score {game.score}. Press n for a new deal."
    reason = game.loss_reason.sentence if game.loss_reason else "the game is lost"
    return f"Lost: {reason}. Press u to undo or n for a new deal."


class SoloScreen(RaceScreen):
    """One game against nobody; the clock runs from the first card placed."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("u", "undo", "undo"),
        Binding("question_mark,i", "hint", "hint"),
        Binding("n", "new_deal", "new deal"),
        Binding("q", "leave", "quit"),
    ]

    def __init__(
        self,
        seed: str | None = None,
        rules: Ruleset = Ruleset(),
        *,
        clock: Clock = time.monotonic,
        new_seed: Callable[[], str] = random_seed,
    ) -> None:
        self.new_seed = new_seed
        self.game = Game.new(seed if seed is not None else new_seed(), rules)
        super().__init__(self._heading(), clock)

    def _heading(self) -> str:
        return f"Foursquare solo · seed {self.game.seed}"

    def on_mount(self) -> None:
        """Draw the first deal."""
        self._redraw()
        self.say("Place the card: arrows or hjkl, then Enter; or click. ? for a hint.")

    def _redraw(self, flipped: list[Position] | None = None) -> None:
        self.grid.highlight = None  # a hint or an undo is pointed out until the board changes
        self.show_board(BoardView.from_game(self.game), flipped or ())

    def place(self, position: Position) -> None:
        """Play the card in hand at ``position`` and show what turned."""
        if self.game.is_over():
            return
        try:
            events = self.game.play(position)
        except IllegalMove as error:
            self.say(f"Not there: {error}.")
            return
        if self.game.cards_played == 1:
            self.start_clock()
        flipped = [event.position for event in events if isinstance(event, Flipped)]
        self._redraw(flipped)
        if self.game.is_over():
            self.stop_clock()
            self.say(describe_end(self.game))
        elif flipped:
            self.say(f"{len(flipped)} card{'s' if len(flipped) > 1 else ''} turned over.")
        else:
            self.say("")

    def action_undo(self) -> None:
        """Take back the last move by replaying all the others."""
        moves = self.game.moves
        if not moves:
            self.say("Nothing to undo.")
            return
        assert self.game.seed is not None  # solo games are always dealt from a seed
        self.game = replay(self.game.seed, moves[:-1], self.game.rules)
        if self._clock_stopped_at is not None:
            self._clock_stopped_at = None
        self._redraw()
        self.grid.highlight = moves[-1]
        self.say("Took back the last card, from the highlighted spot.")

    def action_hint(self) -> None:
        """Move the cursor to the default bot's choice."""
        suggestion = suggest(self.game)
        if suggestion is None:
            self.say("No hint to give here.")
            return
        self.grid.cursor = self.grid.highlight = suggestion
        self.say("Hint: the highlighted spot (Enter places the card there).")

    def action_new_deal(self) -> None:
        """Start again on a fresh seed; a game in progress is thrown away only once the
        player has said yes."""
        if self.game.cards_played == 0 or self.game.is_over():
            self._deal_again()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._deal_again()

        self.app.push_screen(ConfirmScreen("Throw this game away for a new deal?"), answered)

    def _deal_again(self) -> None:
        self.game = Game.new(self.new_seed(), self.game.rules)
        self._clock_origin = self._clock_stopped_at = None
        self.status_panel.elapsed = 0.0
        self.query_one("#title", Static).update(self._heading())
        self._redraw()
        self.say("New deal.")
