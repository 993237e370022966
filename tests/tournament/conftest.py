"""Tournament tests run the real server with the rate limit out of the bots' way."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from server.config import ServerConfig
from tests.conftest import fast_config


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    """Bots answer at machine speed: no rate limit in the way."""
    return dataclasses.replace(
        fast_config(tmp_path / "foursquare.db"), rate_per_second=1000.0, rate_burst=1000
    )
