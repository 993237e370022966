"""The engine against the shared conformance data: stocks, commitments and whole games."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import Card, Game, Status, commitment, deal
from engine.board import Board

DATA = Path(__file__).parent.parent / "conformance"
DEALS: list[dict[str, Any]] = json.loads((DATA / "deals.json").read_text())["deals"]
GAMES: list[dict[str, Any]] = json.loads((DATA / "games.json").read_text())["games"]


@pytest.mark.parametrize("case", DEALS, ids=lambda case: repr(case["seed"])[:20])
def test_stock_and_commitment(case: dict[str, Any]) -> None:
    assert [str(card) for card in deal(case["seed"])] == case["stock"]
    assert commitment(case["seed"]) == case["commitment"]


def test_every_deal_is_a_permutation_of_the_deck() -> None:
    for case in DEALS:
        assert sorted(card.id for card in deal(case["seed"])) == list(range(40))


def tops(game: Game) -> list[list[Any]]:
    return [[r, c, str(p.top), p.face_up, p.height] for (r, c), p in game.piles.items()]


@pytest.mark.parametrize("case", GAMES, ids=lambda case: case["seed"])
def test_whole_game_step_by_step(case: dict[str, Any]) -> None:
    game = Game.new(case["seed"])
    for index, step in enumerate(case["steps"]):
        where = f"step {index}"
        assert game.card == Card.parse(step["card"]), where
        assert [list(move) for move in game.legal_moves()] == step["legal"], where
        game.play(tuple(step["move"]))
        after = step["after"]
        assert tops(game) == after["tops"], where
        assert game.status.value == after["status"], where
        assert game.face_down == after["face_down"], where
        assert game.stock_left == after["stock_left"], where
        assert game.score == after["score"], where
    assert game.status.value == case["result"]
    assert game.score == case["score"]
    assert game.card is None and game.legal_moves() == []


@pytest.mark.parametrize("case", GAMES, ids=lambda case: case["seed"])
def test_search_board_step_by_step(case: dict[str, Any]) -> None:
    # The board the solver and the bots search on plays the same games as the engine.
    board = Board()
    for index, step in enumerate(case["steps"]):
        where = f"step {index}"
        assert [list(board.position(cell)) for cell in board.targets()] == step["legal"], where
        board.place(board.cell(tuple(step["move"])), Card.parse(step["card"]).rank)
        after = step["after"]
        assert [
            [*board.position(cell), board.rank[cell], not board.down >> cell & 1, height]
            for cell, height in ((cell, board.height[cell]) for cell in board.pile_cells())
        ] == [[r, c, Card.parse(top).rank, *rest] for r, c, top, *rest in after["tops"]], where
        assert board.face_down == after["face_down"], where
        assert board.won() == (after["status"] == "won"), where
        assert board.lost() == (after["status"] == "lost" and after["face_down"] > 4), where


def test_conformance_covers_every_ending() -> None:
    endings = set()
    for case in GAMES:
        game = Game.new(case["seed"])
        for step in case["steps"]:
            game.play(tuple(step["move"]))
        endings.add((game.status, game.loss_reason, game.stock_left == 0))
    assert (Status.WON, None, True) in endings
    assert (Status.WON, None, False) in endings
    assert any(status is Status.LOST and reason is not None for status, reason, _ in endings)
    assert len({reason for _, reason, _ in endings if reason}) == 2
