"""Who races where, across the nodes of a cluster: the store's ``seats`` table.

On one server a session is tied to one race at a time: from its seat in a race's lobby
until its own game there is over (:meth:`server.race.Race.is_busy`), and a ``quick_race``,
``create_race``, ``join_race`` or ``daily_race`` meanwhile is refused with
``already_joined``. In a cluster the races run on many nodes, each seeing only its own,
so the rule is kept by the store: a row of ``seats`` (one per session, its primary key)
says which race holds the session. The node running a race writes the row when the
session takes a seat (:class:`SeatTaken`), marks it not ``busy`` when the session's own
game is over while the race runs on (:class:`SeatFreed`), and deletes it when the
session leaves the race's lobby or the race is over (:class:`SeatLeft`). These are
records of the race, in its own transactions and under its lease's fence: a move costs
no statement of its own, a node that lost the race can write nothing of it, and a race
taken over is taken with its rows as they were committed. The socket tier of the
session's node reads the row before it sends a join
(:meth:`~server.postgres.PostgresStore.seat_of`: a ``busy`` row only), and the expiry
reads it before it forgets an idle session (:meth:`~server.postgres.PostgresStore.held`:
any row of a race not over). So, as on one server, a racer whose own game is over may
race elsewhere (its row then names the new race), and is kept until the race it
raced in last is over.

One process keeps no such table: its race tier sees every seat (:class:`SeatKeeper` is
used only by a cluster's nodes).
"""

from __future__ import annotations

from dataclasses import dataclass

from server import race as core
from server.journal import Statement


@dataclass(frozen=True, slots=True)
class _SeatRecord:
    """A change to session ``player_id``'s row for race ``race_id``, written by the race's
    node under the race's lease."""

    player_id: str
    race_id: str

    @property
    def fenced_by(self) -> str:
        """The race, whose lease its writer must hold."""
        return self.race_id


@dataclass(frozen=True, slots=True)
class SeatTaken(_SeatRecord):
    """Session ``player_id`` is tied to race ``race_id`` from now on (seated)."""

    def statements(self) -> list[Statement]:
        """One upsert: a session has one row."""
        return [(
            "INSERT INTO seats (player_id, race_id, busy) VALUES (?, ?, true)"
            " ON CONFLICT (player_id) DO UPDATE SET race_id = excluded.race_id, busy = true",
            (self.player_id, self.race_id),
        )]


@dataclass(frozen=True, slots=True)
class SeatFreed(_SeatRecord):
    """Session ``player_id``'s own game in race ``race_id`` is over, the race is not: it
    may race elsewhere, and is still kept by the expiry until the race is over."""

    def statements(self) -> list[Statement]:
        """Its row stays, not busy, if it is still this race's."""
        return [(
            "UPDATE seats SET busy = false WHERE player_id = ? AND race_id = ?",
            (self.player_id, self.race_id),
        )]


@dataclass(frozen=True, slots=True)
class SeatLeft(_SeatRecord):
    """Session ``player_id`` is no longer in race ``race_id`` (it left the race's lobby,
    or the race is over)."""

    def statements(self) -> list[Statement]:
        """Its row goes, if it is still this race's."""
        return [(
            "DELETE FROM seats WHERE player_id = ? AND race_id = ?",
            (self.player_id, self.race_id),
        )]


#: A racer's row as stored: busy (:class:`SeatTaken`), or kept after its own game
#: (:class:`SeatFreed`).
_BUSY, _KEPT = True, False

SeatRecord = SeatTaken | SeatFreed | SeatLeft
"""What a :class:`SeatKeeper` writes."""


class SeatKeeper:
    """The racers one race holds, each busy (:meth:`~server.race.Race.is_busy`) or kept
    after its own game until the race is over, and the records that keep the ``seats``
    table in step as they change.

    Only the racer a command names can change, but for commands that move the whole race
    (its clock, its start, its countdown): those are looked at for every racer held.

    >>> race = core.Race("K7QX2M9P", "seed", core.RaceOptions(min_racers=1))
    >>> keeper = SeatKeeper(race)
    >>> _ = race.apply(core.Join("p-1", "ann", False), 0.0)
    >>> keeper.changes(race, core.Join("p-1", "ann", False))
    [SeatTaken(player_id='p-1', race_id='K7QX2M9P')]
    >>> _ = race.apply(core.Leave("p-1"), 1.0)
    >>> keeper.changes(race, core.Leave("p-1"))
    [SeatLeft(player_id='p-1', race_id='K7QX2M9P')]
    """

    __slots__ = ("_race_id", "_rows")

    def __init__(self, race: core.Race) -> None:
        self._race_id = race.race_id
        self._rows: dict[str, bool] = {}
        """As stored: each racer's row the race has written and not deleted, busy or kept."""
        for racer in race.racer_ids:
            state = _state(race, racer)
            if state is not None:
                self._rows[racer] = state

    def changes(self, race: core.Race, command: core.Command) -> list[SeatRecord]:
        """The records of what ``command`` (just applied to ``race``) changed."""
        named: str | None = getattr(command, "racer_id", None)
        if race.phase is core.Phase.FINISHED or not isinstance(
            command, core.Join | core.Leave | core.SetReady | core.Place | core.Resign
            | core.Disconnect | core.Reconnect
        ):
            looked_at = list(self._rows)
            if named is not None and named not in self._rows:
                looked_at.append(named)
        else:
            looked_at = [named] if named is not None else []
        records: list[SeatRecord] = []
        for racer in looked_at:
            was, now = self._rows.get(racer), _state(race, racer)
            if was is now:
                continue
            if now is None:
                del self._rows[racer]
                records.append(SeatLeft(racer, self._race_id))
                continue
            self._rows[racer] = now
            record = SeatTaken if now is _BUSY else SeatFreed
            records.append(record(racer, self._race_id))
        return records


def _state(race: core.Race, racer: str) -> bool | None:
    """``racer``'s row in ``race`` now: busy, kept (its own game over, the race not), or
    none."""
    if race.is_busy(racer):
        return _BUSY
    if race.phase is not core.Phase.FINISHED and race.has_racer(racer):
        return _KEPT
    return None
