"""The search worker: a real child process, its line protocol, and its recovery from death."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys

import pytest

from engine import Ruleset
from engine.solver import par
from server.search_worker import (
    PARENT_GONE,
    ParFound,
    SearchWorker,
    SearchWorkerError,
    answer,
    serve,
)
from tests.server.known_games import HOPELESS, WON_SEED


def expected(seed: str, budget: float) -> ParFound:
    found = par(seed, Ruleset(), budget)
    cards = len(found.moves) if found.score is not None else None
    return ParFound(found.score, found.proven, cards, found.at_most)


def par_request(seed: str = WON_SEED, budget: float = 2.0) -> str:
    return json.dumps(
        {"search": "par", "seed": seed, "rules": Ruleset().to_dict(), "budget": budget}
    )


def test_each_request_line_gets_one_answer_line_even_when_it_is_bad() -> None:
    lines_in = [par_request(), "not json", "[1, 2]", '{"search": "par", "seed": 7}', ""]
    answers = io.StringIO()
    assert serve(io.StringIO("\n".join(lines_in)), answers) == 0
    lines = [json.loads(line) for line in answers.getvalue().splitlines()]
    assert len(lines) == 4
    assert lines[0]["score"] is not None and lines[0]["cards_used"] == 40 - lines[0]["score"]
    assert all(set(line) == {"error"} for line in lines[1:])


def test_a_request_with_an_invalid_ruleset_or_search_is_answered_with_an_error() -> None:
    assert set(answer({"search": "par", "seed": "x", "rules": {"grid_size": 1}, "budget": 0.1}))
    assert set(answer({"search": "dig", "rules": {}, "budget": 0.1})) == {"error"}


def test_a_winnable_search_answers_the_first_candidate_it_wins_or_none() -> None:
    rules = Ruleset().to_dict()
    found = answer({"search": "winnable", "candidates": [WON_SEED], "rules": rules, "budget": 5})
    assert found == {"seed": WON_SEED}
    hopeless = answer(
        {"search": "winnable", "candidates": ["a", "b"], "rules": HOPELESS.to_dict(), "budget": 5}
    )
    assert hopeless == {"seed": None}


def test_a_child_whose_parent_stopped_reading_exits_quietly() -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "server.search_worker"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    assert child.stdin is not None and child.stdout is not None and child.stderr is not None
    child.stdout.close()  # as a dead parent would: nobody reads the answer
    child.stdin.write(par_request(budget=0.5).encode() + b"\n")
    child.stdin.close()
    assert child.wait(timeout=30) == PARENT_GONE
    assert child.stderr.read() == b""
    child.stderr.close()


async def test_the_child_process_finds_what_the_solver_finds() -> None:
    worker = SearchWorker()
    try:
        found = await worker.par(WON_SEED, Ruleset(), 2.0)
        again = await worker.par(WON_SEED, Ruleset(), 2.0)
        winnable = await worker.winnable(["x", WON_SEED], Ruleset(), 5.0)
    finally:
        await worker.close()
    reference = expected(WON_SEED, 2.0)
    assert found.score is not None and found.cards_used == 40 - found.score
    if found.proven and reference.proven:
        assert found == again == reference
    assert winnable in ("x", WON_SEED)


async def test_a_dead_child_fails_at_most_one_search_and_the_next_starts_a_new_one() -> None:
    worker = SearchWorker()
    try:
        await worker.par(WON_SEED, Ruleset(), 1.0)
        process = worker._process
        assert process is not None
        os.kill(process.pid, signal.SIGKILL)
        # Whether the death is noticed before or after writing depends on timing.
        with contextlib.suppress(SearchWorkerError):
            await worker.par(WON_SEED, Ruleset(), 1.0)
        found = await worker.par(WON_SEED, Ruleset(), 1.0)
        assert found.score is not None
        assert worker._process is not None and worker._process.pid != process.pid
    finally:
        await worker.close()


async def test_a_closed_worker_refuses_searches() -> None:
    worker = SearchWorker()
    await worker.close()
    with pytest.raises(SearchWorkerError):
        await worker.par(WON_SEED, Ruleset(), 1.0)
