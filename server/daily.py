"""The daily deal's calendar and rooms, pure: which day it is, when a day is revealed, and
the options of a day's rooms. No I/O and no clock of its own: "now" is always given
(the server's injected clock, ``ServerConfig.clock``), so tests cross midnight at will.

A day is a UTC date. Its deal is a random seed drawn at the day's first request (never
derived from the date) and kept in the store with its commitment
(:mod:`server.daily_store`). Rooms of the day open until midnight; the last one may count
down and race for its countdown and time limit after that, so the day is **revealed**
(seed and moves public) only once that has passed too: :func:`reveal_at`.

>>> day_of(1_764_633_600.0)  # 2025-12-02 00:00:00 UTC
'2025-12-02'
>>> rules = DailyRules(countdown=15.0, time_limit=600.0, max_racers=8)
>>> reveal_at("2025-12-01", rules) - day_start("2025-12-02")
615.0
>>> is_revealed("2025-12-01", 1_764_633_600.0 + 614, rules)
False
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from engine import Ruleset
from server.config import ServerConfig
from server.race import RECONNECT_GRACE, RaceOptions

_UTC = datetime.UTC


def day_of(now: float) -> str:
    """The UTC date of the time ``now`` (seconds since the Unix epoch), ``YYYY-MM-DD``."""
    return datetime.datetime.fromtimestamp(now, _UTC).date().isoformat()


def parse_day(text: str) -> datetime.date | None:
    """The date ``text`` names (``YYYY-MM-DD``), or ``None`` if it names none."""
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        return None


def day_start(day: str) -> float:
    """When ``day`` begins (its UTC midnight), in seconds since the Unix epoch."""
    date = datetime.date.fromisoformat(day)
    return datetime.datetime(date.year, date.month, date.day, tzinfo=_UTC).timestamp()


def day_before(day: str) -> str:
    """The day before ``day``."""
    return (datetime.date.fromisoformat(day) - datetime.timedelta(days=1)).isoformat()


@dataclass(frozen=True, slots=True)
class DailyRules:
    """How the day's rooms are raced (from ``ServerConfig``): each rule in one place."""

    countdown: float
    """Seconds a room counts down from its first racer; whoever asks for the daily
    meanwhile races in it too."""
    time_limit: float
    max_racers: int
    progress_interval: float = 0.1
    reconnect_grace: float = RECONNECT_GRACE
    ruleset: Ruleset = Ruleset()
    """The published game's rules: the day's deal is one pool for everyone."""

    def options(self, day: str) -> RaceOptions:
        """The options of ``day``'s rooms: one racer is enough (a room starts after its
        countdown whoever came), not listed, no spectators (a spectator of a finished
        room would see every card its racers drew), unrated (the day has its own board),
        and marked with their day, which seals their result until the reveal."""
        return RaceOptions(
            max_racers=self.max_racers,
            min_racers=1,
            time_limit=self.time_limit,
            ruleset=self.ruleset,
            spectators=False,
            public=False,
            auto_start=True,
            countdown=self.countdown,
            progress_interval=self.progress_interval,
            reconnect_grace=self.reconnect_grace,
            rated=False,
            daily=day,
        )


def daily_rules(config: ServerConfig) -> DailyRules:
    """The daily rooms of a server with ``config``: its quick races' limits, and the
    daily countdown."""
    return DailyRules(
        countdown=config.daily_countdown,
        time_limit=config.time_limit,
        max_racers=config.quick_max_racers,
        progress_interval=config.progress_interval,
        reconnect_grace=config.reconnect_grace,
    )


def reveal_at(day: str, rules: DailyRules) -> float:
    """When ``day``'s seed and moves become public: its end, plus the countdown and time
    limit of a room opened at its last moment (every room of the day is over by then)."""
    return day_start(day) + 86_400 + rules.countdown + rules.time_limit


def is_revealed(day: str, now: float, rules: DailyRules) -> bool:
    """Whether ``day`` is revealed at ``now``."""
    return now >= reveal_at(day, rules)


def last_revealed_day(now: float, rules: DailyRules) -> str:
    """The latest day revealed at ``now`` (yesterday, or the day before during the first
    minutes of today)."""
    yesterday = day_before(day_of(now))
    return yesterday if is_revealed(yesterday, now, rules) else day_before(yesterday)


def entrant_of(player: str | None, session_id: str) -> str:
    """Who an attempt belongs to: a claimed player (once a day), else the session (a
    guest, once per session)."""
    return player if player is not None else f"guest:{session_id}"
