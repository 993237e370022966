"""Par solver: time to a verified winning line and to a proven par on fixed seeds.

Each deal is solved once with the per-deal budget; every line is replayed through the
engine (the solver does it, and this harness checks again). Reported against the goals:
a verified line for every deal within 1 s, a median time to a proven par under 50 ms,
and par proven for at least 97% of deals within a 10 s budget; a deal not proven is
reported as the range the search did prove.

The budget and every time reported are this process's CPU time (``time.process_time``)
unless ``--wall`` is given: on a machine shared with other work, wall time also counts
the other processes' turns on the cores, and a deal's result would depend on them.

Run: ``python -m bench.solver [--seeds N] [--budget S] [--wall] [--write]``; ``--write``
updates ``docs/performance.md`` and records every deal in ``bench/results/solver.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter

from bench.report import PERFORMANCE_DOC, machine_line, markdown_table, update_section
from engine import Status, deal, replay
from engine.solver import Clock, Par, solve


def solve_all(seeds: list[str], budget: float, clock: Clock = time.process_time) -> list[Par]:
    """Solve every seed within ``budget`` seconds of ``clock``, checking each line by
    replay; prints one line per deal."""
    results = []
    for seed in seeds:
        result = solve(deal(seed), budget=budget, clock=clock)
        if result.score is not None:
            game = replay(seed, result.moves)
            assert game.status is Status.WON and game.score == result.score, seed
        print(
            f"{seed}: score {result.score} proven {result.proven} at most {result.at_most} "
            f"{result.seconds:.3f} s {result.nodes} nodes",
            flush=True,
        )
        results.append(result)
    return results


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds < 10 else f"{seconds:,.1f} s"


def report(results: list[Par], budget: float, command: str, clock_name: str = "CPU") -> str:
    """The markdown section for ``docs/performance.md``."""
    count = len(results)
    first_lines = [r.first_line_seconds for r in results if r.first_line_seconds is not None]
    proven = [r for r in results if r.proven]
    # An unproven deal counts as taking longer than any proven one, so the median is honest.
    proof_times = sorted(r.seconds if r.proven else float("inf") for r in results)
    median_proof = statistics.median(proof_times)
    within_1s = sum(1 for t in first_lines if t <= 1.0)
    scores = Counter(r.score for r in proven)
    rows = [
        ["deals with a verified winning line", f"{len(first_lines)} of {count}", "every deal"],
        ["... found within 1 s", f"{within_1s} of {count}", "every deal"],
        ["slowest first line", _ms(max(first_lines, default=0.0)), "<= 1 s"],
        ["median time to a proven par", _ms(median_proof), "< 50 ms"],
        [f"par proven within {budget:g} s", f"{len(proven) / count:.1%}", ">= 97%"],
        ["mean nodes per deal", f"{statistics.mean(r.nodes for r in results):,.0f}", ""],
    ]
    distribution = ", ".join(
        f"par {score}: {scores[score]}" if score is not None else f"unwinnable: {scores[score]}"
        for score in sorted(scores, key=lambda s: -1 if s is None else s, reverse=True)
    )
    ranges = Counter(f"{r.score}-{r.at_most}" for r in results if not r.proven)
    unproven = ", ".join(
        f"{text}: {ranges[text]}" for text in sorted(ranges, key=lambda t: (-ranges[t], t))
    )
    return (
        f"{markdown_table(['measure', 'result', 'goal'], rows)}\n\n"
        f"Proven pars: {distribution}. Deals not proven, as the range proven (the best "
        f"line's score to the best any line could reach): {unproven or 'none'}.\n\n"
        f"{count} deals (seeds `solver-0` to `solver-{count - 1}`), {budget:g} s budget each; "
        f"the budget and the times are {clock_name} time. "
        f"Command: `{command}` ({machine_line()})."
    )


RESULTS = PERFORMANCE_DOC.parent.parent / "bench" / "results" / "solver.json"


def write_results(seeds: list[str], results: list[Par], budget: float, command: str) -> None:
    """Every deal's outcome, for comparing runs deal by deal (``bench/results``)."""
    deals = [
        {
            "seed": seed,
            "score": r.score,
            "proven": r.proven,
            "at_most": r.at_most,
            "seconds": round(r.seconds, 4),
            "first_line_seconds": None
            if r.first_line_seconds is None
            else round(r.first_line_seconds, 4),
            "nodes": r.nodes,
        }
        for seed, r in zip(seeds, results, strict=True)
    ]
    record = {"command": command, "budget_s": budget, "machine": machine_line(), "deals": deals}
    RESULTS.write_text(json.dumps(record, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=200, help="how many deals (default 200)")
    parser.add_argument("--budget", type=float, default=10.0, help="seconds per deal (10)")
    parser.add_argument(
        "--wall", action="store_true", help="budget and times in wall time, not CPU time"
    )
    parser.add_argument("--write", action="store_true", help="update docs/performance.md")
    args = parser.parse_args()
    seeds = [f"solver-{i}" for i in range(args.seeds)]
    clock = time.perf_counter if args.wall else time.process_time
    results = solve_all(seeds, args.budget, clock)
    command = (
        f"python -m bench.solver --seeds {args.seeds} --budget {args.budget:g}"
        f"{' --wall' if args.wall else ''}"
    )
    text = report(results, args.budget, command, "wall" if args.wall else "CPU")
    print(text)
    if args.write:
        update_section("solver", text)
        write_results(seeds, results, args.budget, command)


if __name__ == "__main__":
    main()
