"""Players' records as the terminal client words them: ratings, leaderboard lines, a
profile's pools and races. Pure: what the lobby's leaderboard and the profile screen show.

Ratings travel in hundredths of the model's conservative estimate
(:data:`protocol.players.RATING`); a provisional one (fewer than 10 rated races in the
pool) is marked with a ``?``, and a bot's name always with ``[bot]``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from client.wording import plural
from protocol.players import (
    PROVISIONAL_GAMES,
    Board,
    LeaderboardEntry,
    PoolRecord,
    RatingChanged,
    RecentRace,
)

#: How each leaderboard is titled, in the order the lobby's key cycles through them.
BOARD_TITLES = {
    Board.RATING: "rating",
    Board.WINS: "most wins",
    Board.BEST_SCORE: "best scores",
}

PROVISIONAL_NOTE = f"provisional: ? until {PROVISIONAL_GAMES} rated races"
"""What the ``?`` of a provisional rating means, where a rating is shown on its own."""

WATCH_COMMAND = "foursquare watch {race}"
"""The command that replays a finished race (its id in ``{race}``)."""


def rating_text(rating: int, provisional: bool) -> str:
    """A rating as shown: the ordinal with two decimals, ``?`` while provisional.

    >>> rating_text(1412, False), rating_text(-35, True)
    ('14.12', '-0.35?')
    """
    sign = "-" if rating < 0 else ""
    whole, hundredths = divmod(abs(rating), 100)
    return f"{sign}{whole}.{hundredths:02}" + ("?" if provisional else "")


def rating_change_text(before: int, after: int) -> str:
    """How much a rating moved, signed, in :func:`rating_text`'s units.

    >>> rating_change_text(0, 344), rating_change_text(512, 329), rating_change_text(7, 7)
    ('+3.44', '-1.83', '+0.00')
    """
    change = after - before
    return ("-" if change < 0 else "+") + rating_text(abs(change), False)


def rating_line(change: RatingChanged) -> str:
    """The racer's new rating after a rated race, what the race changed and how many
    rated races it stands on (and what its ``?`` means, while provisional).

    >>> from engine import Ruleset
    >>> rating_line(RatingChanged(race="r1", ruleset=Ruleset(), before=0, rating=344,
    ...                           provisional=True, games=1))
    'Your rating: 3.44? (+3.44), after 1 rated race · provisional: ? until 10 rated races'
    """
    line = (
        f"Your rating: {rating_text(change.rating, change.provisional)} "
        f"({rating_change_text(change.before, change.rating)}), "
        f"after {plural(change.games, 'rated race')}"
    )
    return line + (f" · {PROVISIONAL_NOTE}" if change.provisional else "")


def player_name(name: str, bot: bool) -> str:
    """A player's name, a bot's marked.

    >>> player_name("Deep Blue", True)
    'Deep Blue [bot]'
    """
    return f"{name} [bot]" if bot else name


def next_board(board: Board) -> Board:
    """The leaderboard after ``board`` in :data:`BOARD_TITLES`' order (then the first).

    >>> next_board(Board.BEST_SCORE)
    <Board.RATING: 'rating'>
    """
    boards = list(BOARD_TITLES)
    return boards[(boards.index(board) + 1) % len(boards)]


def board_row(entry: LeaderboardEntry) -> tuple[str, ...]:
    """A leaderboard line's cells: rank, name, rating, games, wins, best score."""
    return (
        str(entry.rank),
        player_name(entry.name, entry.bot),
        rating_text(entry.rating, entry.provisional),
        str(entry.games),
        str(entry.wins),
        "-" if entry.best_score is None else str(entry.best_score),
    )


def average_stock_left(pool: PoolRecord) -> str:
    """The stock left on average over the rated games won, one decimal (``-`` before
    the first game won).

    >>> from engine import Ruleset
    >>> record = PoolRecord(ruleset=Ruleset(), rating=0, provisional=True, games=5,
    ...                     wins=2, won_games=3, stock_left=10, history=())
    >>> average_stock_left(record)
    '3.3'
    """
    if pool.won_games == 0:
        return "-"
    return f"{pool.stock_left / pool.won_games:.1f}"


def pool_row(pool: PoolRecord) -> tuple[str, ...]:
    """A pool's cells: rules, rating, games, wins, games won, best score, average stock
    left."""
    return (
        pool.ruleset.notation(),
        rating_text(pool.rating, pool.provisional),
        str(pool.games),
        str(pool.wins),
        str(pool.won_games),
        "-" if pool.best_score is None else str(pool.best_score),
        average_stock_left(pool),
    )


def race_row(race: RecentRace) -> tuple[str, ...]:
    """A recent race's cells: the race id, when it ended (UTC), the place, the outcome,
    the score, the rating after it (``unrated`` when it was not) and how to watch it."""
    ended = datetime.fromtimestamp(race.ended_at / 1000, UTC).strftime("%Y-%m-%d %H:%M")
    return (
        race.race,
        ended,
        f"{race.place}/{race.racers}",
        race.status.value,
        "-" if race.score is None else str(race.score),
        "unrated" if race.rating is None else rating_text(race.rating, False),
        WATCH_COMMAND.format(race=race.race),
    )
