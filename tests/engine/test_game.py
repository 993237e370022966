"""Hand-made positions for each rule, and the API's promises (errors, events, copies)."""

from __future__ import annotations

import pytest

from engine import (
    Adjacency,
    Card,
    Flipped,
    Game,
    GameOver,
    IllegalMove,
    LossReason,
    Placed,
    Ruleset,
    Status,
    replay,
)
from engine.game import ReplayError


def stock(*cards: str) -> list[Card]:
    return [Card.parse(text) for text in cards]


def test_card_value_type() -> None:
    ten = Card.parse("TH")
    assert (ten.rank, ten.suit, ten.id, str(ten)) == (10, "H", 29, "TH")
    assert Card.from_id(0) == Card(1, "C") and str(Card.from_id(39)) == "TS"
    assert Card.parse("th") == ten
    every_card = {Card(rank, suit) for rank in range(1, 11) for suit in "CDHS"}
    assert {Card.from_id(i) for i in range(40)} == every_card
    for bad in ("", "T", "1H", "TX", "THH", "KH"):
        with pytest.raises(ValueError):
            Card.parse(bad)
    with pytest.raises(ValueError):
        Card(11, "H")


def test_first_card_goes_at_origin() -> None:
    game = Game(stock("5C", "6C", "7C"))
    assert game.legal_moves() == [(0, 0)]
    with pytest.raises(IllegalMove, match=r"first card goes at \(0, 0\)"):
        game.play((0, 1))
    events = game.play((0, 0))
    assert events == (Placed(Card.parse("5C"), (0, 0), 1),)


def test_higher_card_flips_the_row_but_not_itself() -> None:
    game = Game(stock("5C", "8C", "9C"))
    game.play((0, 0))
    events = game.play((0, 1))
    assert events[1:] == (Flipped((0, 0), Card.parse("5C"), False),)
    assert game.face_down == 1
    assert game.piles[(0, 1)].face_up


def test_equal_rank_does_not_trigger() -> None:
    game = Game(stock("5C", "5D", "9C"))
    game.play((0, 0))
    assert game.play((0, 1))[1:] == ()
    assert game.face_down == 0


def test_card_between_face_up_ranks_does_not_trigger() -> None:
    game = Game(stock("9C", "2C", "7H", "5D", "AS"))
    game.play((0, 0))  # 9C
    game.play((0, 1))  # 2C is lowest: 9C flips down
    game.play((1, 0))  # 7H: column 0 holds only a face-down card, so it flips 9C back up
    assert game.face_down == 0
    assert game.play((0, 2))[1:] == ()  # 5D between 2 and 9: nothing flips
    assert game.face_down == 0


def test_covering_a_face_down_card_removes_it() -> None:
    game = Game(stock("5C", "8C", "AS"))
    game.play((0, 0))
    game.play((0, 1))  # 8 > 5: 5C flips down
    assert game.face_down == 1
    game.play((0, 0))  # AS covers 5C and is lowest: 8C flips down
    assert game.face_down == 1 and game.piles[(0, 0)].face_up


def test_all_face_down_row_flips_everything_up() -> None:
    game = Game(stock("5C", "8C", "2H", "7D"))
    game.play((0, 0))
    game.play((0, 1))  # 8C flips 5C down
    game.play((0, 2))  # 2H is lowest against 8C: flips 5C up and 8C down
    assert [p.face_up for p in game.piles.values()] == [True, False, True]
    game.play((0, 1))  # 7D on the face-down 8C: 5C and 2H face up, 7 is highest
    assert [p.face_up for p in game.piles.values()] == [False, True, False]


def test_row_and_column_both_flip() -> None:
    game = Game(stock("5C", "6C", "7C", "TH"))
    game.play((0, 0))
    game.play((0, 1))  # 6 > 5: 5C down
    game.play((1, 0))  # 7 alone in row 1; column 0 has 5C face down -> flips up
    assert game.face_down == 0
    events = game.play((1, 1))  # TH: row 1 has 7C (up), column 1 has 6C (up): both flip
    assert {e.position for e in events if isinstance(e, Flipped)} == {(1, 0), (0, 1)}


def test_pile_capacity_and_covering() -> None:
    game = Game(stock("5C", "6C", "7C", "8C", "9C", "TC"))
    for _ in range(4):
        game.play((0, 0))
    assert game.piles[(0, 0)].height == 4
    with pytest.raises(IllegalMove, match="full"):
        game.play((0, 0))
    assert (0, 0) not in game.legal_moves()


def test_adjacency_and_box() -> None:
    game = Game(stock(*[f"{r}{s}" for s in "CD" for r in "A23456789T"]))
    game.play((0, 0))
    with pytest.raises(IllegalMove, match="not next to any pile"):
        game.play((1, 1))
    for col in (1, 2, 3):
        game.play((0, col))
    with pytest.raises(IllegalMove, match="beyond 4x4"):
        game.play((0, -1))
    with pytest.raises(IllegalMove, match="outside the 4x4 grid"):
        game.play((0, 4))
    assert all(0 <= c <= 3 for _, c in game.legal_moves())
    diagonal = Game(stock("AC", "2C"), Ruleset(adjacency=Adjacency.ANY))
    diagonal.play((0, 0))
    assert (1, 1) in diagonal.legal_moves()


@pytest.mark.parametrize("bad", [(0,), (0, 0, 0), ("0", 0), (0.0, 0), (True, 0), None, "r0c0"])
def test_malformed_moves_are_illegal_not_crashes(bad: object) -> None:
    game = Game.new("x")
    before = game.notation()
    with pytest.raises(IllegalMove, match="pair of integers"):
        game.play(bad)  # type: ignore[arg-type]
    assert game.notation() == before


def test_loss_by_face_down_limit_and_game_over() -> None:
    game = Game(stock("5C", "6C", "2D", "TD"), Ruleset(face_down_limit=0))
    game.play((0, 0))
    events = game.play((0, 1))
    assert events[-1] == GameOver(Status.LOST, LossReason.FACE_DOWN, None)
    assert game.card is None and game.score is None and game.stock_left == 2
    assert game.legal_moves() == []
    with pytest.raises(IllegalMove, match="game is over"):
        game.play((0, 0))


def test_loss_when_the_stock_runs_out() -> None:
    game = Game(stock("5C", "5D"))
    game.play((0, 0))
    events = game.play((0, 0))
    assert events[-1] == GameOver(Status.LOST, LossReason.STOCK_EMPTY, None)
    assert game.stock_left == 0


def test_win_scores_the_stock_left() -> None:
    # Equal ranks never trigger, so four fives fill a 2x2 grid face up.
    game = Game(stock("5C", "5D", "5H", "5S", "9C", "TC"), Ruleset(grid_size=2, pile_capacity=10))
    for position in [(0, 0), (0, 1), (1, 0)]:
        assert game.play(position)[1:] == ()
    events = game.play((1, 1))
    assert events[-1] == GameOver(Status.WON, None, 2)
    assert game.status is Status.WON and game.score == 2 and game.stock_left == 2


def test_a_ruleset_must_leave_room_for_every_card() -> None:
    with pytest.raises(ValueError, match="hold the whole deck"):
        Ruleset(grid_size=2, pile_capacity=9)
    assert Ruleset(grid_size=2, pile_capacity=10).notation() == "2x2c10f4e"


def test_replay_reports_the_first_illegal_move() -> None:
    with pytest.raises(ReplayError) as caught:
        replay("seed", [(0, 0), (0, 1), (5, 5)])
    assert caught.value.index == 2
    assert caught.value.game.cards_played == 2
    assert isinstance(caught.value, IllegalMove)


def test_copy_is_independent() -> None:
    game = Game.new("copy")
    game.play((0, 0))
    twin = game.copy()
    twin.play((0, 1))
    assert game.cards_played == 1 and twin.cards_played == 2
    assert game.notation() != twin.notation()
    assert game.copy() == game
