"""Pars computed in a child process at low priority, away from the event loop.

A par search is seconds of pure-Python CPU. In a thread it would hold the interpreter
lock against the event loop (the loop waits up to a switch interval, 5 ms, each time it
wants the lock back), and a busy server finishes races all the time. So the server hands
searches to one child process (``python -m server.par_worker``) that lowers its own
priority: the operating system then runs the loop first whenever both want the processor,
and the search only takes what the loop leaves.

The child reads one JSON request per line on stdin and answers one JSON line on stdout,
in order. It is started on first use (a server that never finishes a race never starts
it) and again after it dies; plain pipes, not :mod:`multiprocessing`, so it starts the
same way under any host (a test harness, a terminal app) that runs the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from dataclasses import dataclass
from typing import TextIO

from engine import Ruleset
from engine.solver import par

#: The child's nice value: a search yields the processor to the server's event loop.
NICENESS = 15


@dataclass(frozen=True, slots=True)
class ParFound:
    """What the server tells racers about a deal's par (see ``race_par``)."""

    score: int | None
    """The best score of a winning line found; ``None`` when none was found."""
    proven: bool
    cards_used: int | None
    """How many cards the par line places; ``None`` when no winning line was found."""


class ParWorkerError(RuntimeError):
    """The child process failed or stopped before answering."""


class ParWorker:
    """The parent's side: one child process, one search at a time, first come first served."""

    def __init__(self, niceness: int = NICENESS) -> None:
        self._niceness = niceness
        self._process: asyncio.subprocess.Process | None = None
        self._turn = asyncio.Lock()
        self._closed = False

    async def par(self, seed: str, rules: Ruleset, budget: float) -> ParFound:
        """The par of the deal dealt from ``seed``, searched for at most ``budget`` seconds.

        Raises :class:`ParWorkerError` if the child fails (the next call starts a new one).
        """
        request = json.dumps({"seed": seed, "rules": rules.to_dict(), "budget": budget})
        async with self._turn:
            if self._closed:
                raise ParWorkerError("the par worker is closed")
            process = await self._running()
            assert process.stdin is not None and process.stdout is not None
            try:
                process.stdin.write(request.encode() + b"\n")
                await process.stdin.drain()
                line = await process.stdout.readline()
            except OSError as error:  # the child died: the next search starts another
                self._kill()
                raise ParWorkerError(f"the par worker failed: {error}") from error
            except asyncio.CancelledError:
                self._kill()  # a half-answered request would desynchronise the pipe
                raise
            if not line:
                self._kill()
                raise ParWorkerError("the par worker stopped")
            answer = json.loads(line)
        if "error" in answer:
            raise ParWorkerError(answer["error"])
        return ParFound(answer["score"], answer["proven"], answer["cards_used"])

    async def close(self) -> None:
        """Stop the child (a search in progress is abandoned)."""
        self._closed = True
        process = self._process
        self._kill()
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                await process.wait()

    async def _running(self) -> asyncio.subprocess.Process:
        if self._process is None or self._process.returncode is not None:
            self._process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "server.par_worker", "--nice", str(self._niceness),
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
        seed, budget, rules = request["seed"], request["budget"], request["rules"]
        if not isinstance(seed, str) or not isinstance(budget, (int, float)):
            raise TypeError("seed must be a string and budget a number")
        if not isinstance(rules, dict):
            raise TypeError("rules must be an object")
        found = par(seed, Ruleset.from_dict(rules), float(budget))
    except Exception as error:  # the child must answer every line, or the parent waits
        return {"error": repr(error)}
    return {
        "score": found.score,
        "proven": found.proven,
        "cards_used": len(found.moves) if found.score is not None else None,
    }


def serve(requests: TextIO, answers: TextIO) -> None:
    """Answer each request line until end of input (the parent closed the pipe or died)."""
    for line in requests:
        try:
            request = json.loads(line)
        except ValueError as error:
            reply: dict[str, object] = {"error": repr(error)}
        else:
            reply = answer(request) if isinstance(request, dict) else {"error": "not an object"}
        answers.write(json.dumps(reply) + "\n")
        answers.flush()


def main(argv: list[str] | None = None) -> int:
    """The child: lower its priority, then serve requests on stdin/stdout."""
    args = sys.argv[1:] if argv is None else argv
    niceness = int(args[1]) if len(args) == 2 and args[0] == "--nice" else NICENESS
    with contextlib.suppress(OSError):  # already at the bottom, or not allowed: run anyway
        os.nice(niceness)
    serve(sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
