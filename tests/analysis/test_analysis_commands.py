"""``foursquare par`` and ``foursquare seeds`` from the command line."""

from __future__ import annotations

import pytest

from cli.main import main
from engine import Status, parse_moves, replay


def test_par_prints_the_proven_par_and_a_line_that_replays(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["par", "0", "--budget", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("par 24 (proven)\n")
    line = next(text for text in out.splitlines() if text.startswith("line: "))
    assert replay("0", parse_moves(line.removeprefix("line: "))).score == 24


def test_par_rejects_a_bad_budget(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["par", "0", "--budget", "0"])
    assert "positive number of seconds" in capsys.readouterr().err


def test_winnable_seeds_are_fresh_and_come_with_winning_lines(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["seeds", "--winnable", "-n", "2", "--lines"]) == 0
    rows = [row.split("\t") for row in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 and rows[0][0] != rows[1][0]
    for seed, score, line in rows:
        assert len(seed) == 32 and int(seed, 16) >= 0  # 128 bits, in hex
        game = replay(seed, parse_moves(line))
        assert (game.status, game.score) == (Status.WON, int(score))


def test_plain_seeds_are_one_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["seeds", "-n", "3"]) == 0
    assert len(set(capsys.readouterr().out.split())) == 3
