"""Structured logging: one JSON object per line, one line per thing that happened."""

from __future__ import annotations

import json
import logging
import time
from typing import Any

logger = logging.getLogger("foursquare.server")


def log_event(event: str, level: int = logging.INFO, **fields: Any) -> None:
    """Log ``event`` with ``fields`` as one JSON line (``{"ts": ..., "event": ..., ...}``)."""
    if logger.isEnabledFor(level):
        line = {"ts": round(time.time(), 3), "event": event, **fields}
        logger.log(level, json.dumps(line, default=str))


def configure_logging(level: int = logging.INFO) -> None:
    """Send the server's log lines to standard error, bare (they are JSON already)."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.handlers[:] = [handler]
    logger.setLevel(level)
    logger.propagate = False
