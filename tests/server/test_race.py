"""The pure race: commands in, events out, no event loop and no sleeping."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import server.race as race_module
from engine import Card, Game, deal, replay
from protocol import encode
from protocol.examples import EXAMPLES
from protocol.result import RacerOutcome, verify_result
from server.outgoing import event_message, placed_message, snapshot_message
from server.race import (
    Audience,
    Boards,
    CardToPlace,
    Command,
    Join,
    MoveAccepted,
    Phase,
    Place,
    Progress,
    Race,
    RaceChanged,
    RaceError,
    RaceErrorCode,
    RaceFinished,
    RaceOptions,
    Resign,
    Send,
    SharedDeal,
    Tick,
    board_view,
)
from tests.server.known_games import LOST_SEED, WON_SEED, conformance_game

OPEN = RaceOptions(min_racers=2, max_racers=4, countdown=3.0, progress_interval=0.0)


def started_race(seed: str = WON_SEED, options: RaceOptions = OPEN, racers: int = 2) -> Race:
    race = Race("r1", seed, options)
    for index in range(racers):
        race.join(f"p{index}", f"racer {index}", bot=index == 1, now=0.0)
    race.start(now=10.0)
    return race


def phase(race: Race) -> Phase:
    """The race's phase, read afresh (so type checkers do not pin it after one assert)."""
    return race.phase


def events_to(sends: list[Send], recipient: object, kind: type) -> list[object]:
    return [s.event for s in sends if s.to == recipient and isinstance(s.event, kind)]


def cards_in(value: object) -> Iterator[Card]:
    """Every card anywhere inside an event."""
    if isinstance(value, Card):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            yield from cards_in(getattr(value, item.name))
    elif isinstance(value, tuple | list):
        for item in value:
            yield from cards_in(item)


def test_quick_race_counts_down_at_its_minimum_then_deals_everyone_the_same_first_card() -> None:
    race = Race("r1", "seed", OPEN)
    race.join("a", "ann", bot=False, now=0.0)
    assert phase(race) is Phase.LOBBY
    race.join("b", "bob", bot=True, now=1.0)
    assert phase(race) is Phase.COUNTDOWN
    assert race.next_deadline() == 4.0
    assert race.tick(now=3.9) == []
    sends = race.tick(now=4.0)
    assert phase(race) is Phase.RUNNING and race.started_at == 4.0
    first = deal("seed")[0]
    for racer in ("a", "b"):
        (card,) = events_to(sends, racer, CardToPlace)
        assert isinstance(card, CardToPlace)
        assert (card.card, card.move_number, card.targets) == (first, 1, ((0, 0),))


def test_a_full_race_starts_at_once() -> None:
    race = Race("r1", "seed", RaceOptions(min_racers=1, max_racers=2))
    race.join("a", "ann", bot=False, now=0.0)
    assert phase(race) is Phase.COUNTDOWN
    race.join("b", "bob", bot=False, now=0.5)
    assert phase(race) is Phase.RUNNING
    with pytest.raises(RaceError) as error:
        race.join("c", "cy", bot=False, now=0.6)
    assert error.value.code is RaceErrorCode.RACE_STARTED


def test_a_private_race_waits_for_everyone_ready_and_unready_cancels_the_countdown() -> None:
    race = Race("r1", "seed", RaceOptions(min_racers=2, auto_start=False, public=False))
    race.join("a", "ann", bot=False, now=0.0)
    race.join("b", "bob", bot=False, now=0.0)
    race.set_ready("a", True, now=1.0)
    assert phase(race) is Phase.LOBBY
    race.set_ready("b", True, now=2.0)
    assert phase(race) is Phase.COUNTDOWN
    race.set_ready("a", False, now=3.0)
    assert phase(race) is Phase.LOBBY
    assert race.tick(now=100.0) == []
    race.set_ready("a", True, now=101.0)
    race.tick(now=101.0 + race.options.countdown)
    assert phase(race) is Phase.RUNNING


def test_leaving_the_lobby_frees_the_seat_and_stops_the_countdown() -> None:
    race = Race("r1", "seed", OPEN)
    race.join("a", "ann", bot=False, now=0.0)
    race.join("b", "bob", bot=False, now=0.0)
    race.disconnect("b", now=1.0)
    assert race.racer_ids == ["a"] and phase(race) is Phase.LOBBY


def test_a_legal_move_is_acknowledged_to_the_mover_with_the_next_card() -> None:
    race = started_race()
    sends = race.place("p0", 1, (0, 0), now=11.0)
    (accepted,) = events_to(sends, "p0", MoveAccepted)
    assert isinstance(accepted, MoveAccepted)
    assert accepted.card == deal(WON_SEED)[0] and accepted.position == (0, 0)
    (card,) = events_to(sends, "p0", CardToPlace)
    assert isinstance(card, CardToPlace) and card.move_number == 2
    assert events_to(sends, "p1", CardToPlace) == []
    (progress,) = events_to(sends, Audience.EVERYONE, Progress)
    assert isinstance(progress, Progress)
    assert [(line.racer_id, line.cards_played) for line in progress.lines] == [("p0", 1)]


def test_an_illegal_move_is_refused_and_changes_nothing() -> None:
    race = started_race()
    race.place("p0", 1, (0, 0), now=11.0)
    before = race.racer_view("p0", now=12.0)
    with pytest.raises(RaceError) as error:
        race.place("p0", 2, (3, 3), now=12.0)
    assert error.value.code is RaceErrorCode.ILLEGAL_MOVE
    assert "not next to any pile" in error.value.message
    assert race.racer_view("p0", now=12.0) == before
    race.place("p0", 2, (0, 1), now=13.0)


def test_a_repeated_move_number_is_answered_again_not_applied_twice() -> None:
    race = started_race()
    first = race.place("p0", 1, (0, 0), now=11.0)
    again = race.place("p0", 1, (0, 0), now=12.0)
    assert [s for s in first if s.to == "p0"] == again
    # Even with another position: the move was made, the retry only asks what happened.
    assert race.place("p0", 1, (5, 5), now=12.0) == again
    (line,) = [line for line in race.progress_lines() if line.racer_id == "p0"]
    assert line.cards_played == 1


@pytest.mark.parametrize("seed", [WON_SEED, LOST_SEED])
def test_every_earlier_move_is_answered_again_as_it_was_first_answered(seed: str) -> None:
    race = started_race(seed)
    _, moves = conformance_game(seed)
    answers = []
    for number, move in enumerate(moves, start=1):
        (answer,) = events_to(race.place("p0", number, move, now=10.0 + number), "p0",
                              MoveAccepted)
        answers.append(answer)
    race.resign("p1", now=100.0)  # the race ends; answers about p0's moves stay the same
    last = answers[-1]
    assert isinstance(last, MoveAccepted) and last.progress.status in ("won", "lost")
    for number, answer in enumerate(answers, start=1):
        assert events_to(race.place("p0", number, (0, 0), now=101.0), "p0", MoveAccepted) == [
            answer
        ]


@pytest.mark.parametrize("number", [0, 3, -1, 40])
def test_a_move_number_out_of_turn_is_refused(number: int) -> None:
    race = started_race()
    race.place("p0", 1, (0, 0), now=11.0)
    with pytest.raises(RaceError) as error:
        race.place("p0", number, (0, 1), now=12.0)
    assert error.value.code is RaceErrorCode.MOVE_NUMBER


def test_moves_before_the_start_or_by_strangers_are_refused() -> None:
    race = Race("r1", "seed", OPEN)
    race.join("a", "ann", bot=False, now=0.0)
    with pytest.raises(RaceError) as error:
        race.place("a", 1, (0, 0), now=1.0)
    assert error.value.code is RaceErrorCode.NOT_RUNNING
    with pytest.raises(RaceError) as error:
        race.place("zed", 1, (0, 0), now=1.0)
    assert error.value.code is RaceErrorCode.NOT_A_RACER


def play_out(race: Race, racer_id: str, moves: tuple[tuple[int, int], ...], now: float) -> None:
    for number, move in enumerate(moves, start=1):
        race.place(racer_id, number, move, now=now + number)


def test_a_race_ends_when_everyone_is_done_with_standings_and_the_seed_revealed() -> None:
    race = started_race(WON_SEED)
    _, moves = conformance_game(WON_SEED)
    race.resign("p1", now=12.0)
    play_out(race, "p0", moves, now=20.0)
    assert phase(race) is Phase.FINISHED and race.result is not None
    result = race.result
    assert result.seed == WON_SEED
    assert [(e.racer_id, e.outcome) for e in result.racers] == [
        ("p0", RacerOutcome.WON),
        ("p1", RacerOutcome.RESIGNED),
    ]
    winner = result.racers[0]
    assert winner.score == 2 and winner.finish_time == 20.0 + len(moves) - 10.0
    assert winner.moves == moves
    assert result.racers[1].bot
    assert verify_result(result).ok


def test_the_time_limit_times_out_whoever_is_still_playing() -> None:
    options = dataclasses.replace(OPEN, time_limit=60.0)
    race = started_race(LOST_SEED, options)
    race.place("p0", 1, (0, 0), now=11.0)
    assert race.next_deadline() == 70.0
    assert race.tick(now=69.9) == []
    with pytest.raises(RaceError) as late:
        race.place("p0", 2, (0, 1), now=70.0)  # before the clock's tick got to run
    assert late.value.code is RaceErrorCode.NOT_RUNNING
    sends = race.tick(now=70.0)
    (finished,) = events_to(sends, Audience.EVERYONE, RaceFinished)
    assert isinstance(finished, RaceFinished)
    assert [(e.racer_id, e.outcome) for e in finished.result.racers] == [
        ("p0", RacerOutcome.TIMED_OUT),
        ("p1", RacerOutcome.TIMED_OUT),
    ]
    assert verify_result(finished.result).ok


def test_progress_is_coalesced_to_one_update_per_interval_carrying_only_what_changed() -> None:
    options = dataclasses.replace(OPEN, progress_interval=0.1)
    race = started_race(options=options, racers=3)
    first = race.place("p0", 1, (0, 0), now=10.2)
    assert len(events_to(first, Audience.EVERYONE, Progress)) == 1
    assert events_to(race.place("p1", 1, (0, 0), now=10.21), Audience.EVERYONE, Progress) == []
    assert events_to(race.place("p1", 2, (0, 1), now=10.22), Audience.EVERYONE, Progress) == []
    assert race.next_deadline() == pytest.approx(10.3)
    assert race.tick(now=10.25) == []
    (progress,) = events_to(race.tick(now=10.3), Audience.EVERYONE, Progress)
    assert isinstance(progress, Progress)
    assert [(line.racer_id, line.cards_played) for line in progress.lines] == [("p1", 2)]


def test_a_big_lobby_sends_its_snapshot_at_most_once_per_interval() -> None:
    race = Race("r1", "seed", RaceOptions(min_racers=50, max_racers=100, progress_interval=0.1))
    sends = [race.join(f"p{n}", f"p{n}", bot=False, now=n / 100) for n in range(5)]
    assert [len(s) for s in sends] == [1, 0, 0, 0, 0]
    assert race.next_deadline() == pytest.approx(0.1)
    (changed,) = race.tick(now=0.1)
    assert isinstance(changed.event, RaceChanged)
    assert len(changed.event.snapshot.racers) == 5
    assert race.tick(now=0.3) == []


def spectator_boards(sends: list[Send]) -> list[Boards]:
    return [s.event for s in sends if s.to == Audience.SPECTATORS and isinstance(s.event, Boards)]


def test_spectators_see_boards_only_up_to_the_fog_line_and_everything_after_the_finish() -> None:
    race = started_race(WON_SEED)
    race.add_spectator()
    _, moves = conformance_game(WON_SEED)
    sends: list[Send] = []
    for number, move in enumerate(moves[:5], start=1):
        sends += race.place("p0", number, move, now=10.0 + number)
    # p1 has drawn one card only, so nothing of p0's board may show yet.
    assert race.fog_line == 1
    shown = spectator_boards(sends)
    assert shown and all(board.cards_played <= 1 for b in shown for board in b.boards)
    sends = race.place("p1", 1, (0, 0), now=20.0) + race.place("p1", 2, (0, 1), now=21.0)
    assert race.fog_line == 3
    latest = {board.racer_id: board for b in spectator_boards(sends) for board in b.boards}
    assert latest["p0"].cards_played == 3 and latest["p1"].cards_played == 2
    (view,) = [e for e in race.spectator_view(now=22.0) if isinstance(e, Boards)]
    assert {board.racer_id: board.cards_played for board in view.boards} == {"p0": 3, "p1": 2}
    sends = race.resign("p1", now=30.0)
    # p0 is the only racer still racing: its own drawn cards are the fog line.
    assert race.fog_line == 6
    for number, move in enumerate(moves[5:], start=6):
        sends += race.place("p0", number, move, now=30.0 + number)
    assert phase(race) is Phase.FINISHED and race.fog_line is None
    latest = {board.racer_id: board for b in spectator_boards(sends) for board in b.boards}
    assert latest["p0"].cards_played == len(moves)


def test_a_flush_shows_a_bounded_number_of_boards_and_the_rest_follow_in_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(race_module, "BOARDS_PER_FLUSH", 2)
    race = started_race(options=dataclasses.replace(OPEN, max_racers=6), racers=5)
    race.add_spectator()
    _, moves = conformance_game(WON_SEED)
    for racer in ("p0", "p1", "p2", "p3"):
        for number, move in enumerate(moves[:2], start=1):
            race.place(racer, number, move, now=11.0)
    # p4's first move moves the fog line to 2: five boards now show more than before.
    flushes = [spectator_boards(race.place("p4", 1, moves[0], now=12.0))]
    assert race.fog_line == 2
    flushes += [spectator_boards(race.tick(now=now)) for now in (13.0, 14.0, 15.0)]
    assert [sum(len(b.boards) for b in flush) for flush in flushes] == [2, 2, 1, 0]
    latest = {board.racer_id: board.cards_played
              for flush in flushes for b in flush for board in b.boards}
    assert latest == {"p0": 2, "p1": 2, "p2": 2, "p3": 2, "p4": 1}
    assert race.next_deadline() == race.ends_at  # nothing more to flush
    # Moves behind the fog line (p4 still holds it at 2) show at the finish, after the
    # result: every board in full at once, past the limit (no flush follows the finish).
    sends: list[Send] = []
    for racer in ("p0", "p1", "p2", "p3"):
        for number, move in enumerate(moves[2:4], start=3):
            sends += race.place(racer, number, move, now=16.0)
    assert race.fog_line == 2
    for racer in ("p0", "p1", "p2", "p3", "p4"):
        sends += race.resign(racer, now=17.0)
    assert phase(race) is Phase.FINISHED
    final = spectator_boards(sends)[-1]
    assert {board.racer_id: board.cards_played for board in final.boards} == {
        "p0": 4, "p1": 4, "p2": 4, "p3": 4, "p4": 1
    }
    kinds = [type(send.event) for send in sends]
    assert kinds.index(RaceFinished) < len(kinds) - 1 - kinds[::-1].index(Boards)


def test_without_fog_spectators_see_every_move_at_once() -> None:
    race = started_race(options=dataclasses.replace(OPEN, fog=False))
    race.add_spectator()
    sends = race.place("p0", 1, (0, 0), now=11.0) + race.place("p0", 2, (0, 1), now=12.0)
    assert spectator_boards(sends)[-1].boards[0].cards_played == 2


@pytest.mark.parametrize("fog", [True, False])
def test_a_new_spectators_boards_are_each_racers_visible_moves_replayed(fog: bool) -> None:
    """The view kept from one spectator to the next (each board rebuilt only when the
    racer's visible moves changed) shows what a fresh replay of those moves shows."""
    options = dataclasses.replace(OPEN, fog=fog, max_racers=8)
    race = started_race(options=options, racers=4)
    rng = random.Random(7)
    now = 10.0
    for step in range(120):
        racer_id = f"p{rng.randrange(4)}"
        game = race._racers[racer_id].game
        if phase(race) is not Phase.RUNNING:
            break
        if game.card is not None and race._racers[racer_id].outcome is None:
            now += 0.05
            race.place(racer_id, game.cards_played + 1, rng.choice(game.legal_moves()), now)
        if step % 3 == 0:
            race.add_spectator()  # (its boards are kept up to date while anyone watches)
        (view,) = [e for e in race.spectator_view(now) if isinstance(e, Boards)]
        for board in view.boards:
            racer = race._racers[board.racer_id]
            visible = racer.game.cards_played if view.fog_line is None else min(
                racer.game.cards_played, view.fog_line)
            fresh = Game(racer.game.stock, options.ruleset, race.seed)
            for move in racer.game.moves[:visible]:
                fresh.play(move)
            assert board == board_view(board.racer_id, fresh)
    assert race.fog_line is None or fog


def drawn(race: Race, racer_id: str) -> set[Card]:
    """The cards ``racer_id`` has drawn so far: placed ones and the one in hand."""
    game: Game = race._racers[racer_id].game
    count = game.cards_played + (1 if game.card is not None else 0)
    return set(game.stock[:count])


@settings(max_examples=30, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(1, 4))
def test_nothing_addressed_to_a_racer_holds_a_card_it_has_not_drawn(
    rng: random.Random, racers: int
) -> None:
    options = RaceOptions(min_racers=1, max_racers=racers, progress_interval=0.0)
    race = Race("r1", "fair", options)
    ids = [f"p{i}" for i in range(racers)]
    sends: list[Send] = []
    for racer_id in ids:
        sends += race.join(racer_id, racer_id, bot=False, now=0.0)
    race.add_spectator()
    now = 1.0
    while phase(race) is Phase.RUNNING:
        racer_id = rng.choice(ids)
        racer = race._racers[racer_id]
        game = racer.game
        now += 0.05
        if racer.outcome is not None:
            continue
        if rng.random() < 0.02:
            sends = race.resign(racer_id, now)
        else:
            sends = race.place(racer_id, game.cards_played + 1, rng.choice(game.legal_moves()), now)
        fog = race.fog_line
        for send in sends:
            if isinstance(send.event, RaceFinished):
                continue
            if send.to == Audience.SPECTATORS and isinstance(send.event, Boards):
                assert fog is None or all(b.cards_played <= fog for b in send.event.boards)
                continue
            audience = [send.to] if isinstance(send.to, str) else ids
            for addressee in audience:
                assert set(cards_in(send.event)) <= drawn(race, addressee), send
    assert race.result is not None and verify_result(race.result).ok


def test_races_sharing_a_seed_deal_the_same_stock_and_replaying_commands_rebuilds_a_race() -> None:
    _, moves = conformance_game(WON_SEED)
    results = []
    for race_id in ("r1", "r2"):
        race = Race(race_id, WON_SEED, RaceOptions(min_racers=1, max_racers=1))
        race.join("solo", "sol", bot=False, now=0.0)
        play_out(race, "solo", moves, now=5.0)
        assert race.result is not None
        results.append(race.result)
    assert results[0].racers == results[1].racers


def test_options_out_of_range_are_refused_with_a_reason() -> None:
    with pytest.raises(ValueError, match="max_racers"):
        RaceOptions(max_racers=1001)
    with pytest.raises(ValueError, match="min_racers"):
        RaceOptions(max_racers=2, min_racers=3)
    with pytest.raises(ValueError, match="time_limit"):
        RaceOptions(time_limit=0)
    options = RaceOptions(max_racers=3, fog=False)
    assert RaceOptions.from_dict(options.to_dict()) == options


def test_races_sharing_a_deal_share_the_fog_and_hold_back_their_results() -> None:
    # A tournament round deals several races one seed: a racer watching another race of
    # the round, or reading its result, must learn nothing it has not drawn.
    shared = SharedDeal()
    first, second = Race("a", WON_SEED, OPEN), Race("b", WON_SEED, OPEN)
    for race in (first, second):
        race.share_deal(shared)
        race.join(f"{race.race_id}0", "ann", bot=False, now=0.0)
        race.join(f"{race.race_id}1", "bob", bot=False, now=0.0)
        race.start(now=10.0)
    first.add_spectator()
    _, moves = conformance_game(WON_SEED)
    sends: list[Send] = []
    for racer_id in ("a0", "a1"):
        for number, move in enumerate(moves, start=1):
            sends += first.place(racer_id, number, move, now=10.0 + number)
    # Everyone in race "a" has won, but race "b" has drawn one card each.
    assert first.fog_line == 1 == second.fog_line
    assert all(board.cards_played <= 1 for b in spectator_boards(sends) for board in b.boards)
    assert phase(first) is Phase.RUNNING
    assert not events_to(sends, Audience.EVERYONE, RaceFinished)
    assert first.next_deadline() is not None
    assert first.tick(now=60.0) == []  # still held: "b" goes on
    sends = second.resign("b0", now=61.0) + second.resign("b1", now=62.0)
    assert phase(second) is Phase.FINISHED  # the last race of the deal ends at once
    sends = first.tick(now=63.0)
    assert phase(first) is Phase.FINISHED and first.fog_line is None
    (finished,) = events_to(sends, Audience.EVERYONE, RaceFinished)
    assert isinstance(finished, RaceFinished) and finished.result.seed == WON_SEED
    latest = {board.racer_id: board for b in spectator_boards(sends) for board in b.boards}
    assert latest["a0"].cards_played == len(moves)


def as_bytes(race: Race, send: Send, now: float) -> bytes | None:
    """The bytes the shell would send for ``send`` (``None`` for events it does not send)."""
    event = send.event
    if isinstance(event, RaceChanged):
        message = snapshot_message(event.snapshot, race.progress_lines(), 0, lambda _: True)
        return encode(message)
    built = event_message(race.race_id, event, now)
    return None if built is None else encode(built)


def addressed_to(send: Send, racer_id: str) -> bool:
    return send.to == racer_id or send.to in (Audience.RACERS, Audience.EVERYONE)


@settings(max_examples=40, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(2, 4), st.integers(1, 24))
def test_what_a_racer_receives_depends_only_on_the_cards_it_has_drawn(
    rng: random.Random, racers: int, drawn_cards: int
) -> None:
    # Two deals alike in their first ``drawn_cards`` cards, raced move for move alike: a
    # racer that has drawn no more than those cards must receive the same bytes in both.
    # (Rivals' counts ahead of it would differ: the cards after differ.)
    stock = deal("counts")
    tail = stock[drawn_cards:]
    rng.shuffle(tail)
    options = RaceOptions(min_racers=1, max_racers=racers, progress_interval=0.0)
    twins = [Race("r1", "counts", options), Race("r1", "counts", options)]
    twins[1]._stock = stock[:drawn_cards] + tail
    ids = [f"p{i}" for i in range(racers)]
    observer = ids[0]
    received: list[list[bytes]] = [[], []]

    def run(command: Command, now: float) -> None:
        for race, seen in zip(twins, received, strict=True):
            for send in race.apply(command, now):
                data = as_bytes(race, send, now) if addressed_to(send, observer) else None
                if data is not None:
                    seen.append(data)

    for racer_id in ids:
        run(Join(racer_id, racer_id, bot=False), 0.0)
    now = 1.0
    playing = set(ids)  # racers still commanded: the observer stays in the race, holding
    while playing:      # card ``drawn_cards`` once it has placed those before
        racer_id = rng.choice(sorted(playing))
        games = [race._racers[racer_id].game for race in twins]
        now += 0.05
        if racer_id == observer and games[0].cards_played + 1 >= drawn_cards:
            playing.discard(observer)  # holding card ``drawn_cards``: it stops here
            continue
        if racer_id != observer and rng.random() < 0.03:
            run(Resign(racer_id), now)
        else:
            run(Place(racer_id, games[0].cards_played + 1, rng.choice(games[0].legal_moves())),
                now)
        for race in twins:
            if race._racers[racer_id].outcome is not None:
                playing.discard(racer_id)
    if twins[0]._racers[observer].outcome is not None:
        return  # its game ended within its cards: the rest of the race is no longer hidden
    run(Tick(), now + 1.0)
    assert received[0] == received[1]


def test_a_rival_ahead_shows_its_counts_as_of_the_cards_everyone_racing_has_drawn() -> None:
    race = started_race(WON_SEED)
    _, moves = conformance_game(WON_SEED)
    sends: list[Send] = []
    for number, move in enumerate(moves, start=1):
        sends += race.place("p0", number, move, now=10.0 + number)
    # p0 has won, p1 holds its first card: p0's counts show as after one move, its cards
    # played and its end are live, and how it ended waits.
    (ahead,) = [line for line in race.progress_lines() if line.racer_id == "p0"]
    after_one = replay(WON_SEED, moves[:1])
    assert (ahead.status, ahead.cards_played, ahead.face_up, ahead.face_down) == (
        "racing", len(moves), after_one.face_up, after_one.face_down,
    )
    assert ahead.score is None and ahead.finish_time is None
    sent = [line for p in events_to(sends, Audience.EVERYONE, Progress)
            for line in p.lines if line.racer_id == "p0"]  # type: ignore[attr-defined]
    assert sent and all(line.status == "racing" and line.face_up <= 1 for line in sent)
    assert race.place("p1", 1, (0, 0), now=60.0)
    (ahead,) = [line for line in race.progress_lines() if line.racer_id == "p0"]
    after_two = replay(WON_SEED, moves[:2])  # p1 now holds its second card
    assert (ahead.face_up, ahead.face_down) == (after_two.face_up, after_two.face_down)
    sends = race.resign("p1", now=61.0)
    assert len(events_to(sends, Audience.EVERYONE, RaceFinished)) == 1
    last = [line for p in events_to(sends, Audience.EVERYONE, Progress)
            for line in p.lines if line.racer_id == "p0"]  # type: ignore[attr-defined]
    assert [(line.status, line.face_up, line.score) for line in last] == [("won", 16, 2)]


def test_a_count_line_that_passes_a_finished_game_shows_it_whole_a_hundred_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(race_module, "LINES_SWEPT_PER_FLUSH", 2)
    race = started_race(options=dataclasses.replace(OPEN, max_racers=6), racers=5)
    _, moves = conformance_game(WON_SEED)
    whole, first = replay(WON_SEED, moves[:5]), replay(WON_SEED, moves[:1])
    assert (whole.face_up, whole.face_down) != (first.face_up, first.face_down)
    for racer in ("p0", "p1", "p2", "p3"):
        for number, move in enumerate(moves[:5], start=1):
            race.place(racer, number, move, now=11.0)
        race.resign(racer, now=11.5)
    # p4 holds the count line at 1; its moves lift it to 5: the four games, over and
    # ahead of the line until then, now show whole, two lines an update.
    flushes = [race.place("p4", n, moves[n - 1], now=12.0) for n in range(1, 5)]
    flushes += [race.tick(now=now) for now in (13.0, 14.0, 15.0)]
    lines = [[line for p in events_to(flush, Audience.EVERYONE, Progress)
              for line in p.lines] for flush in flushes]  # type: ignore[attr-defined]
    swept = [line for flush in lines[3:] for line in flush if line.racer_id != "p4"]
    assert max(len(flush) for flush in lines) <= 3  # p4's own, and two swept
    assert sorted(line.racer_id for line in swept) == ["p0", "p1", "p2", "p3"]
    assert {(line.status, line.face_up, line.face_down) for line in swept} == {
        ("resigned", whole.face_up, whole.face_down)
    }
    assert race.next_deadline() == race.ends_at


def test_a_racer_away_longer_than_the_grace_is_counted_out_and_the_race_goes_on() -> None:
    race = started_race(options=dataclasses.replace(OPEN, reconnect_grace=60.0))
    race.place("p0", 1, (0, 0), now=12.0)
    assert race.disconnect("p1", now=20.0) == []
    (away,) = [r for r in race.snapshot(now=20.0).racers if r.racer_id == "p1"]
    assert away.out_at == 80.0
    assert race.next_deadline() == 80.0
    race.resign("p0", now=30.0)
    assert phase(race) is Phase.RUNNING  # p1 may still come back
    sends = race.tick(now=80.0)
    assert phase(race) is Phase.FINISHED
    (finished,) = events_to(sends, Audience.EVERYONE, RaceFinished)
    assert isinstance(finished, RaceFinished)
    entry = {e.racer_id: e for e in finished.result.racers}["p1"]
    assert (entry.outcome, entry.finish_time) == (RacerOutcome.RESIGNED, 70.0)
    assert verify_result(finished.result).ok


def test_a_racer_back_within_the_grace_races_on() -> None:
    race = started_race(options=dataclasses.replace(OPEN, reconnect_grace=60.0))
    race.disconnect("p1", now=20.0)
    race.reconnect("p1", now=79.0)
    assert all(r.out_at is None for r in race.snapshot(now=79.0).racers)
    assert race.next_deadline() == race.ends_at
    race.tick(now=200.0)
    assert race.place("p1", 1, (0, 0), now=201.0)


def test_counting_out_does_not_depend_on_the_clock_ticking() -> None:
    # The journal replays commands without ticks: a racer counted out by a tick and one
    # counted out by the next command end the same, at the grace's end.
    options = dataclasses.replace(OPEN, reconnect_grace=60.0)
    ticked, replayed = started_race(options=options), started_race(options=options)
    for race in (ticked, replayed):
        race.disconnect("p1", now=20.0)
    ticked.tick(now=85.0)
    for race in (ticked, replayed):
        race.place("p0", 1, (0, 0), now=100.0)
    assert ticked.progress_lines() == replayed.progress_lines()
    assert [line.status for line in replayed.progress_lines()] == ["racing", "resigned"]
    assert replayed._racers["p1"].finish_time == 70.0


def test_a_countdown_nobody_can_hold_off_keeps_its_seats() -> None:
    options = RaceOptions(max_racers=3, min_racers=1, auto_start=False, countdown=5.0)
    race = Race("t1", WON_SEED, options)
    for racer_id in ("a", "b", "c"):
        race.join(racer_id, racer_id, bot=False, now=0.0)
    (changed,) = race.start_countdown(now=1.0)
    assert isinstance(changed.event, RaceChanged)
    assert (phase(race), race.countdown_ends_at, race.is_open) == (Phase.COUNTDOWN, 6.0, False)
    race.disconnect("b", now=2.0)  # away, not gone: its grace runs
    race.leave("c", now=3.0)  # resigned from the start
    race.set_ready("a", False, now=3.0)
    with pytest.raises(RaceError) as refused:
        race.join("d", "d", bot=False, now=3.0)
    assert refused.value.code is RaceErrorCode.RACE_STARTED
    sends = race.tick(now=6.0)
    assert phase(race) is Phase.RUNNING and race.racer_ids == ["a", "b", "c"]
    assert {s.to for s in sends if isinstance(s.event, CardToPlace)} == {"a", "b"}
    assert [line.status for line in race.progress_lines()] == ["racing", "racing", "resigned"]


def test_a_full_race_that_waits_for_everyone_ready_still_counts_down() -> None:
    race = Race("r1", "seed", RaceOptions(max_racers=2, auto_start=False, countdown=1.0))
    race.join("a", "ann", bot=False, now=0.0)
    race.join("b", "bob", bot=False, now=0.0)
    race.set_ready("a", True, now=1.0)
    race.set_ready("b", True, now=2.0)
    assert (phase(race), race.countdown_ends_at) == (Phase.COUNTDOWN, 3.0)
    race.tick(now=3.0)
    assert phase(race) is Phase.RUNNING


def test_a_lobby_shows_its_racers_waiting() -> None:
    race = Race("r1", "seed", OPEN)
    race.join("a", "ann", bot=False, now=0.0)
    progress = [e for e in race.spectator_view(now=0.0) if isinstance(e, Progress)]
    assert [line.status for p in progress for line in p.lines] == ["waiting"]


def test_the_documented_card_and_placed_examples_are_what_the_server_sends() -> None:
    race = Race("r-8f3a", "foursquare", RaceOptions(min_racers=1, max_racers=1))
    race.join("p1", "Ann", bot=False, now=0.0)
    race.place("p1", 1, (0, 0), now=1.0)
    (card,) = [s.event for s in race.place("p1", 1, (0, 0), now=1.0)
               if isinstance(s.event, CardToPlace)]
    (accepted,) = [s.event for s in race.place("p1", 2, (0, 1), now=2.0)
                   if isinstance(s.event, MoveAccepted)]
    assert EXAMPLES["card"] == event_message("r-8f3a", card, 2.0)
    assert EXAMPLES["placed"] == placed_message("r-8f3a", accepted, 7)
