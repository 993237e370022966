"""The racer's mirror and the race tracker, fed the protocol messages a server sends."""

from __future__ import annotations

from dataclasses import replace

from client.race_state import RacerMirror, RaceTracker
from engine import Card, Flipped, Game, Ruleset, Status, commitment
from protocol import (
    CardToPlace,
    Flip,
    MovePlaced,
    Progress,
    ProgressEntry,
    RaceFinished,
    RaceOptions,
    RacerInfo,
    RacerStatus,
    RaceSnapshot,
    RaceState,
    Standing,
)

SEED = "foursquare"


def card_message(game: Game, move: int) -> CardToPlace:
    assert game.card is not None
    return CardToPlace(race="r1", move=move, card=game.card,
                       targets=tuple(game.legal_moves()), stock_left=game.stock_left)


def placed_message(game: Game, move: int, position: tuple[int, int]) -> MovePlaced:
    card = game.card
    assert card is not None
    events = game.play(position)
    flips = tuple(
        Flip(row=e.position[0], col=e.position[1], face_up=e.face_up)
        for e in events if isinstance(e, Flipped)
    )
    status = {Status.PLAYING: RacerStatus.RACING, Status.WON: RacerStatus.WON,
              Status.LOST: RacerStatus.LOST}[game.status]
    return MovePlaced(race="r1", move=move, card=card, position=position, flips=flips,
                      face_up=game.face_up, face_down=game.face_down,
                      stock_left=game.stock_left, status=status, score=game.score)


def test_the_mirror_follows_the_server_and_draws_the_same_board() -> None:
    server_game = Game.new(SEED)
    mirror = RacerMirror(Ruleset())
    moves = [(0, 0), (0, 1), (1, 1), (1, 0)]
    for number, move in enumerate(moves, start=1):
        mirror.receive_card(card_message(server_game, number))
        assert mirror.view().targets == tuple(server_game.legal_moves())
        flips = mirror.receive_placed(placed_message(server_game, number, move))
        assert mirror.view().card is None  # nothing in hand until the next card is dealt
        assert mirror.view().piles == _piles(server_game)
        if number == 2:
            assert flips == [(0, 0)]
    mirror.receive_card(card_message(server_game, len(moves) + 1))
    assert mirror.view().card == server_game.card
    assert mirror.view().stock_left == server_game.stock_left


def _piles(game: Game) -> dict[tuple[int, int], object]:
    from client.board import BoardView

    return dict(BoardView.from_game(game).piles)


def test_a_move_applied_while_the_answer_was_lost_is_recovered_from_the_next_card() -> None:
    server_game = Game.new(SEED)
    mirror = RacerMirror(Ruleset())
    mirror.receive_card(card_message(server_game, 1))
    mirror.pending = (1, (0, 0))
    server_game.play((0, 0))  # the server applied it; its "placed" never arrived
    mirror.receive_card(card_message(server_game, 2))
    assert mirror.moves == [(0, 0)]
    assert mirror.in_hand == server_game.card
    assert mirror.pending is None


def test_a_repeated_answer_changes_nothing() -> None:
    server_game = Game.new(SEED)
    mirror = RacerMirror(Ruleset())
    mirror.receive_card(card_message(server_game, 1))
    answer = placed_message(server_game, 1, (0, 0))
    mirror.receive_placed(answer)
    assert mirror.receive_placed(answer) == []
    assert mirror.moves == [(0, 0)]


def snapshot(state: RaceState, progress: tuple[ProgressEntry, ...] = ()) -> RaceSnapshot:
    return RaceSnapshot(
        race="r1", state=state, options=RaceOptions(), commitment=commitment(SEED),
        racers=(RacerInfo(racer="a", name="ann", bot=False, ready=True),
                RacerInfo(racer="b", name="bob", bot=True, ready=True)),
        spectators=0, server_time=0, progress=progress, you="a",
    )


def entry(racer: str, status: RacerStatus, played: int, face_up: int,
          score: int | None = None) -> ProgressEntry:
    return ProgressEntry(racer=racer, name=racer, bot=False, status=status, cards_played=played,
                         face_up=face_up, face_down=0, score=score)


def test_the_leaderboard_puts_winners_first_then_the_most_face_up() -> None:
    tracker = RaceTracker()
    tracker.apply(snapshot(RaceState.RUNNING, (
        entry("a", RacerStatus.RACING, 10, 6),
        entry("b", RacerStatus.RACING, 12, 8),
    )))
    assert [e.racer for e in tracker.leaderboard()] == ["b", "a"]


def finished_race(seed: str, moves: list[tuple[int, int]]) -> RaceFinished:
    game = Game.new(seed)
    for move in moves:
        game.play(move)
    return RaceFinished(
        race="r1", seed=seed, commitment=commitment(seed), ruleset=Ruleset(),
        standings=(Standing(place=1, racer="a", name="ann", bot=False, status=RacerStatus.RESIGNED,
                            score=None, cards_played=game.cards_played, face_up=game.face_up,
                            face_down=game.face_down, finish_ms=1000, moves=tuple(moves)),),
        started_at=0, ended_at=1000,
    )


def test_a_true_result_is_verified_against_the_commitment_seen_before_the_start() -> None:
    tracker = RaceTracker()
    tracker.apply(snapshot(RaceState.RUNNING))
    tracker.apply(finished_race(SEED, [(0, 0), (0, 1)]))
    assert tracker.verify().ok


def test_a_revealed_seed_that_was_not_committed_to_is_caught() -> None:
    tracker = RaceTracker()
    tracker.apply(snapshot(RaceState.RUNNING))
    tracker.apply(finished_race("another seed", [(0, 0)]))
    problems = tracker.verify().problems
    assert problems == ("the revealed seed does not match the published commitment",)


def test_a_false_claim_is_caught() -> None:
    tracker = RaceTracker()
    tracker.apply(snapshot(RaceState.RUNNING))
    finished = finished_race(SEED, [(0, 0), (0, 1)])
    lie = finished.standings[0]
    tracker.apply(replace(finished, standings=(replace(lie, face_up=2, face_down=0),)))
    assert not tracker.verify().ok


def test_cards_are_only_ever_ones_dealt() -> None:
    mirror = RacerMirror(Ruleset())
    mirror.receive_card(CardToPlace(race="r1", move=1, card=Card.parse("TH"), targets=((0, 0),),
                                    stock_left=39))
    assert mirror.racer_view().cards == (Card.parse("TH"),)


def test_the_standings_say_why_a_game_was_lost() -> None:
    from client.screens.results import standings_rows
    from engine import LossReason

    finished = finished_race(SEED, [(0, 0), (0, 1)])
    lost = replace(finished.standings[0], status=RacerStatus.LOST)
    rows = standings_rows(replace(finished, standings=(lost,)), "a", {"a": LossReason.FACE_DOWN})
    assert [cell.plain for cell in rows[0]] == ["1st", "ann (you)", "lost: face down", "", "2",
                                                "1.0 s"]


def test_once_finished_the_leaderboard_is_the_official_standings() -> None:
    tracker = RaceTracker()
    tracker.apply(snapshot(RaceState.RUNNING, (
        entry("a", RacerStatus.RESIGNED, 2, 1),
        entry("b", RacerStatus.RESIGNED, 2, 1),
    )))
    assert [e.racer for e in tracker.leaderboard()] == ["a", "b"]  # a tie: joining order
    finished = finished_race(SEED, [(0, 0), (0, 1)])
    line = finished.standings[0]
    bob_first = (replace(line, racer="b", name="bob"), replace(line, place=2, racer="a"))
    tracker.apply(replace(finished, standings=bob_first))
    assert [e.racer for e in tracker.leaderboard()] == ["b", "a"]


def test_a_racer_away_shows_how_long_before_it_is_counted_out() -> None:
    tracker = RaceTracker()
    away = replace(
        snapshot(RaceState.RUNNING, (entry("a", RacerStatus.RACING, 3, 2),
                                     entry("b", RacerStatus.RACING, 2, 1))),
        server_time=1_000,
    )
    bob = replace(away.racers[1], connected=False, out_at=43_000)
    tracker.apply(replace(away, racers=(away.racers[0], bob)))
    assert tracker.away_notes(0.0) == {"b": "disconnected, out in 0:42"}
    assert tracker.away_notes(2.5) == {"b": "disconnected, out in 0:40"}
    assert tracker.away_notes(60.0) == {"b": "disconnected, out in 0:00"}
    tracker.apply(Progress(race="r1", racers=(entry("b", RacerStatus.RESIGNED, 2, 1),),
                           server_time=43_000))
    assert tracker.away_notes(0.0) == {}  # counted out: its line says so
