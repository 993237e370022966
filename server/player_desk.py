"""The players' desk: claims, leaderboards and profiles, answered from the store.

What these requests need is in the store, not in any race, so the node whose socket
tier holds the connection answers them itself, from the store every node shares
(:mod:`server.player_store`): nothing crosses the bus, and nothing here runs on a move's
path. Each answer waits for its job while the connection holds its later messages, so
answers keep the order of requests.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from typing import Any, NamedTuple

from protocol import ErrorCode, ProtocolError, Role, millis
from protocol.messages import RacerStatus
from protocol.players import (
    COUNT,
    PROFILE_HISTORY,
    PROFILE_RACES,
    PROVISIONAL_GAMES,
    ClaimName,
    GetLeaderboard,
    GetProfile,
    Leaderboard,
    LeaderboardEntry,
    PlayerKey,
    PlayerServerMessage,
    PoolRecord,
    Profile,
    RecentRace,
)
from protocol.schema import show
from server.bus import ClientRequest
from server.expiry import SessionRecords
from server.journal_file import JournalRefused
from server.logs import failure, log_event
from server.player_store import (
    BoardKey,
    BoardLine,
    ClaimedPlayer,
    JobFactory,
    PlayerRecordView,
    claim_name,
    key_digest,
    leaderboard,
    new_player_key,
    profile,
    profile_named,
)
from server.ratings import pool_of, ruleset_of, shown
from server.sessions import Session
from server.store import StoreError

#: The players' requests this desk answers.
PLAYER_REQUESTS = (ClaimName, GetLeaderboard, GetProfile)


class Refusal(Exception):
    """A request refused while it waited for the store: answered with ``error``, the
    connection left open."""

    def __init__(self, error: ProtocolError) -> None:
        super().__init__(error.message)
        self.error = error


def refusal(code: ErrorCode, text: str, message: ClientRequest) -> Refusal:
    """The refusal of ``message`` with ``code`` and ``text``."""
    return Refusal(ProtocolError(code, text, in_reply_to=message.TYPE, reply_to=message.id))


class PlayerDesk:
    """Answers the players' requests of one node's sessions."""

    def __init__(self, store: SessionRecords, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock

    async def job(self, job: JobFactory, message: ClientRequest, writes: bool = False) -> Any:
        """Run a job of :mod:`server.player_store`; a store that cannot run it now makes
        it a :class:`Refusal` (``server_busy``)."""
        try:
            return await self._store.run(job, writes=writes)
        except (StoreError, JournalRefused) as error:
            log_event("store_unavailable", logging.ERROR, error=failure(error))
            raise refusal(
                ErrorCode.SERVER_BUSY,
                "the server cannot reach its store just now: try again in a moment",
                message,
            ) from None

    async def answer(self, session: Session, message: ClientRequest) -> PlayerServerMessage:
        """The answer to one of :data:`PLAYER_REQUESTS`; raises :class:`Refusal`."""
        if isinstance(message, ClaimName):
            return await self._claim(session, message)
        if isinstance(message, GetLeaderboard):
            return await self._leaderboard(message)
        assert isinstance(message, GetProfile)
        return await self._profile(message)

    async def _claim(self, session: Session, message: ClaimName) -> PlayerKey:
        """Claim the session's name for a new player: its key, sent once (the store
        keeps only the key's digest)."""
        if session.role is not Role.PLAYER:
            raise refusal(ErrorCode.WRONG_ROLE,
                          "a spectator cannot claim a name: say hello as a player", message)
        if session.player is not None:
            raise refusal(
                ErrorCode.ALREADY_CLAIMED,
                f"this session plays as the claimed player {session.player} already",
                message,
            )
        key = new_player_key()
        claim = functools.partial(
            claim_name, session.session_id, session.name, session.bot, key_digest(key),
            self._clock(),
        )
        claimed: ClaimedPlayer | None = await self.job(claim, message, writes=True)
        if claimed is None:
            raise refusal(
                ErrorCode.NAME_TAKEN,
                f"a player has claimed a name that looks the same as {show(session.name)}"
                " (ignoring case and look-alike letters): say hello under another name to "
                "claim one",
                message,
            )
        session.plays_as(claimed.player_id)
        log_event("name_claimed", session=session.session_id, player=claimed.player_id,
                  name=claimed.name)
        return PlayerKey(player=claimed.player_id, name=claimed.name, key=key,
                         reply_to=message.id)

    async def _leaderboard(self, message: GetLeaderboard) -> Leaderboard:
        board = message.board.value
        after = None if message.after is None else read_cursor(board, message.after, message)
        before = (0 if after is None else after.rank) + message.offset
        read = functools.partial(
            leaderboard, pool_of(message.ruleset), board, message.bots,
            None if after is None else after.key, message.offset, message.limit,
        )
        total, lines = await self.job(read, message)
        last = before + len(lines)
        return Leaderboard(
            board=message.board,
            ruleset=message.ruleset,
            bots=message.bots,
            offset=before,
            total=total,
            entries=tuple(
                LeaderboardEntry(
                    rank=before + number,
                    player=line.player_id,
                    name=line.name,
                    bot=line.bot,
                    rating=shown(line.ordinal),
                    provisional=line.games < PROVISIONAL_GAMES,
                    games=line.games,
                    wins=line.wins,
                    best_score=line.best_score,
                )
                for number, line in enumerate(lines, start=1)
            ),
            next=write_cursor(board, last, lines[-1])
            if len(lines) == message.limit and last < total else None,
            reply_to=message.id,
        )

    async def _profile(self, message: GetProfile) -> Profile:
        if message.name is not None and message.player is None:
            read = functools.partial(profile_named, message.name, PROFILE_HISTORY,
                                     PROFILE_RACES)
            missing = f"no claimed player has a name that looks like {show(message.name)}"
        elif message.player is not None and message.name is None:
            read = functools.partial(profile, message.player, PROFILE_HISTORY, PROFILE_RACES)
            missing = f"no claimed player has the id {show(message.player)}"
        else:
            raise refusal(ErrorCode.BAD_MESSAGE,
                          "get_profile needs exactly one of player and name", message)
        found: PlayerRecordView | None = await self.job(read, message)
        if found is None:
            raise refusal(ErrorCode.PLAYER_NOT_FOUND, missing, message)
        return Profile(
            player=found.player.player_id,
            name=found.player.name,
            bot=found.player.bot,
            pools=tuple(
                PoolRecord(
                    ruleset=ruleset_of(line.pool),
                    rating=shown(line.skill.ordinal),
                    provisional=line.games < PROVISIONAL_GAMES,
                    games=line.games,
                    wins=line.wins,
                    won_games=line.won_games,
                    best_score=line.best_score,
                    stock_left=line.stock_left,
                    history=tuple(shown(point) for point in line.history),
                )
                for line in found.pools
            ),
            recent=tuple(
                RecentRace(
                    race=race.race_id,
                    ended_at=millis(race.at),
                    ruleset=ruleset_of(race.pool),
                    place=race.place,
                    racers=race.racers,
                    status=RacerStatus(race.outcome),
                    score=race.score,
                    rated=race.rated,
                    rating=None if race.ordinal is None else shown(race.ordinal),
                )
                for race in found.recent
            ),
            reply_to=message.id,
        )


# ---------------------------------------------------------------- cursors


class Cursor(NamedTuple):
    """A leaderboard's cursor, read: the rank of the line a page ended with, and that
    line's key on its board."""

    rank: int
    key: BoardKey


#: The separator of a cursor's parts (none of the rank and value can hold it).
_CURSOR_PARTS = "_"


def write_cursor(board: str, rank: int, line: BoardLine) -> str:
    """The cursor of the page after ``line``, ranked ``rank`` on ``board``: the rank,
    the board's value of the line (a rating exactly, as Python writes a float) and its
    player id. Clients send it back as it is; what it holds is for the server alone.

    >>> line = BoardLine("u-ab", "Ann", False, 12.5, 3, 1, None)
    >>> write_cursor("rating", 40, line)
    '40_12.5_u-ab'
    """
    key = BoardKey.of(board, line)
    return _CURSOR_PARTS.join((str(rank), repr(key.value), key.player_id))


def read_cursor(board: str, text: str, message: ClientRequest) -> Cursor:
    """A cursor of ``board`` from :func:`write_cursor`; anything else (from another
    board, or not a cursor at all) is a :class:`Refusal` (``bad_message``).

    >>> read_cursor("rating", "40_12.5_u-ab", GetLeaderboard())
    Cursor(rank=40, key=BoardKey(value=12.5, player_id='u-ab'))
    """
    try:
        rank_text, value_text, player_id = text.split(_CURSOR_PARTS, 2)
        rank = int(rank_text)
        value = float(value_text) if board == "rating" else int(value_text)
        if not (0 < rank <= COUNT.high and math.isfinite(value) and abs(value) <= COUNT.high
                and player_id):
            raise ValueError(text)
    except ValueError:
        raise refusal(ErrorCode.BAD_MESSAGE, "get_leaderboard.after is not a cursor of this "
                      "board: send a leaderboard's next as it came", message) from None
    return Cursor(rank, BoardKey(value, player_id))
