"""The search board agrees with the engine, move for move, and undo restores it exactly."""

from __future__ import annotations

import random

import pytest

from engine import Adjacency, Game, Ruleset, deal
from engine.board import (
    Board,
    box_layout,
    layout,
    mask_triggers,
    repairable,
    repairable_patterns,
    repairable_with_one_stack,
)

RULESETS = [
    Ruleset(),
    Ruleset(adjacency=Adjacency.ANY),
    Ruleset(grid_size=3, pile_capacity=5, face_down_limit=2),
]


@pytest.mark.parametrize("rules", RULESETS, ids=lambda r: r.notation())
def test_board_follows_the_engine_through_random_games(rules: Ruleset) -> None:
    rng = random.Random(7)
    for game_number in range(25):
        game, board = Game.new(f"board-{game_number}", rules), Board(rules)
        tokens = []
        while not game.is_over():
            targets = board.targets()
            assert [board.position(cell) for cell in targets] == game.legal_moves()
            every_cell = range(len(board.rank))
            assert [cell for cell in every_cell if board.is_target(cell)] == targets
            ranks = rng.sample(range(1, 11), rng.randint(1, 10))
            assert board.flip_table(ranks) == [
                (target, [board.flips(target, rank) for rank in ranks]) for target in targets
            ]
            cell = rng.choice(targets)
            rank = game.card.rank if game.card else 0
            predicted = board.after(cell, rank)
            game.play(board.position(cell))
            tokens.append(board.place(cell, rank))
            assert (board.occupied, board.down, board.full) == predicted
            assert (board.face_down, board.piles) == (game.face_down, game.pile_count)
            assert board.won() == (game.score is not None)
            assert_same_piles(board, game)
        for token in reversed(tokens):
            board.undo(token)
        empty = Board(rules)
        assert (board.rank, board.height, board.box, board.at_most) == (
            empty.rank, empty.height, empty.box, empty.at_most
        )
        assert (board.occupied, board.down, board.full) == (0, 0, 0)


def assert_same_piles(board: Board, game: Game) -> None:
    """Every pile of ``game`` is on ``board`` with its top rank, face and height, and the
    board's masks hold nothing else."""
    piles = game.piles
    assert board.pile_cells() == [board.cell(position) for position in piles]
    for position, pile in piles.items():
        cell = board.cell(position)
        assert (board.rank[cell], not board.down >> cell & 1, board.height[cell]) == (
            pile.top.rank, pile.face_up, pile.height
        )
        assert bool(board.full >> cell & 1) == (pile.height >= board.capacity)
        assert [bool(board.at_most[k] >> cell & 1) for k in range(1, 11)] == [
            pile.top.rank <= k for k in range(1, 11)
        ]
    assert board.face_up_ranks() == {pile.top.rank for pile in piles.values() if pile.face_up}


def test_replayed_rejects_an_illegal_move() -> None:
    with pytest.raises(ValueError, match="not a legal move"):
        Board.replayed(Ruleset(), [5, 6], [(0, 0), (0, 2)])
    with pytest.raises(ValueError, match="off the grid"):
        Board.replayed(Ruleset(), [5], [(9, 0)])


def _board_with(faces: dict[tuple[int, int], bool]) -> Board:
    """A board with one pile per position, faces set directly (positions need not be playable)."""
    board = Board()
    for position, face_up in faces.items():
        bit = 1 << board.cell(position)
        board.occupied |= bit
        board.down |= 0 if face_up else bit
    return board


def test_repairable_accepts_a_row_xor_column_pattern() -> None:
    # Row 0 all face down in a 2x2 block: flipping row 0 once repairs it.
    faces = {(0, 0): False, (0, 1): False, (1, 0): True, (1, 1): True}
    assert repairable(_board_with(faces))


def test_repairable_rejects_a_lone_face_down_corner_of_a_block() -> None:
    # One face-down card among face-up ones in a 2x2 block is no row-xor-column pattern.
    faces = {(0, 0): False, (0, 1): True, (1, 0): True, (1, 1): True}
    assert not repairable(_board_with(faces))


def test_repairable_fixes_the_bits_of_full_lines() -> None:
    # A face-down card where a full row meets a full column can only be covered.
    faces = {(0, col): col != 0 for col in range(4)} | {(row, 0): True for row in range(1, 4)}
    assert not repairable(_board_with(faces))
    # With only its row full, a column trigger can still turn it up.
    del faces[(3, 0)]
    assert repairable(_board_with(faces))


@pytest.mark.parametrize("size", [3, 4])
def test_repairable_patterns_are_the_patterns_row_choices_repair(size: int) -> None:
    # The span of the open lines against the search over row bits it replaces.
    rng = random.Random(size)
    for geo in (box_layout(size, Adjacency.EDGE), layout(size, Adjacency.EDGE)):
        for _ in range(3000):
            occupied = rng.getrandbits(geo.cells) & rng.getrandbits(geo.cells)
            down = occupied & rng.getrandbits(geo.cells) & rng.getrandbits(geo.cells)
            expected = mask_triggers(geo, occupied, down) is not None
            assert (down in repairable_patterns(geo, occupied)) == expected


def _can_win(board: Board, ranks: list[int], placed: int, cards: int) -> bool:
    """Whether some ``cards`` legal moves or fewer win, by trying them all."""
    if board.won():
        return True
    if cards == 0 or board.lost():
        return False
    for cell in board.targets():
        token = board.place(cell, ranks[placed])
        found = _can_win(board, ranks, placed + 1, cards - 1)
        board.undo(token)
        if found:
            return True
    return False


def test_one_stack_bound_never_rejects_a_position_won_with_one_card_to_spare() -> None:
    # Positions with one to three empty cells, played mostly onto new piles with few
    # face-down tops (random positions are rarely repairable at all); each is searched
    # exhaustively with one card more than its empty cells.
    seen = set()
    for seed in range(120):
        ranks = [card.rank for card in deal(f"one-stack-{seed}")]
        rng = random.Random(seed)
        board, placed, empty = Board(), 0, rng.choice((1, 2, 3))
        while board.piles < 16 - empty and not board.lost():
            choices = []
            for cell in board.targets():
                if board.occupied >> cell & 1 and rng.random() < 0.8:
                    continue
                token = board.place(cell, ranks[placed])
                choices.append((board.face_down + 2 * rng.random(), cell))
                board.undo(token)
            board.place(min(choices)[1], ranks[placed])
            placed += 1
        if board.lost():
            continue
        bound = repairable_with_one_stack(board.layout, board.occupied, board.down, board.full)
        won = _can_win(board, ranks, placed, empty + 1)
        assert bound or not won
        seen.add((bound, won, board.down in repairable_patterns(board.layout, board.occupied)))
    # The bound rejects positions, and accepts one that only a stacked card wins.
    assert (False, False, False) in seen and (True, True, False) in seen
