"""Ratings: openskill's Plackett-Luce model over a race's standings. Pure: no I/O.

A rated race rates the claimed players in it, in the **pool** of its ruleset (one pool
per variant of the rules: a rating says how one plays *those* rules). The maths is the
library's (``openskill.models.PlackettLuce``, a Bayesian model for races of any size):
each player is a team of one, ranked by the race's standings, and :func:`rate` hands the
ratings before and the ranks to the model, nothing more. What a rating shows is the
model's conservative estimate, its ordinal (``mu - 3 sigma``): a newcomer starts at 0 and
rises as the model grows sure of it.

Two rules of the race are ours, not the library's:

- **Leaving counts as last.** A racer who resigned (by ``resign``, or counted out once
  its grace to come back ran out) is ranked below every racer who did not, tied with the
  others who left, whatever its cards: a race is not lost less by walking away from it.
- **Ties stand.** Racers equal on the standings rule (:func:`protocol.result.standing_key`)
  share a rank.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from openskill.models import PlackettLuce

from engine import Ruleset
from protocol.result import RacerOutcome, RacerResult, standing_key

_MODEL = PlackettLuce()


def pool_of(ruleset: Ruleset) -> str:
    """The pool of a ruleset: its rules, as one word.

    >>> pool_of(Ruleset())
    'g4-c4-d4-edge'
    """
    rules = ruleset.to_dict()
    return (
        f"g{rules['grid_size']}-c{rules['pile_capacity']}-d{rules['face_down_limit']}"
        f"-{rules['adjacency']}"
    )


@dataclass(frozen=True, slots=True)
class Skill:
    """A player's rating in one pool: the model's belief (``mu``, ``sigma``)."""

    mu: float
    sigma: float

    @property
    def ordinal(self) -> float:
        """The conservative rating shown: ``mu - 3 sigma``."""
        return self.mu - 3 * self.sigma


def new_skill() -> Skill:
    """The rating of a player new to a pool (the model's prior)."""
    prior = _MODEL.rating()
    return Skill(prior.mu, prior.sigma)


def rank_key(entry: RacerResult) -> tuple[object, ...]:
    """What orders racers for a rating (equal keys: a tie): anyone who left last."""
    if entry.outcome is RacerOutcome.RESIGNED:
        return (1,)
    return (0, *standing_key(entry))


def ranks(entries: Sequence[RacerResult]) -> list[int]:
    """The rank of each entry (1 best; equal keys share one), in the entries' order.

    >>> from protocol.result import RacerResult as R, RacerOutcome as O
    >>> won = R("a", "a", False, O.WON, 3, 10.0, 37, 16, 0, ())
    >>> left = R("b", "b", False, O.RESIGNED, None, 5.0, 30, 15, 1, ())
    >>> lost = R("c", "c", False, O.LOST, None, 9.0, 20, 3, 5, ())
    >>> ranks([won, left, lost])
    [1, 3, 2]
    """
    keys = sorted({rank_key(entry) for entry in entries})
    place = {key: number for number, key in enumerate(keys, start=1)}
    return [place[rank_key(entry)] for entry in entries]


def rate(before: Sequence[Skill], ranks_of: Sequence[int]) -> list[Skill]:
    """The ratings after a race of players with ratings ``before`` who took ranks
    ``ranks_of`` (in the same order): the library's Plackett-Luce update."""
    teams = [[_MODEL.rating(mu=skill.mu, sigma=skill.sigma)] for skill in before]
    after = _MODEL.rate(teams, ranks=list(ranks_of))
    return [Skill(team[0].mu, team[0].sigma) for team in after]


def shown(ordinal: float) -> int:
    """A rating as the protocol sends it: the ordinal in hundredths, rounded.

    >>> shown(12.3456)
    1235
    """
    return round(ordinal * 100)


def ruleset_of(pool: str) -> Ruleset:
    """The ruleset of a pool (the inverse of :func:`pool_of`).

    >>> ruleset_of(pool_of(Ruleset())) == Ruleset()
    True
    """
    grid, capacity, face_down, adjacency = pool.split("-")
    return Ruleset.from_dict({
        "grid_size": int(grid[1:]),
        "pile_capacity": int(capacity[1:]),
        "face_down_limit": int(face_down[1:]),
        "adjacency": adjacency,
    })
