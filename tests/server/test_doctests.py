"""The examples in the server modules' docstrings run as written."""

from __future__ import annotations

import doctest
from types import ModuleType

import pytest

import protocol.result
import server.journal
import server.race
import server.rate_limit
import server.sessions


@pytest.mark.parametrize(
    "module",
    [server.race, server.journal, server.sessions, server.rate_limit, protocol.result],
    ids=lambda module: module.__name__,
)
def test_the_docstring_examples_hold(module: ModuleType) -> None:
    outcome = doctest.testmod(module)
    assert outcome.attempted > 0 and outcome.failed == 0
