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
from collections.abc import Callable
from typing import Any

from protocol import ErrorCode, ProtocolError, Role, millis
from protocol.messages import RacerStatus
from protocol.players import (
    PROFILE_HISTORY,
    PROFILE_RACES,
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
    ClaimedPlayer,
    JobFactory,
    PlayerRecordView,
    claim_name,
    key_digest,
    leaderboard,
    new_player_key,
    profile,
)
from server.ratings import PROVISIONAL_GAMES, pool_of, ruleset_of, shown
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
        read = functools.partial(
            leaderboard, pool_of(message.ruleset), message.board.value, message.bots,
            message.offset, message.limit,
        )
        total, lines = await self.job(read, message)
        return Leaderboard(
            board=message.board,
            ruleset=message.ruleset,
            bots=message.bots,
            offset=message.offset,
            total=total,
            entries=tuple(
                LeaderboardEntry(
                    rank=message.offset + number,
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
            reply_to=message.id,
        )

    async def _profile(self, message: GetProfile) -> Profile:
        read = functools.partial(profile, message.player, PROFILE_HISTORY, PROFILE_RACES)
        found: PlayerRecordView | None = await self.job(read, message)
        if found is None:
            raise refusal(ErrorCode.PLAYER_NOT_FOUND,
                          f"no claimed player has the id {show(message.player)}", message)
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
