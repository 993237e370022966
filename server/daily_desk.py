"""The daily desk: ``get_daily`` answered from the store, like the players' requests.

A day's board is in the store (:mod:`server.daily_store`), not in any race, so the node
whose socket tier holds the connection reads it itself. What the answer shows depends on
the time (the server's clock): before the day's reveal, the commitment and the results
without their moves; from the reveal on, the seed, every line's moves and the par.
Today's deal is dealt by the first request for it, whichever it is, so its commitment is
published before anyone races it.
"""

from __future__ import annotations

import functools

from protocol import ErrorCode, millis
from protocol.daily import Daily, DailyEntry, DailyPar, GetDaily
from protocol.messages import RacerStatus
from protocol.schema import show
from server.config import ServerConfig
from server.daily import daily_rules, day_of, entrant_of, is_revealed, parse_day, reveal_at
from server.daily_store import AttemptLine, DailyDeal, daily_board, deal_of_day, read_deal
from server.player_desk import PlayerDesk, refusal
from server.sessions import Session

#: The daily requests this desk answers.
DAILY_REQUESTS = (GetDaily,)


class DailyDesk:
    """Answers ``get_daily`` for one node's sessions (through the players' desk's jobs)."""

    def __init__(self, players: PlayerDesk, config: ServerConfig) -> None:
        self._players = players
        self._config = config
        self._rules = daily_rules(config)

    async def answer(self, session: Session, message: GetDaily) -> Daily:
        """The day's board; raises :class:`~server.player_desk.Refusal`."""
        now = self._config.clock()
        today = day_of(now)
        day = today if message.day is None else message.day
        if parse_day(day) is None or day > today:
            raise refusal(ErrorCode.DAY_NOT_FOUND,
                          f"there is no daily deal of {show(day)} (today is {today})", message)
        deal: DailyDeal | None = await self._players.job(
            functools.partial(read_deal, day), message
        )
        if deal is None and day == today:  # dealt now: its commitment is public from here
            deal = await self._players.job(functools.partial(
                deal_of_day, day, self._config.seed_source(), self._rules.ruleset, now,
            ), message, writes=True)
        if deal is None:
            raise refusal(ErrorCode.DAY_NOT_FOUND,
                          f"no daily deal was dealt on {day}", message)
        revealed = is_revealed(day, now, self._rules)
        read = functools.partial(
            daily_board, day, message.bots, message.offset, message.limit,
            entrant_of(session.player, session.session_id),
        )
        total, lines, own = await self._players.job(read, message)
        par = deal.par if revealed else None
        return Daily(
            day=day,
            commitment=deal.commitment,
            ruleset=deal.ruleset,
            reveal_at=millis(reveal_at(day, self._rules)),
            revealed=revealed,
            seed=deal.seed if revealed else None,
            par=None if par is None else DailyPar(
                score=par.score, proven=par.proven, cards_used=par.cards_used,
                at_most=par.at_most,
            ),
            bots=message.bots,
            offset=message.offset,
            total=total,
            entries=tuple(_entry(line, revealed) for line in lines),
            you=None if own is None else _entry(own, revealed),
            reply_to=message.id,
        )


def _entry(line: AttemptLine, revealed: bool) -> DailyEntry:
    """A board line as sent: its moves only once the day is revealed."""
    return DailyEntry(
        place=line.place,
        player=line.player_id,
        name=line.name,
        bot=line.bot,
        status=RacerStatus(line.outcome.value),
        score=line.score,
        cards_played=line.cards_played,
        face_up=line.face_up,
        face_down=line.face_down,
        finish_ms=line.finish_ms,
        race=line.race_id,
        moves=line.moves if revealed else (),
    )
