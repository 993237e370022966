"""The par worker: a real child process, its line protocol, and its recovery from death."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal

import pytest

from engine import Ruleset
from engine.solver import par
from server.par_worker import ParFound, ParWorker, ParWorkerError, answer, serve
from tests.server.known_games import WON_SEED


def expected(seed: str, budget: float) -> ParFound:
    found = par(seed, Ruleset(), budget)
    cards = len(found.moves) if found.score is not None else None
    return ParFound(found.score, found.proven, cards)


def test_each_request_line_gets_one_answer_line_even_when_it_is_bad() -> None:
    good = json.dumps({"seed": WON_SEED, "rules": Ruleset().to_dict(), "budget": 2.0})
    requests = io.StringIO("\n".join([good, "not json", "[1, 2]", '{"seed": 7}', ""]))
    answers = io.StringIO()
    serve(requests, answers)
    lines = [json.loads(line) for line in answers.getvalue().splitlines()]
    assert len(lines) == 4
    assert lines[0]["score"] is not None and lines[0]["cards_used"] == 40 - lines[0]["score"]
    assert all(set(line) == {"error"} for line in lines[1:])


def test_a_request_with_an_invalid_ruleset_is_answered_with_an_error() -> None:
    reply = answer({"seed": "x", "rules": {"grid_size": 1}, "budget": 0.1})
    assert set(reply) == {"error"}


async def test_the_child_process_finds_what_the_solver_finds() -> None:
    worker = ParWorker()
    try:
        found = await worker.par(WON_SEED, Ruleset(), 2.0)
        again = await worker.par(WON_SEED, Ruleset(), 2.0)
    finally:
        await worker.close()
    reference = expected(WON_SEED, 2.0)
    assert found.score is not None and found.cards_used == 40 - found.score
    if found.proven and reference.proven:
        assert found == again == reference


async def test_a_dead_child_fails_at_most_one_search_and_the_next_starts_a_new_one() -> None:
    worker = ParWorker()
    try:
        await worker.par(WON_SEED, Ruleset(), 1.0)
        process = worker._process
        assert process is not None
        os.kill(process.pid, signal.SIGKILL)
        # Whether the death is noticed before or after writing depends on timing.
        with contextlib.suppress(ParWorkerError):
            await worker.par(WON_SEED, Ruleset(), 1.0)
        found = await worker.par(WON_SEED, Ruleset(), 1.0)
        assert found.score is not None
        assert worker._process is not None and worker._process.pid != process.pid
    finally:
        await worker.close()


async def test_a_closed_worker_refuses_searches() -> None:
    worker = ParWorker()
    await worker.close()
    with pytest.raises(ParWorkerError):
        await worker.par(WON_SEED, Ruleset(), 1.0)
