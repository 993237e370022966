"""Properties of random legal games, checked against the naive reference implementation."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from engine import Adjacency, Game, IllegalMove, Ruleset, Status, format_moves, parse_moves, replay
from engine.board import Board
from engine.cards import RANK_LETTERS
from engine.reference import ReferenceGame


@st.composite
def rulesets(draw: st.DrawFn) -> Ruleset:
    """Any valid ruleset: the piles must be able to hold the whole deck."""
    size = draw(st.integers(2, 6))
    return Ruleset(
        grid_size=size,
        pile_capacity=draw(st.integers(-(-40 // size**2), 10)),
        face_down_limit=draw(st.integers(0, 6)),
        adjacency=draw(st.sampled_from(Adjacency)),
    )


seeds = st.text(max_size=12)


def random_game(data: st.DataObject, seed: str, rules: Ruleset) -> tuple[Game, list[Game]]:
    """Play a random legal game; return it with the position before every move."""
    game = Game.new(seed, rules)
    history = [game.copy()]
    while not game.is_over():
        game.play(data.draw(st.sampled_from(game.legal_moves())))
        history.append(game.copy())
    return game, history


@settings(max_examples=60, deadline=None)
@given(st.data(), seeds, rulesets())
def test_engine_and_search_board_agree_with_the_reference(
    data: st.DataObject, seed: str, rules: Ruleset
) -> None:
    game = Game.new(seed, rules)
    reference = ReferenceGame(list(game.stock), rules)
    board = Board(rules)
    while not game.is_over():
        assert game.legal_moves() == reference.legal_moves()
        assert [board.position(cell) for cell in board.targets()] == reference.legal_moves()
        assert game.card == reference.current()
        move = data.draw(st.sampled_from(game.legal_moves()))
        card = game.card
        assert card is not None
        game.play(move)
        reference = reference.play(move)
        board.place(board.cell(move), card.rank)
        tops = reference.tops()
        assert [(r, c, str(p.top), p.face_up, p.height) for (r, c), p in game.piles.items()] == (
            tops
        )
        assert board_tops(board) == [(r, c, top[0], up, height) for r, c, top, up, height in tops]
        assert game.status.value == reference.status
        too_many_down = board.face_down > rules.face_down_limit
        assert board.lost() == (reference.status == "lost" and too_many_down)
        assert board.won() == (reference.status == "won")


def board_tops(board: Board) -> list[tuple[int, int, str, bool, int]]:
    """Every pile of a search board as the reference lists it, the top's rank as its letter."""
    return [
        (*board.position(cell), RANK_LETTERS[board.rank[cell] - 1], not board.down >> cell & 1,
         board.height[cell])
        for cell in board.pile_cells()
    ]


@settings(max_examples=60, deadline=None)
@given(st.data(), seeds, rulesets())
def test_invariants_hold_after_every_move(data: st.DataObject, seed: str, rules: Ruleset) -> None:
    game, history = random_game(data, seed, rules)
    for position in history:
        piles = position.piles
        assert all(1 <= pile.height <= rules.pile_capacity for pile in piles.values())
        rows = [r for r, _ in piles] or [0]
        cols = [c for _, c in piles] or [0]
        assert max(rows) - min(rows) < rules.grid_size
        assert max(cols) - min(cols) < rules.grid_size
        placed = [card for pile in piles.values() for card in pile.cards]
        in_hand = [position.card] if position.card else []
        unseen = list(position.stock[position.cards_played + len(in_hand) :])
        assert len(unseen) == position.stock_left
        assert Counter(placed + in_hand + unseen) == Counter(position.stock)
        assert position.face_down == sum(not p.face_up for p in piles.values())
        assert position.face_down <= rules.face_down_limit or position.status is Status.LOST
    assert game.score == (game.stock_left if game.status is Status.WON else None)


@settings(max_examples=60, deadline=None)
@given(st.data(), seeds, rulesets())
def test_notation_round_trips(data: st.DataObject, seed: str, rules: Ruleset) -> None:
    _, history = random_game(data, seed, rules)
    for position in history:
        text = position.notation()
        again = Game.from_notation(text)
        assert again.notation() == text
        assert (again.status, again.loss_reason, again.score, again.card) == (
            position.status,
            position.loss_reason,
            position.score,
            position.card,
        )
        assert again.legal_moves() == position.legal_moves()


@settings(max_examples=60, deadline=None)
@given(st.data(), seeds, rulesets())
def test_replay_equals_live_play(data: st.DataObject, seed: str, rules: Ruleset) -> None:
    game, _ = random_game(data, seed, rules)
    again = replay(seed, parse_moves(format_moves(game.moves)), rules)
    assert again.notation() == game.notation()
    assert again.status is game.status and again.score == game.score


@settings(max_examples=60, deadline=None)
@given(st.data(), seeds, st.tuples(st.integers(-9, 9), st.integers(-9, 9)))
def test_an_illegal_move_changes_nothing(
    data: st.DataObject, seed: str, target: tuple[int, int]
) -> None:
    game = Game.new(seed)
    for _ in range(data.draw(st.integers(0, 40))):
        if game.is_over():
            break
        game.play(data.draw(st.sampled_from(game.legal_moves())))
    if target in game.legal_moves():
        return
    before = game.notation()
    try:
        game.play(target)
    except IllegalMove as error:
        assert str(error)
    else:
        raise AssertionError(f"{target} was accepted but not listed as legal")
    assert game.notation() == before


@settings(max_examples=40, deadline=None)
@given(st.data(), seeds)
def test_copy_is_independent_of_the_original(data: st.DataObject, seed: str) -> None:
    game = Game.new(seed)
    for _ in range(data.draw(st.integers(0, 20))):
        if game.is_over():
            break
        twin = game.copy()
        before = game.notation()
        twin.play(data.draw(st.sampled_from(twin.legal_moves())))
        assert game.notation() == before
        game.play(data.draw(st.sampled_from(game.legal_moves())))
