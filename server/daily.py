"""The daily deal's calendar, pure: which day it is, when a day is revealed, and how the
day's rooms are raced (the race tier makes their options). No I/O and no clock of its
own: "now" is always given (the server's injected clock, ``ServerConfig.clock``), so
tests cross midnight at will.

A day is a UTC date. Its deal is a random seed drawn at the day's first request (never
derived from the date) and kept in the store with its commitment
(:mod:`server.daily_store`). Rooms of the day open until midnight; the last one may count
down and race for its countdown and time limit after that, so the day is **revealed**
(seed and moves public) only once that has passed too: :func:`reveal_at`.

>>> day_of(1_764_633_600.0)  # 2025-12-02 00:00:00 UTC
'2025-12-02'
>>> rules = DailyRules(countdown=15.0, time_limit=600.0)
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
    """What the calendar needs of how the day's rooms are raced (from ``ServerConfig``)."""

    countdown: float
    """Seconds a room counts down from its first racer; whoever asks for the daily
    meanwhile races in it too."""
    time_limit: float
    ruleset: Ruleset = Ruleset()
    """The published game's rules: the day's deal is one pool for everyone."""


def daily_rules(config: ServerConfig) -> DailyRules:
    """The daily rooms of a server with ``config``: the daily countdown and the quick
    races' time limit."""
    return DailyRules(countdown=config.daily_countdown, time_limit=config.time_limit)


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
