"""Structured logging: one JSON object per line, one line per thing that happened."""

from __future__ import annotations

import json
import logging
import time
import traceback
from pathlib import Path
from typing import Any

logger = logging.getLogger("foursquare.server")


def log_event(event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``event`` with ``fields`` as one JSON line (``{"ts": ..., "event": ..., ...}``)."""
    if logger.isEnabledFor(level):
        line = {"ts": round(time.time(), 3), "event": event, **fields}
        logger.log(level, json.dumps(line, default=str))


def failure(error: BaseException) -> str:
    """An unexpected exception for a log line: its type and where it was raised.

    Not its message or ``repr``: an exception raised while handling a client's message
    may hold what the client sent (a token in a ``KeyError``, a value in a
    ``ValueError``), and a log line quotes nothing a client sent except through
    :func:`protocol.schema.show`.

    >>> try:
    ...     {}["q8V7hK2mZyX0pL4tR9wE1A"]
    ... except KeyError as error:
    ...     failure(error).startswith("KeyError at ")
    True
    """
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return type(error).__name__
    where = Path(frames[-1].filename)
    return f"{type(error).__name__} at {where.parent.name}/{where.name}:{frames[-1].lineno}"


def configure_logging(level: int = logging.INFO) -> None:
    """Send the server's log lines to standard error, bare (they are JSON already)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False


class LogBudget:
    """How many more lines one connection may have logged about its errors.

    A client can make the server answer with an error as fast as it can send frames; one
    log line each would let it fill the disk. The first ``lines`` are logged, the rest only
    counted, and the count goes in the connection's last line (``connection_close``).

    >>> budget = LogBudget(2)
    >>> [budget.spend() for _ in range(4)], budget.not_logged
    ([True, True, False, False], 2)
    """

    __slots__ = ("_left", "not_logged")

    def __init__(self, lines: int) -> None:
        self._left = lines
        self.not_logged = 0
        """Lines left out so far."""

    def spend(self) -> bool:
        """Whether one more line may be logged (if not, it is counted as left out)."""
        if self._left > 0:
            self._left -= 1
            return True
        self.not_logged += 1
        return False
