"""Searches (a deal's par, a winnable deal) in a child process at low priority.

A search is seconds of pure-Python CPU. In a thread it would hold the interpreter lock
against the event loop (the loop waits up to a switch interval, 5 ms, each time it wants
the lock back), and a busy server finishes races all the time. So the server hands
searches to child processes (``python -m server.search_worker``) that lower their own
priority: the operating system then runs the loop first whenever both want the
processor, and a search only takes what the loop leaves. The server runs two of them, one
for pars and one for winnable deals, so that neither kind queues behind the other.

The child reads one JSON request per line on stdin and answers one JSON line on stdout,
in order. It is started on first use (a server that never finishes a race never starts
one) and again after it dies; plain pipes, not :mod:`multiprocessing`, so it starts the
same way under any host (a test harness, a terminal app) that runs the server. When its
parent is gone (end of input, or an answer that cannot be written) it exits quietly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from engine import Ruleset
from engine.solver import NoWinnableSeed, par, winnable_seed

#: The child's nice value: a search yields the processor to the server's event loop.
NICENESS = 15

#: Seconds one candidate seed of a winnable-deal search may take (the search as a whole
#: has its own budget): nearly every deal shows a winning line in milliseconds.
ATTEMPT_BUDGET = 1.0

#: The child's exit status when it could not write an answer: its parent is gone.
PARENT_GONE = 1


@dataclass(frozen=True, slots=True)
class ParFound:
    """What the server tells racers about a deal's par (see ``race_par``)."""

    score: int | None
    """The best score of a winning line found; ``None`` when none was found."""
    proven: bool
    cards_used: int | None
    """How many cards the par line places; ``None`` when no winning line was found."""
    at_most: int | None = None
    """The best score any line could reach, proven (see ``Par.at_most``)."""


class SearchWorkerError(RuntimeError):
    """The child process failed or stopped before answering."""


class SearchWorker:
    """The parent's side: one child process, one search at a time, first come first served."""

    def __init__(self, niceness: int = NICENESS) -> None:
        self._niceness = niceness
        self._process: asyncio.subprocess.Process | None = None
        self._turn = asyncio.Lock()
        self._closed = False

    async def par(self, seed: str, rules: Ruleset, budget: float) -> ParFound:
        """The par of the deal dealt from ``seed``, searched for at most ``budget`` seconds.

        Raises :class:`SearchWorkerError` if the child fails (the next call starts a new one).
        """
        answer = await self._ask(
            {"search": "par", "seed": seed, "rules": rules.to_dict(), "budget": budget}
        )
        return ParFound(
            answer["score"], answer["proven"], answer["cards_used"], answer.get("at_most")
        )

    async def winnable(
        self, candidates: Sequence[str], rules: Ruleset, budget: float
    ) -> str | None:
        """The first of ``candidates`` shown winnable under ``rules``, searching for at most
        ``budget`` seconds in all; ``None`` if none was within the budget.

        Raises :class:`SearchWorkerError` if the child fails.
        """
        answer = await self._ask(
            {
                "search": "winnable",
                "candidates": list(candidates),
                "rules": rules.to_dict(),
                "budget": budget,
            }
        )
        seed = answer["seed"]
        return seed if isinstance(seed, str) else None

    async def close(self) -> None:
        """Stop the child (a search in progress is abandoned)."""
        self._closed = True
        process = self._process
        self._kill()
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                await process.wait()

    async def _ask(self, request: dict[str, object]) -> dict[str, Any]:
        """Send one request to the child and return its answer, waiting for our turn."""
        line_out = json.dumps(request).encode() + b"\n"
        async with self._turn:
            if self._closed:
                raise SearchWorkerError("the search worker is closed")
            process = await self._running()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(line_out)
                await process.stdin.drain()
                line = await process.stdout.readline()
            except OSError as error:  # the child died: the next search starts another
                self._kill()
                raise SearchWorkerError(f"the search worker failed: {error}") from error
            except asyncio.CancelledError:
                self._kill()  # a half-answered request would desynchronise the pipe
                raise
            if not line:
                self._kill()
                raise SearchWorkerError("the search worker stopped")
            answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise SearchWorkerError(str(answer["error"]))
        return answer

    async def _running(self) -> asyncio.subprocess.Process:
        if self._process is None or self._process.returncode is not None:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "server.search_worker", "--nice", str(self._niceness),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
        return self._process

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()


def answer(request: dict[str, object]) -> dict[str, object]:
    """The child's answer to one request (an ``error`` entry if it cannot be searched)."""
    try:
        rules, budget = request["rules"], request["budget"]
        if not isinstance(rules, dict):
            raise TypeError("rules must be an object")
        if not isinstance(budget, (int, float)):
            raise TypeError("budget must be a number")
        ruleset = Ruleset.from_dict(rules)
        match request.get("search"):
            case "par":
                return _par(request["seed"], ruleset, float(budget))
            case "winnable":
                return _winnable(request["candidates"], ruleset, float(budget))
            case other:
                raise ValueError(f"no such search: {other!r}")
    except Exception as error:  # the child must answer every line, or the parent waits
        return {"error": repr(error)}


def _par(seed: object, rules: Ruleset, budget: float) -> dict[str, object]:
    if not isinstance(seed, str):
        raise TypeError("seed must be a string")
    found = par(seed, rules, budget)
    return {
        "score": found.score,
        "proven": found.proven,
        "cards_used": len(found.moves) if found.score is not None else None,
        "at_most": found.at_most,
    }


def _winnable(candidates: object, rules: Ruleset, budget: float) -> dict[str, object]:
    if not isinstance(candidates, list) or not all(isinstance(c, str) for c in candidates):
        raise TypeError("candidates must be a list of strings")
    seeds = iter(candidates)
    try:
        found = winnable_seed(
            lambda: next(seeds), rules, ATTEMPT_BUDGET, attempts=len(candidates), within=budget
        )
    except NoWinnableSeed:
        return {"seed": None}
    return {"seed": found.seed}


def serve(requests: TextIO, answers: TextIO) -> int:
    """Answer each request line until end of input (the parent closed the pipe or died).

    Returns the exit status: 0 at the end of input, :data:`PARENT_GONE` when an answer
    could not be written because nobody reads the other end any more.
    """
    for line in requests:
        try:
            request = json.loads(line)
        except ValueError as error:
            reply: dict[str, object] = {"error": repr(error)}
        else:
            reply = answer(request) if isinstance(request, dict) else {"error": "not an object"}
        try:
            answers.write(json.dumps(reply) + "\n")
            answers.flush()
        except (BrokenPipeError, ValueError):  # ValueError: the stream was closed
            return PARENT_GONE
    return 0


def main(argv: list[str] | None = None) -> int:
    """The child: lower its priority, then serve requests on stdin/stdout."""
    args = sys.argv[1:] if argv is None else argv
    niceness = int(args[1]) if len(args) == 2 and args[0] == "--nice" else NICENESS
    with contextlib.suppress(OSError):  # already at the bottom, or not allowed: run anyway
        os.nice(niceness)
    # Ctrl-C in a terminal reaches the whole process group: the server decides when its
    # child stops (it closes the pipe or kills it), and a traceback would only be noise.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    status = serve(sys.stdin, sys.stdout)
    if status == PARENT_GONE:
        # The interpreter flushes stdout once more on the way out, which would fail again
        # and print a warning: point it at nothing first.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return status


if __name__ == "__main__":
    raise SystemExit(main())
