"""Driving the grid by key presses, as a person would: arrows to the target, then Enter."""

from __future__ import annotations

from textual.pilot import Pilot

from client.widgets.grid import GridView
from engine import Position


async def place_by_keys(
    pilot: Pilot[int], grid: GridView, target: Position, *, vim: bool = False
) -> None:
    """Walk the cursor to ``target`` with arrow keys (or hjkl) and press Enter."""
    up, down, left, right = ("k", "j", "h", "l") if vim else ("up", "down", "left", "right")
    row, col = grid.cursor
    keys = [down if target[0] > row else up] * abs(target[0] - row)
    keys += [right if target[1] > col else left] * abs(target[1] - col)
    await pilot.press(*keys)
    assert grid.cursor == target, f"the cursor stopped at {grid.cursor}, not {target}"
    await pilot.press("enter")
