"""The full-screen client's commands: ``play``, ``watch`` and ``bot``; and the ``solo`` screen.

Textual and websockets are imported inside the run functions so that ``foursquare --help``
and the offline commands stay quick to start.
"""

from __future__ import annotations

from typing import Any

from engine import Ruleset

Subparsers = Any  # argparse's _SubParsersAction is private


def register(subparsers: Subparsers) -> None:
    """Add ``play``, ``watch`` and ``bot`` to the ``foursquare`` command."""


def run_solo_screen(seed: str | None, rules: Ruleset) -> int:
    """Open the full-screen solo game; returns the exit status."""
    from client.app import FoursquareApp
    from client.screens.solo import SoloScreen

    app = FoursquareApp(lambda: SoloScreen(seed, rules))
    status = app.run()
    return status or 0
