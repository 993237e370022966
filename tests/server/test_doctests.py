"""The examples in the server modules' docstrings run as written."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

import protocol.names
import protocol.result
import protocol.schema
import server.deadlines
import server.journal
import server.logs
import server.race
import server.rate_limit
import server.sessions


@pytest.mark.parametrize(
    "module",
    [
        server.race,
        server.journal,
        server.deadlines,
        server.sessions,
        server.rate_limit,
        server.logs,
        protocol.result,
        protocol.names,
        protocol.schema,
    ],
    ids=lambda module: module.__name__,
)
def test_the_docstring_examples_hold(module: ModuleType) -> None:
    outcome = doctest.testmod(module)
    assert outcome.attempted > 0 and outcome.failed == 0
