"""``make fuzz``: the decoders under atheris, then the message handlers under hypothesis.

``python -m tests.fuzz --minutes 60`` spends a quarter of the time (``--decoder-share``)
on ``tests/fuzz_decoder.py`` (coverage-guided, in a child process; its corpus is kept in
``WORKDIR/corpus`` and grows from run to run) and the rest on the state machine of
``tests/server/handler_fuzz.py`` against one server on a new journal, in rounds of
``--examples`` examples until the time is up. It prints the figures as it goes and a
summary at the end, and exits with 1 on the first failure (hypothesis prints the shrunk
sequence of steps; atheris leaves the input in ``WORKDIR/crash-*``).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.server.handler_fuzz import fuzz_server, run_handler_fuzz


@dataclass(frozen=True)
class DecoderRun:
    """What a run of the atheris decoder fuzzer reports."""

    seconds: float
    executions: int
    per_second: int
    new_units: int
    crashed: bool


def fuzz_decoder(seconds: int, workdir: Path) -> DecoderRun:
    """Run the atheris decoder fuzzer for ``seconds``; its output goes to a log file."""
    log = workdir / "decoder.log"
    command = [
        sys.executable, "-m", "tests.fuzz_decoder", f"-max_total_time={seconds}",
        "-print_final_stats=1", f"-artifact_prefix={workdir}/", str(workdir / "corpus"),
    ]
    started = time.monotonic()
    with log.open("w") as output:
        status = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT).returncode
    text = log.read_text()

    def stat(name: str) -> int:
        found = re.search(rf"stat::{name}:\s+(\d+)", text)
        return int(found[1]) if found else 0

    return DecoderRun(
        seconds=time.monotonic() - started,
        executions=stat("number_of_executed_units"),
        per_second=stat("average_exec_per_sec"),
        new_units=stat("new_units_added"),
        crashed=status != 0,
    )


def fuzz_handlers(seconds: float, examples: int, steps: int) -> Counter[str]:
    """Run the handler state machine in rounds until ``seconds`` have passed; the tally.

    The server gets a new journal each run: one kept from an earlier run would bring back
    its races, dealt from seeds this run's checks do not know.
    """
    deadline = time.monotonic() + seconds
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch, fuzz_server(Path(scratch) / "fuzz.db") as fuzz:
        while time.monotonic() < deadline:
            round_started, before = time.monotonic(), fuzz.tally["steps"]
            run_handler_fuzz(fuzz, examples=examples, steps=steps)
            took = time.monotonic() - round_started
            tally = fuzz.tally
            print(
                f"handlers: {time.monotonic() - started:7.0f} s  {tally['examples']:6} examples"
                f"  {tally['steps']:8} steps  {(tally['steps'] - before) / took:6.1f} steps/s"
                " this round",
                flush=True,
            )
        return fuzz.tally


def summary(tally: Counter[str], seconds: float) -> str:
    """The handler run's figures, as printed at the end."""
    sent = sum(count for kind, count in tally.items() if kind.startswith("sent "))
    lines = [
        f"handlers: {tally['examples']} examples, {tally['steps']} steps, {sent} requests "
        f"in {seconds:.0f} s ({tally['steps'] / seconds:.1f} steps/s, "
        f"{tally['examples'] / seconds:.2f} examples/s)",
    ]
    for prefix in ("sent ", "answered ", "error ", "stranger ", "malformed", "closed",
                   "cards ", "boards ", "rivals", "results "):
        found = sorted((k, v) for k, v in tally.items() if k.startswith(prefix))
        lines += [f"  {kind}: {count}" for kind, count in found]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run both fuzzers for ``--minutes`` in all."""
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--decoder-share", type=float, default=0.25,
                        help="the part of the time the decoders get (default 0.25)")
    parser.add_argument("--examples", type=int, default=20,
                        help="handler examples per round (default 20)")
    parser.add_argument("--steps", type=int, default=50,
                        help="steps per handler example (default 50)")
    parser.add_argument("--workdir", type=Path, default=Path(".fuzz"))
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    total = args.minutes * 60
    decoder_seconds = round(total * args.decoder_share)
    if decoder_seconds > 0:
        decoder = fuzz_decoder(decoder_seconds, args.workdir)
        print(
            f"decoder: {decoder.executions} inputs in {decoder.seconds:.0f} s "
            f"({decoder.per_second}/s), {decoder.new_units} new corpus units, "
            + ("FAILED: see " + str(args.workdir / "decoder.log") if decoder.crashed
               else "no failure"),
            flush=True,
        )
        if decoder.crashed:
            return 1
    handler_seconds = total - decoder_seconds
    if handler_seconds > 0:
        started = time.monotonic()
        tally = fuzz_handlers(handler_seconds, args.examples, args.steps)
        print(summary(tally, time.monotonic() - started), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
