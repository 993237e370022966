"""Who races where, across the nodes of a cluster: the store's ``seats`` table.

On one server a session is tied to one race at a time: from its seat in a race's lobby
until its own game there is over (:meth:`server.race.Race.is_busy`), and a ``quick_race``,
``create_race``, ``join_race`` or ``daily_race`` meanwhile is refused with
``already_joined``. In a cluster the races run on many nodes, each seeing only its own,
so the rule is kept by the store: a row of ``seats`` (one per session, its primary key)
says which race holds the session. The node running a race writes the row when the
session takes a seat and deletes it when the session is tied no more, as records of the
race (:class:`SeatTaken`, :class:`SeatLeft`), in the race's own transactions and under
its lease's fence: a move costs no statement of its own, a node that lost the race can
write nothing of it, and a race taken over is taken with its rows as they were
committed. The socket tier of the session's node reads the row before it sends a join
(:meth:`~server.postgres.PostgresStore.seat_of`).

One process keeps no such table: its race tier sees every seat (:class:`SeatKeeper` is
used only by a cluster's nodes).
"""

from __future__ import annotations

from dataclasses import dataclass

from server import race as core
from server.journal import Statement


@dataclass(frozen=True, slots=True)
class SeatTaken:
    """Session ``player_id`` is tied to race ``race_id`` from now on (seated)."""

    player_id: str
    race_id: str

    @property
    def fenced_by(self) -> str:
        """The race, whose lease its writer must hold."""
        return self.race_id

    def statements(self) -> list[Statement]:
        """One upsert: a session has one row."""
        return [(
            "INSERT INTO seats (player_id, race_id) VALUES (?, ?)"
            " ON CONFLICT (player_id) DO UPDATE SET race_id = excluded.race_id",
            (self.player_id, self.race_id),
        )]


@dataclass(frozen=True, slots=True)
class SeatLeft:
    """Session ``player_id`` is no longer tied to race ``race_id`` (it left the race's
    lobby, its own game is over, or the race is)."""

    player_id: str
    race_id: str

    @property
    def fenced_by(self) -> str:
        """The race, whose lease its writer must hold."""
        return self.race_id

    def statements(self) -> list[Statement]:
        """Its row goes, if it is still this race's."""
        return [(
            "DELETE FROM seats WHERE player_id = ? AND race_id = ?",
            (self.player_id, self.race_id),
        )]


class SeatKeeper:
    """The racers one race ties (:meth:`~server.race.Race.is_busy`), and the records
    that keep the ``seats`` table in step as they come and go.

    Only the racer a command names can change, but for commands that move the whole race
    (its clock, its start, its countdown): those are looked at for every racer tied.

    >>> race = core.Race("K7QX2M9P", "seed", core.RaceOptions(min_racers=1))
    >>> keeper = SeatKeeper(race)
    >>> _ = race.apply(core.Join("p-1", "ann", False), 0.0)
    >>> keeper.changes(race, core.Join("p-1", "ann", False))
    [SeatTaken(player_id='p-1', race_id='K7QX2M9P')]
    >>> _ = race.apply(core.Leave("p-1"), 1.0)
    >>> keeper.changes(race, core.Leave("p-1"))
    [SeatLeft(player_id='p-1', race_id='K7QX2M9P')]
    """

    __slots__ = ("_race_id", "_tied")

    def __init__(self, race: core.Race) -> None:
        self._race_id = race.race_id
        self._tied = {racer for racer in race.racer_ids if race.is_busy(racer)}
        """As stored: rows the race has written and not deleted."""

    def changes(self, race: core.Race, command: core.Command) -> list[SeatTaken | SeatLeft]:
        """The records of what ``command`` (just applied to ``race``) changed."""
        records: list[SeatTaken | SeatLeft] = []
        named: str | None = getattr(command, "racer_id", None)
        if isinstance(command, core.Join) and named not in self._tied and race.is_busy(
            command.racer_id
        ):
            self._tied.add(command.racer_id)
            records.append(SeatTaken(command.racer_id, self._race_id))
        if race.phase is core.Phase.FINISHED or not isinstance(
            command, core.Join | core.Leave | core.SetReady | core.Place | core.Resign
            | core.Disconnect | core.Reconnect
        ):
            looked_at = list(self._tied)
        else:
            looked_at = [named] if named in self._tied else []
        for racer in looked_at:
            if racer is not None and not race.is_busy(racer):
                self._tied.discard(racer)
                records.append(SeatLeft(racer, self._race_id))
        return records
