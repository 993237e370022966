"""Finished races the server no longer keeps, read back from the store to be watched
again.

A race is kept in memory for a few minutes after its finish; after that, ``spectate``
is answered with its stored result (the revealed seed and every racer's moves, with
their times), from which a client replays it. Only a finished race has a stored result,
so nothing of a race still running is ever read here. A race that did not allow
spectators is not shown after its finish either: its racers have its result already.

The read is a job (:mod:`server.player_store`'s form: SQL both stores take) that the
store runs off the event loop.

>>> job = finished_race("K7Q2MX")
>>> next(job)[1]
('K7Q2MX',)
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from protocol.result import RaceResult
from server.player_store import Job
from server.race import RaceOptions


@dataclass(frozen=True, slots=True)
class FinishedRace:
    """A finished race's stored result, and whether spectators may watch it."""

    result: RaceResult
    spectators: bool


def finished_race(race_id: str) -> Job:
    """The job reading race ``race_id``'s result and options: a :class:`FinishedRace`,
    or ``None`` when the store holds no result for it (no such race, or not finished)."""
    rows = yield (
        "SELECT results.result, races.options FROM results"
        " JOIN races ON races.race_id = results.race_id WHERE results.race_id = ?",
        (race_id,),
    )
    if not rows:
        return None
    result, options = rows[0]
    return FinishedRace(
        RaceResult.from_json(result), RaceOptions.from_dict(json.loads(options)).spectators
    )
