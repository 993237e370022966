"""The ruleset: the few numbers a host may change. Defaults are the published game."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Adjacency(Enum):
    """Which empty positions next to a pile may take a new pile."""

    EDGE = "edge"
    """Orthogonal neighbours only (the published game)."""
    ANY = "any"
    """Orthogonal and diagonal neighbours."""


@dataclass(frozen=True, slots=True)
class Ruleset:
    """The rules of one game.

    >>> Ruleset()
    Ruleset(grid_size=4, pile_capacity=4, face_down_limit=4, adjacency=<Adjacency.EDGE: 'edge'>)
    >>> Ruleset.parse(Ruleset(adjacency=Adjacency.ANY).notation())
    Ruleset(grid_size=4, pile_capacity=4, face_down_limit=4, adjacency=<Adjacency.ANY: 'any'>)
    """

    grid_size: int = 4
    """The grid is ``grid_size`` x ``grid_size`` piles; all must be face up to win."""
    pile_capacity: int = 4
    """A pile holding this many cards takes no more."""
    face_down_limit: int = 4
    """More face-down top cards than this loses the game."""
    adjacency: Adjacency = Adjacency.EDGE

    def __post_init__(self) -> None:
        for name, value, low, high in (
            ("grid_size", self.grid_size, 2, 6),
            ("pile_capacity", self.pile_capacity, 1, 10),
            ("face_down_limit", self.face_down_limit, 0, 36),
        ):
            if type(value) is not int or not low <= value <= high:
                raise ValueError(f"{name} must be an integer from {low} to {high}, not {value!r}")
        if not isinstance(self.adjacency, Adjacency):
            raise ValueError(f"adjacency must be 'edge' or 'any', not {self.adjacency!r}")
        if self.grid_size**2 > 40:
            raise ValueError("the grid cannot have more piles than the deck has cards")
        if self.grid_size**2 * self.pile_capacity < 40:
            # Otherwise a full grid of full piles could leave the card in hand nowhere to go.
            raise ValueError(
                "the grid's piles must hold the whole deck: grid_size² x pile_capacity >= 40"
            )

    def notation(self) -> str:
        """A compact text form such as ``4x4c4f4e`` (grid, capacity, face-down limit, adjacency)."""
        return (
            f"{self.grid_size}x{self.grid_size}c{self.pile_capacity}"
            f"f{self.face_down_limit}{self.adjacency.value[0]}"
        )

    @classmethod
    def parse(cls, text: str) -> Ruleset:
        """Read the form written by :meth:`notation`."""
        match = re.fullmatch(r"(\d+)x(\d+)c(\d+)f(\d+)([ea])", text)
        if match is None or match[1] != match[2]:
            raise ValueError(f"not a ruleset: {text!r} (expected something like 4x4c4f4e)")
        return cls(
            grid_size=int(match[1]),
            pile_capacity=int(match[3]),
            face_down_limit=int(match[4]),
            adjacency=Adjacency.EDGE if match[5] == "e" else Adjacency.ANY,
        )

    def to_dict(self) -> dict[str, int | str]:
        """Plain values, for wire formats and storage."""
        return {
            "grid_size": self.grid_size,
            "pile_capacity": self.pile_capacity,
            "face_down_limit": self.face_down_limit,
            "adjacency": self.adjacency.value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, object]) -> Ruleset:
        """The inverse of :meth:`to_dict`; missing keys take the defaults."""
        default = cls()
        try:
            return cls(
                grid_size=_int_field(data, "grid_size", default.grid_size),
                pile_capacity=_int_field(data, "pile_capacity", default.pile_capacity),
                face_down_limit=_int_field(data, "face_down_limit", default.face_down_limit),
                adjacency=Adjacency(data.get("adjacency", default.adjacency.value)),
            )
        except (TypeError, ValueError) as error:
            raise ValueError(f"invalid ruleset: {error}") from None


def _int_field(data: dict[str, object], key: str, default: int) -> int:
    value = data.get(key, default)
    if type(value) is not int:
        raise ValueError(f"{key} must be an integer, not {value!r}")
    return value
