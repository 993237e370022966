"""The offline commands: ``foursquare deal``, ``replay`` and ``solo --lines``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.game_commands import describe_result, play_lines
from cli.main import main
from engine import Game, Ruleset, commitment, deal, format_moves


def test_deal_prints_stock_and_commitment(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["deal", "foursquare"]) == 0
    out = capsys.readouterr().out
    assert " ".join(str(card) for card in deal("foursquare")) in out
    assert commitment("foursquare") in out


def test_replay_prints_position_and_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "foursquare", "r0c0", "r0c1", "r1c1"]) == 0
    out = capsys.readouterr().out
    game = Game.new("foursquare")
    for move in [(0, 0), (0, 1), (1, 1)]:
        game.play(move)
    assert f"position: {game.notation()}" in out
    assert "playing: 3 cards placed, 36 left in the stock" in out


def test_replay_reports_an_illegal_move_with_its_number(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "foursquare", "r0c0", "r0c1", "r3c3"]) == 1
    err = capsys.readouterr().err
    assert "illegal move 3 (r3c3): (3, 3) is not next to any pile" in err


def test_replay_of_a_won_conformance_game(capsys: pytest.CaptureFixture[str]) -> None:
    games = json.loads((Path(__file__).parent.parent / "conformance/games.json").read_text())
    won = next(g for g in games["games"] if g["result"] == "won")
    moves = [f"r{r}c{c}" for r, c in (step["move"] for step in won["steps"])]
    assert main(["replay", won["seed"], *moves]) == 0
    assert f"won with {won['score']} cards left" in capsys.readouterr().out


def test_bad_arguments_are_sentences_not_tracebacks(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", "x", "up"]) == 2
    assert "not a move: 'up'" in capsys.readouterr().err
    assert main(["replay", "x", "--grid-size", "2"]) == 2
    assert "hold the whole deck" in capsys.readouterr().err


def answers(*lines: str) -> Iterator[str]:
    yield from lines


def test_solo_lines_plays_by_letters_and_positions() -> None:
    replies = answers("a", "r0c1", "zz", "help", "moves", "quit")
    out = io.StringIO()
    assert play_lines(Game.new("foursquare"), lambda _prompt: next(replies), out) == 0
    text = out.getvalue()
    assert "Card: 4S" in text and "Card: 3S" in text
    assert "Flipped: r0c0 down" in text
    assert "Not there: not a move: 'zz'" in text
    assert "More than 4 face-down cards loses" in text
    assert "Bye. Moves: r0c0 r0c1" in text


def test_solo_lines_to_the_end_of_a_game() -> None:
    game = Game.new("solo-end", Ruleset(face_down_limit=0))
    out = io.StringIO()
    assert play_lines(game, lambda _prompt: "a", out) == 0
    assert game.is_over()
    assert describe_result(game).capitalize() + "." in out.getvalue()
    assert f"Moves: {format_moves(game.moves)}" in out.getvalue()


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "foursquare"
    result = subprocess.run([script, "deal", ""], capture_output=True, text=True, check=True)
    assert result.stdout.startswith("stock: 8D 8H TD")
