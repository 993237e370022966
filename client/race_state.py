"""What the client knows of a race, kept up to date from the server's messages.

Plain objects, no I/O and no Textual: the screens draw them, the bots read them, and the
tests feed them messages directly.

The racer's own board is a *mirror*: a local :class:`~engine.Game` rebuilt from the
cards the server has shown and the moves it accepted. It lets the client draw the grid,
mark legal targets and show flips with the engine itself, without ever knowing a card
it has not been dealt.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from client.board import BoardView, PileView
from client.bots import RacerView
from engine import DECK, Card, Game, Position, Ruleset, Status
from protocol import (
    Boards,
    CardToPlace,
    ClientMessage,
    JoinRace,
    MovePlaced,
    Progress,
    ProgressEntry,
    RaceFinished,
    RacePar,
    RacerBoard,
    RacerStatus,
    RaceSnapshot,
    RaceState,
    ServerMessage,
)
from protocol.daily import DailyClientMessage, DailyRace, DailyResult
from protocol.players import RatingChanged
from protocol.result import RacerOutcome, RacerResult, Verification, rank_racers, verify_result

_DISPLAY_STATUS = {
    RacerStatus.WAITING: Status.PLAYING,
    RacerStatus.RACING: Status.PLAYING,
    RacerStatus.WON: Status.WON,
    RacerStatus.LOST: Status.LOST,
    RacerStatus.RESIGNED: Status.LOST,
    RacerStatus.TIMED_OUT: Status.LOST,
}

#: Racer statuses that mean the racer's game is over.
FINISHED_STATUSES = frozenset(
    {RacerStatus.WON, RacerStatus.LOST, RacerStatus.RESIGNED, RacerStatus.TIMED_OUT}
)


@dataclass
class RacerMirror:
    """The racer's own game as far as the racer has seen it."""

    rules: Ruleset
    cards: list[Card] = field(default_factory=list)
    """Every card drawn so far, the one in hand last (when there is one)."""
    moves: list[Position] = field(default_factory=list)
    stock_left: int = len(DECK) - 1
    status: RacerStatus = RacerStatus.WAITING
    pending: tuple[int, Position] | None = None
    """A move sent and not yet answered: (move number, position)."""
    base: tuple[tuple[Position, tuple[Card, ...], bool], ...] | None = None
    """The piles found on resuming in a new client, whose moves came in an order this
    mirror never saw: the game goes on from this position (see :meth:`restore`)."""

    @property
    def in_hand(self) -> Card | None:
        """The card to place now, if the server has dealt it."""
        if self.status is RacerStatus.RACING and len(self.cards) == len(self.moves) + 1:
            return self.cards[-1]
        return None

    @property
    def move_number(self) -> int:
        """The number of the next move (1 for the first card)."""
        return len(self.moves) + 1

    def game(self) -> Game:
        """The mirror game: the cards seen, then one unseen card so the engine does not
        end the game for want of stock while the server has not yet dealt the next card.
        """
        seen = set(self.cards)
        spare = [next(card for card in DECK if card not in seen)] if len(seen) < len(DECK) else []
        if self.base is None:
            game, played = Game([*self.cards, *spare], self.rules), 0
        else:
            played = sum(len(cards) for _, cards, _ in self.base)
            game = Game.from_piles(self.base, [*self.cards[played:], *spare], self.rules)
        for move in self.moves[played:]:
            game.play(move)
        return game

    def restore(self, board: RacerBoard) -> None:
        """Take our own board, as the server sends it on a resume, for the game so far.

        A client started afresh (the racer quit and came back) knows none of its moves;
        the board holds every card placed but not the order they came in, so the mirror
        plays on from the position itself. ``cards`` and ``moves`` then list the piles'
        cards and spots in board order, which keeps the move numbers right.
        """
        self.base = tuple((pile.position, tuple(pile.cards), pile.face_up) for pile in board.piles)
        self.cards = [card for _, cards, _ in self.base for card in cards]
        self.moves = [position for position, cards, _ in self.base for _ in cards]
        self.pending = None

    def receive_card(self, message: CardToPlace) -> None:
        """The server dealt the card for move ``message.move``."""
        if message.move == self.move_number + 1 and self.pending is not None:
            # The move we sent was applied but its answer was lost with the connection.
            self.moves.append(self.pending[1])
        if message.move != self.move_number:
            return
        if len(self.cards) > len(self.moves):
            self.cards[len(self.moves)] = message.card
        else:
            self.cards.append(message.card)
        self.pending = None
        self.stock_left = message.stock_left
        self.status = RacerStatus.RACING

    def receive_placed(self, message: MovePlaced) -> list[Position]:
        """The server accepted a move; returns the positions that flipped."""
        if message.move != self.move_number:
            return []  # an answer we have already applied (resent after a resume)
        if len(self.cards) == len(self.moves):
            self.cards.append(message.card)
        self.moves.append(message.position)
        self.pending = None
        self.stock_left = message.stock_left
        self.status = message.status
        return [flip.position for flip in message.flips]

    def view(self) -> BoardView:
        """The board to draw."""
        board = BoardView.from_game(self.game(), self.stock_left)
        status = _DISPLAY_STATUS[self.status]
        if self.in_hand is None or self.pending is not None:
            return replace(board, card=None, targets=(), status=status)
        return replace(board, status=status)

    def racer_view(self) -> RacerView:
        """What a bot needs to choose the next move."""
        return RacerView(self.rules, tuple(self.cards), tuple(self.moves))


def board_view(
    board: RacerBoard, rules: Ruleset, status: RacerStatus, played: int | None = None
) -> BoardView:
    """A spectator's board: face-down tops stay hidden, whatever the wire says; of the
    ``played`` cards (from the racer's progress), those past ``board.shown`` are fogged."""
    piles = {
        pile.position: PileView(pile.cards[-1] if pile.face_up else None, pile.face_up,
                                len(pile.cards))
        for pile in board.piles
    }
    face_down = sum(1 for pile in board.piles if not pile.face_up)
    return BoardView(
        rules=rules,
        piles=piles,
        stock_left=max(len(DECK) - board.shown, 0),
        face_down=face_down,
        cards_played=board.shown,
        status=_DISPLAY_STATUS[status],
        fogged=max((played or 0) - board.shown, 0),
    )


def _as_result(entry: ProgressEntry) -> RacerResult:
    """A progress line in the result record's shape, to share its standings rule."""
    outcome = (
        RacerOutcome(entry.status.value) if entry.status in FINISHED_STATUSES
        else RacerOutcome.TIMED_OUT  # still racing ranks like a racer out of time
    )
    finish = entry.finish_ms / 1000 if entry.finish_ms is not None else None
    return RacerResult(entry.racer, entry.name, entry.bot, outcome, entry.score, finish,
                       entry.cards_played, entry.face_up, entry.face_down, ())


def rank_progress(entries: Iterable[ProgressEntry]) -> list[ProgressEntry]:
    """Progress lines in standings order: the standings rule applied to them as they
    stand (a racer still racing ranks like one out of time)."""
    by_racer = {entry.racer: entry for entry in entries}
    ranked = rank_racers(_as_result(entry) for entry in by_racer.values())
    return [by_racer[result.racer_id] for result in ranked]


@dataclass
class RaceTracker:
    """One race as this client sees it, from joining (or watching) to the result."""

    snapshot: RaceSnapshot | None = None
    commitment: str | None = None
    """The seed commitment as first published, kept to check the revealed seed against."""
    progress: dict[str, ProgressEntry] = field(default_factory=dict)
    boards: dict[str, RacerBoard] = field(default_factory=dict)
    mirror: RacerMirror | None = None
    finished: RaceFinished | None = None
    par: RacePar | None = None
    """The deal's par, when the server has sent it (after the result)."""
    rating: RatingChanged | None = None
    """Our new rating, when the race was rated and we race as a claimed player: the
    server sends it after the result, once the race is in our record."""
    last_flips: list[Position] = field(default_factory=list)
    fog_line: int | None = None
    """How many cards of each board the fog lets a spectator see (``None``: all of them)."""
    you: str | None = None
    """Our racer id in this race, or ``None`` when watching (every snapshot the server
    sends a racer names it; a spectator's name nobody)."""
    daily: bool = False
    """Whether this race is a daily room (we asked for it with ``daily_race``)."""
    sealed: DailyResult | None = None
    """A daily room's end: its standings, the seed and the moves sealed until the day's
    reveal."""

    @property
    def race(self) -> str | None:
        """The race's id (what messages about it carry), once known."""
        return self.snapshot.race if self.snapshot is not None else None

    @property
    def code(self) -> str | None:
        """The code others join the race with (its id for public races)."""
        if self.snapshot is None:
            return None
        return self.snapshot.code or self.snapshot.race

    @property
    def rules(self) -> Ruleset:
        """The race's ruleset (the default until the snapshot arrives)."""
        return self.snapshot.options.ruleset if self.snapshot is not None else Ruleset()


    def seat_lost_on_drop(self) -> ClientMessage | DailyClientMessage | None:
        """What to send after a resume to get back a seat the drop gave up, if any.

        The server frees a racer's seat when its connection drops before the start (a
        lobby must not wait for the departed), so a resumed racer joins again.
        """
        snapshot = self.snapshot
        if snapshot is None or self.you is None or self.finished is not None:
            return None
        if snapshot.state in (RaceState.LOBBY, RaceState.COUNTDOWN):
            # A daily room's seat is an attempt at the day's deal, taken again as one.
            return DailyRace() if self.daily else JoinRace(race=snapshot.race)
        return None

    def seat(self, racer_id: str) -> None:
        """Race as ``racer_id`` in the current race. A tournament seats its entrants itself,
        so no join answer names them: the client knows its id from the tournament."""
        if self.snapshot is not None and self.you is None:
            self.you = racer_id
            self.mirror = RacerMirror(self.snapshot.options.ruleset)

    def names(self) -> dict[str, str]:
        """Racer names by id."""
        if self.snapshot is None:
            return {}
        return {racer.racer: racer.name for racer in self.snapshot.racers}

    def apply(self, message: ServerMessage | RatingChanged) -> None:
        """Take in one message from the server (messages of other races are ignored)."""
        if isinstance(message, RaceSnapshot):
            self._apply_snapshot(message)
        elif getattr(message, "race", None) != self.race:
            return
        elif isinstance(message, Progress):
            self.progress.update((entry.racer, entry) for entry in message.racers)
            self._own_end_from_progress()
        elif isinstance(message, CardToPlace) and self.mirror is not None:
            self.mirror.receive_card(message)
        elif isinstance(message, MovePlaced) and self.mirror is not None:
            self.last_flips = self.mirror.receive_placed(message)
        elif isinstance(message, Boards):
            self.boards.update((board.racer, board) for board in message.boards)
            self.fog_line = message.fog_line
            self._restore_own_board()
        elif isinstance(message, RaceFinished):
            self.finished = message
        elif isinstance(message, DailyResult):
            self.sealed = message
        elif isinstance(message, RacePar):
            self.par = message
        elif isinstance(message, RatingChanged):
            self.rating = message

    def _restore_own_board(self) -> None:
        """On a resume, our own board rebuilds a mirror that has seen none of our moves."""
        mirror, own = self.mirror, self.boards.get(self.you) if self.you is not None else None
        if mirror is not None and own is not None and own.shown and not mirror.moves:
            mirror.restore(own)
            self._own_end_from_progress()

    def _own_end_from_progress(self) -> None:
        """A resignation or the time limit ends our game with no ``placed`` to say so (and
        a client that resumes a game already over is sent none): our progress line does,
        and the race screen then stops offering a card."""
        mirror = self.mirror
        entry = self.progress.get(self.you) if self.you is not None else None
        if mirror is None or entry is None or mirror.status in FINISHED_STATUSES:
            return
        if entry.status in FINISHED_STATUSES:
            mirror.status = entry.status

    def _apply_snapshot(self, snapshot: RaceSnapshot) -> None:
        if snapshot.race != self.race:
            self.commitment, self.progress, self.boards = snapshot.commitment, {}, {}
            self.mirror, self.finished, self.you, self.par = None, None, None, None
            self.rating = None
            self.sealed = None
        if snapshot.you is not None:
            self.you = snapshot.you
        self.snapshot = snapshot
        self.progress.update((entry.racer, entry) for entry in snapshot.progress)
        if self.you is not None and self.mirror is None:
            self.mirror = RacerMirror(snapshot.options.ruleset)

    def away_notes(self, since_snapshot: float) -> dict[str, str]:
        """What to say of racers away mid-race, by racer id: ``disconnected, out in 0:42``
        (the time left of the grace the server gives them to come back), the latest
        snapshot being ``since_snapshot`` seconds old."""
        snapshot = self.snapshot
        if snapshot is None or self.finished is not None:
            return {}
        notes = {}
        for racer in snapshot.racers:
            entry = self.progress.get(racer.racer)
            if racer.out_at is None or (entry is not None and entry.status in FINISHED_STATUSES):
                continue
            left = max(0, math.ceil((racer.out_at - snapshot.server_time) / 1000 - since_snapshot))
            notes[racer.racer] = f"disconnected, out in {left // 60}:{left % 60:02d}"
        return notes

    def leaderboard(self) -> list[ProgressEntry]:
        """Every racer, best first: the official standings once the race has finished,
        until then the standings rule applied to the progress so far.
        """
        if self.finished is not None:
            order = [s.racer for s in self.finished.standings if s.racer in self.progress]
            return [self.progress[racer] for racer in order]
        return rank_progress(self.progress.values())

    def verify(self) -> Verification:
        """Check the result: the seed against the commitment seen before the start, and
        every racer's claimed result against a replay of its moves on a fresh deal.
        """
        finished = self.finished
        if finished is None:
            return Verification(("the race has not finished",))
        try:
            record = finished.to_result()
        except ValueError as error:
            return Verification((str(error),))
        # Check against the commitment published before the start, not the one sent with
        # the seed: a server could otherwise reveal any seed with a matching commitment.
        return verify_result(replace(record, commitment=self.commitment or ""))
