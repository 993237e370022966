"""Text forms: moves (``r-1c0``) and whole positions (see :meth:`Game.notation`).

>>> format_move((-1, 2))
'r-1c2'
>>> parse_move("r-1c2"), parse_move("-1,2"), parse_move("(-1, 2)")
((-1, 2), (-1, 2), (-1, 2))
>>> format_moves([(0, 0), (0, 1)])
'r0c0 r0c1'
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.game import Position

_MOVE = re.compile(
    r"\s*(?:r\s*([+-]?\d+)\s*c\s*([+-]?\d+)"  # r-1c2
    r"|\(?\s*([+-]?\d+)\s*,\s*([+-]?\d+)\s*\)?)\s*"  # -1,2 or (-1, 2)
)


def format_move(position: Position) -> str:
    """The move notation: ``r<row>c<col>``, which needs no quoting in a shell."""
    return f"r{position[0]}c{position[1]}"


def parse_move(text: str) -> Position:
    """Read ``r-1c2``, ``-1,2`` or ``(-1, 2)`` as the position ``(-1, 2)``."""
    match = _MOVE.fullmatch(text.lower())
    if match is None or len(text) > 40:
        raise ValueError(f"not a move: {text!r} (write it like r-1c2, row then column)")
    row, col = (match[1], match[2]) if match[1] is not None else (match[3], match[4])
    return int(row), int(col)


def format_moves(moves: Iterable[Position]) -> str:
    """Moves as one line, separated by spaces."""
    return " ".join(format_move(m) for m in moves)


def parse_moves(text: str) -> list[Position]:
    """Read a line written by :func:`format_moves`."""
    return [parse_move(word) for word in text.split()]

