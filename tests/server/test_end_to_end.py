"""The real server on a free port, real websocket clients: races from hello to standings."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from cli.main import main as foursquare
from engine import Position, deal
from engine.solver import par as solve_par
from protocol import (
    Boards,
    CardToPlace,
    CloseCode,
    CreateRace,
    Error,
    ErrorCode,
    Hello,
    JoinRace,
    MovePlaced,
    Ok,
    Place,
    Progress,
    QuickRace,
    RaceFinished,
    RaceOptions,
    RacePar,
    RacerStatus,
    RaceSnapshot,
    RaceState,
    Resign,
    Role,
    ServerMessage,
    Spectate,
    decode_server,
    encode,
    encode_wire,
)
from protocol.result import verify_result
from server.config import ServerConfig
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.server.known_games import WON_SEED, conformance_game
from tests.server.wire_client import TIMEOUT, WireClient

WON_MOVES = conformance_game(WON_SEED)[1]
STOCK = deal(WON_SEED)

#: A private two-racer race that starts as soon as both are in.
DUEL = RaceOptions(max_racers=2, min_racers=2, countdown=0, public=False, time_limit=600)


@pytest.fixture
def server_config(tmp_path: Path) -> ServerConfig:
    # A known seed, so a racer can play a known winning game.
    return dataclasses.replace(fast_config(tmp_path / "race.db"), seed_source=lambda: WON_SEED)


async def start_duel(live: LiveServer, options: RaceOptions = DUEL) -> tuple[WireClient, ...]:
    """Ann opens a private race, Bob (a bot) joins by code; both hold their first card."""
    ann = await WireClient.connect(live.url, "ann")
    bob = await WireClient.connect(live.url, "bob", bot=True)
    await ann.send(CreateRace(options=options, id=ann.next_id()))
    snapshot = await ann.expect(RaceSnapshot)
    assert snapshot.you == ann.racer_id and snapshot.state is RaceState.LOBBY
    assert (snapshot.code is None) == options.public  # only private races have a code
    await bob.send(JoinRace(race=snapshot.code or snapshot.race, id=bob.next_id()))
    for racer in (ann, bob):
        card = await racer.expect(CardToPlace)
        assert (card.move, card.card) == (1, STOCK[0])
    return ann, bob


async def place(racer: WireClient, race: str, move: int, position: Position) -> ServerMessage:
    """Send a move; return the ``placed`` or ``error`` that answers it."""
    request = racer.next_id()
    await racer.send(Place(race=race, move=move, row=position[0], col=position[1], id=request))
    while True:
        message = await racer.receive()
        if isinstance(message, MovePlaced | Error) and message.reply_to == request:
            return message


async def play(racer: WireClient, race: str, moves: tuple[Position, ...], first: int = 1) -> None:
    for number, move in enumerate(moves, start=first):
        answer = await place(racer, race, number, move)
        assert isinstance(answer, MovePlaced), answer


def race_of(racer: WireClient) -> str:
    snapshots = [m for m in racer.received if isinstance(m, RaceSnapshot)]
    return snapshots[-1].race


async def test_two_racers_race_from_hello_to_standings_that_verify(
    live_server: LiveServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ann, bob = await start_duel(live_server)
    race = race_of(ann)
    commitment = [m for m in ann.received if isinstance(m, RaceSnapshot)][-1].commitment
    await bob.send(Resign(race=race, id=bob.next_id()))
    await bob.expect(Ok, in_reply_to="resign")
    await play(ann, race, WON_MOVES)
    results = [await racer.expect(RaceFinished) for racer in (ann, bob)]
    assert results[0] == dataclasses.replace(results[1], reply_to=results[0].reply_to)
    finished = results[0]
    assert finished.seed == WON_SEED and finished.commitment == commitment
    winner, loser = finished.standings
    assert (winner.racer, winner.status, winner.score, winner.bot) == (
        ann.racer_id, RacerStatus.WON, 2, False,
    )
    assert (loser.racer, loser.status, loser.bot) == (bob.racer_id, RacerStatus.RESIGNED, True)
    assert winner.moves == WON_MOVES
    assert verify_result(finished.to_result()).ok
    for racer in (ann, bob):
        racer.assert_nothing_undrawn(STOCK)

    saved = tmp_path / "result.json"
    saved.write_text(json.dumps(encode_wire(finished)))
    assert foursquare(["verify", str(saved)]) == 0
    assert "verified" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO(saved.read_text()))  # verify - reads stdin
    assert foursquare(["verify", "-"]) == 0
    assert "verified" in capsys.readouterr().out
    # The record the server journaled before announcing the finish verifies too.
    capsys.readouterr()
    assert foursquare(["result", race, "--db", str(live_server.db_path)]) == 0
    saved.write_text(capsys.readouterr().out)
    assert foursquare(["verify", str(saved)]) == 0
    assert foursquare(["result", "NOSUCHRACE", "--db", str(live_server.db_path)]) == 1
    forged = encode_wire(finished)
    forged["standings"][0]["score"] = 9
    saved.write_text(json.dumps(forged))
    assert foursquare(["verify", str(saved)]) == 1
    assert "REFUTED" in capsys.readouterr().out
    saved.write_text("{not json")
    assert foursquare(["verify", str(saved)]) == 2
    await ann.close()
    await bob.close()


async def test_a_quick_race_assembles_itself(live_server: LiveServer) -> None:
    clients = [await WireClient.connect(live_server.url, name) for name in ("ann", "bob")]
    snapshots = []
    for client in clients:
        await client.send(QuickRace(id=client.next_id()))
        snapshots.append(await client.expect(RaceSnapshot))
    assert snapshots[0].race == snapshots[1].race
    assert snapshots[0].state is RaceState.LOBBY
    assert snapshots[1].state is RaceState.COUNTDOWN and snapshots[1].starts_at is not None
    for client in clients:
        running = await client.expect(RaceSnapshot, state=RaceState.RUNNING)
        assert {r.racer for r in running.racers} == {c.racer_id for c in clients}
        assert (await client.expect(CardToPlace)).move == 1
        await client.close()


async def test_an_illegal_move_is_refused_and_the_game_goes_on_unchanged(
    live_server: LiveServer,
) -> None:
    ann, bob = await start_duel(live_server)
    race = race_of(ann)
    await play(ann, race, WON_MOVES[:1])
    refused = await place(ann, race, 2, (3, 3))
    assert isinstance(refused, Error)
    assert refused.code is ErrorCode.ILLEGAL_MOVE and "(3, 3)" in refused.message
    assert refused.in_reply_to == "place"
    await play(ann, race, WON_MOVES[1:3], first=2)
    out_of_turn = await place(ann, race, 9, (0, 0))
    assert isinstance(out_of_turn, Error) and out_of_turn.code is ErrorCode.BAD_MOVE_NUMBER
    again = await ann.expect(CardToPlace)
    assert (again.move, again.card) == (4, STOCK[3])
    await ann.close()
    await bob.close()


async def test_a_repeated_move_number_is_answered_again_not_applied_twice(
    live_server: LiveServer,
) -> None:
    ann, bob = await start_duel(live_server)
    race = race_of(ann)
    first = await place(ann, race, 1, WON_MOVES[0])
    again = await place(ann, race, 1, WON_MOVES[0])
    assert isinstance(first, MovePlaced) and isinstance(again, MovePlaced)
    assert dataclasses.replace(again, reply_to=None) == dataclasses.replace(first, reply_to=None)
    assert (await ann.expect(CardToPlace)).move == 2
    progress = await bob.expect(Progress)
    assert [(e.racer, e.cards_played) for e in progress.racers] == [(ann.racer_id, 1)]
    second = await place(ann, race, 2, WON_MOVES[1])
    # Two cards placed and one in hand: 37 left, as after exactly two moves.
    assert isinstance(second, MovePlaced) and second.stock_left == 37
    await ann.close()
    await bob.close()


async def test_a_racer_reconnects_with_its_token_and_finds_its_race_as_it_left_it(
    live_server: LiveServer,
) -> None:
    ann, bob = await start_duel(live_server)
    race = race_of(ann)
    await play(ann, race, WON_MOVES[:6])
    token = ann.welcome.resume
    await ann.close()

    back = await WireClient.connect(live_server.url, "ann again", resume=token)
    assert back.welcome.resumed and back.welcome.session == ann.racer_id
    assert back.welcome.name == "ann"
    snapshot = await back.expect(RaceSnapshot)
    assert snapshot.you == ann.racer_id and snapshot.state is RaceState.RUNNING
    board = await back.expect(Boards)
    assert board.boards[0].racer == ann.racer_id and board.boards[0].shown == 6
    card = await back.expect(CardToPlace)
    assert (card.move, card.card) == (7, STOCK[6])
    await play(back, race, WON_MOVES[6:], first=7)
    await bob.send(Resign(race=race, id=bob.next_id()))
    finished = await back.expect(RaceFinished)
    assert finished.standings[0].racer == ann.racer_id
    back.assert_nothing_undrawn(STOCK)
    await back.close()
    await bob.close()


async def test_the_other_racers_see_a_racer_drop_and_come_back_mid_race(
    live_server: LiveServer,
) -> None:
    ann, bob = await start_duel(live_server)
    race = race_of(ann)
    await play(ann, race, WON_MOVES[:2])
    token = ann.welcome.resume
    await ann.close()

    def ann_connected(snapshot: RaceSnapshot) -> bool:
        (info,) = [r for r in snapshot.racers if r.racer == ann.racer_id]
        return info.connected

    def ann_out_at(snapshot: RaceSnapshot) -> int | None:
        (info,) = [r for r in snapshot.racers if r.racer == ann.racer_id]
        return info.out_at

    seen = await bob.expect(RaceSnapshot)
    assert seen.state is RaceState.RUNNING and not ann_connected(seen)
    out_at = ann_out_at(seen)  # the grace's end: 60 s from the drop, by default
    assert out_at is not None and 59_000 <= out_at - seen.server_time <= 60_000
    back = await WireClient.connect(live_server.url, "ann", resume=token)
    while not ann_connected(seen):
        seen = await bob.expect(RaceSnapshot)
    assert seen.state is RaceState.RUNNING and seen.you == bob.racer_id  # its own copy
    assert ann_out_at(seen) is None  # back in time: it races on
    await back.close()
    await bob.close()


async def test_a_racer_who_quits_is_counted_out_after_the_grace_and_the_race_ends(
    server_config: ServerConfig,
) -> None:
    config = dataclasses.replace(server_config, reconnect_grace=1.0)
    async with start_live_server(config) as live:
        ann, bob = await start_duel(live)
        race = race_of(ann)
        await play(bob, race, WON_MOVES[:3])
        await bob.close()  # gone for good
        await ann.send(Resign(race=race, id=ann.next_id()))
        # Not the whole time limit (600 s): the grace, then the race is over.
        finished = await ann.expect(RaceFinished)
        status = {s.racer: (s.status, s.finish_ms) for s in finished.standings}
        assert status[ann.racer_id][0] is RacerStatus.RESIGNED
        assert status[bob.racer_id][0] is RacerStatus.RESIGNED
        snapshots = [m for m in ann.received if isinstance(m, RaceSnapshot)]
        (away,) = [r for m in snapshots for r in m.racers
                   if r.racer == bob.racer_id and r.out_at is not None][:1]
        assert away.out_at is not None
        # Each time is rounded to the millisecond on its own: the difference of two
        # rounded times may be one off the rounded difference.
        finish_ms = status[bob.racer_id][1]
        assert finish_ms is not None
        assert abs(finish_ms - (away.out_at - finished.started_at)) <= 1
        assert verify_result(finished.to_result()).ok
        await ann.close()


async def test_spectating_a_lobby_shows_its_racers_waiting(live_server: LiveServer) -> None:
    ann = await WireClient.connect(live_server.url, "ann")
    await ann.send(CreateRace(options=dataclasses.replace(DUEL, public=True), id=ann.next_id()))
    lobby = await ann.expect(RaceSnapshot)
    watcher = await WireClient.connect(live_server.url, "watcher", role=Role.SPECTATOR)
    await watcher.send(Spectate(race=lobby.race, id=watcher.next_id()))
    progress = await watcher.expect(Progress)
    assert [(e.racer, e.status) for e in progress.racers] == [
        (ann.racer_id, RacerStatus.WAITING)
    ]
    await watcher.close()
    await ann.close()


async def test_a_wrong_token_is_refused_and_closed(live_server: LiveServer) -> None:
    async with connect(live_server.url) as mallory:
        await mallory.send(encode(Hello(name="mallory", bot=False, resume="A" * 22, id=1)))
        refusal = decode_server(await asyncio.wait_for(mallory.recv(), TIMEOUT))
        assert isinstance(refusal, Error) and refusal.code is ErrorCode.INVALID_TOKEN
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(mallory.recv(), TIMEOUT)
        assert mallory.close_code == CloseCode.INVALID_TOKEN


async def test_a_spectator_sees_boards_behind_the_fog_during_the_race_and_all_after(
    live_server: LiveServer,
) -> None:
    ann, bob = await start_duel(live_server, dataclasses.replace(DUEL, public=True))
    race = race_of(ann)
    watcher = await WireClient.connect(live_server.url, "watcher", role=Role.SPECTATOR)
    await watcher.send(Spectate(race=race, id=watcher.next_id()))
    await watcher.expect(RaceSnapshot)
    await play(ann, race, WON_MOVES[:8])
    await play(bob, race, WON_MOVES[:2])
    # Bob has drawn 3 cards: no board may show more than 3 moves.
    shown = await watcher.expect(Boards, fog_line=3)
    assert {board.racer: board.shown for board in shown.boards} == {
        ann.racer_id: 3,  # eight moves played, three shown
        bob.racer_id: 2,
    }
    await bob.send(Resign(race=race, id=bob.next_id()))
    await play(ann, race, WON_MOVES[8:], first=9)
    await watcher.expect(RaceFinished)
    # Then, as the protocol says, a last board holding every board in full.
    last = await watcher.receive()
    assert isinstance(last, Boards) and last.fog_line is None
    assert {board.racer: board.shown for board in last.boards} == {
        ann.racer_id: len(WON_MOVES), bob.racer_id: 2,
    }
    boards = [m for m in watcher.received if isinstance(m, Boards)]
    for message in boards[:-1]:
        fog = message.fog_line if message.fog_line is not None else 40
        assert all(board.shown <= fog for board in message.boards)
    for racer in (ann, bob):
        racer.assert_nothing_undrawn(STOCK)
    # A resume token travels once, in its owner's welcome, and nowhere else.
    tokens = {c.racer_id: c.welcome.resume for c in (ann, bob, watcher)}
    for client in (ann, bob, watcher):
        others = [token for owner, token in tokens.items() if owner != client.racer_id]
        seen = repr(client.received)
        assert not any(token in seen for token in others)
        assert seen.count(tokens[client.racer_id]) == 1
    for client in (ann, bob, watcher):
        await client.close()


async def test_a_big_race_of_bots_runs_to_standings_with_coalesced_progress(
    live_server: LiveServer,
) -> None:
    size = 24
    bots = [await WireClient.connect(live_server.url, f"bot{n}", bot=True) for n in range(size)]
    options = RaceOptions(max_racers=size, min_racers=size, countdown=0, public=False)
    await bots[0].send(CreateRace(options=options, id=1))
    code = (await bots[0].expect(RaceSnapshot)).code
    assert code is not None
    for bot in bots[1:]:
        await bot.send(JoinRace(race=code, id=1))

    async def race_a_little(bot: WireClient, moves: int) -> None:
        for _ in range(moves):
            card = await bot.expect(CardToPlace)
            row, col = card.targets[-1]
            await bot.send(Place(race=code, move=card.move, row=row, col=col, id=bot.next_id()))
        await bot.send(Resign(race=code, id=bot.next_id()))

    await asyncio.gather(*(race_a_little(bot, n % 6 + 1) for n, bot in enumerate(bots)))
    finished = [await bot.expect(RaceFinished) for bot in bots]
    standings = finished[0].standings
    assert len(standings) == size and all(s.bot for s in standings)
    assert verify_result(finished[0].to_result()).ok
    watcher = bots[0]
    latest: dict[str, int] = {}
    for message in watcher.received:
        if isinstance(message, Progress):
            assert len({e.racer for e in message.racers}) == len(message.racers)
            latest.update((e.racer, e.cards_played) for e in message.racers)
    assert latest == {s.racer: s.cards_played for s in standings}
    for bot in bots:
        bot.assert_nothing_undrawn(deal(finished[0].seed))
        await bot.close()


async def test_a_finished_race_is_followed_by_the_deals_par(live_server: LiveServer) -> None:
    ann, bob = await start_duel(live_server, dataclasses.replace(DUEL, public=True))
    race = race_of(ann)
    await bob.send(Resign(race=race, id=bob.next_id()))
    await play(ann, race, WON_MOVES)
    finished = await ann.expect(RaceFinished)
    pars = [await racer.expect(RacePar, race=race) for racer in (ann, bob)]
    assert pars[0] == pars[1]
    found = pars[0]
    assert found.score is not None and found.cards_used is not None
    assert all(s.score is None or s.score <= found.score for s in finished.standings)
    assert found.cards_used == len(STOCK) - found.score  # a won line leaves the rest in stock
    if found.proven:
        assert found.score == solve_par(WON_SEED).score
    # Whoever comes to the finished race later gets the par with the result.
    carol = await WireClient.connect(live_server.url, "carol", role=Role.SPECTATOR)
    await carol.send(Spectate(race=race, id=carol.next_id()))
    await carol.expect(RaceFinished, race=race)
    assert await carol.expect(RacePar, race=race) == found
    for client in (ann, bob, carol):
        await client.close()


async def test_a_place_after_ones_game_is_over_is_refused_as_the_protocol_says(
    live_server: LiveServer,
) -> None:
    """docs/protocol.md, *After your game is over*: a move played is answered again; a
    new one gets ``not_racing`` while others still race, ``race_not_running`` after."""
    ann, bob = await start_duel(live_server)
    race = race_of(ann)
    await play(ann, race, WON_MOVES[:1])
    await ann.send(Resign(race=race, id=ann.next_id()))
    await ann.expect(Ok, in_reply_to="resign")
    again = await place(ann, race, 1, WON_MOVES[0])
    assert isinstance(again, MovePlaced) and again.move == 1
    refused = await place(ann, race, 2, WON_MOVES[1])
    assert isinstance(refused, Error) and refused.code is ErrorCode.NOT_RACING
    await bob.send(Resign(race=race, id=bob.next_id()))
    await ann.expect(RaceFinished)
    refused = await place(ann, race, 2, WON_MOVES[1])
    assert isinstance(refused, Error) and refused.code is ErrorCode.RACE_NOT_RUNNING
    again = await place(ann, race, 1, WON_MOVES[0])
    assert isinstance(again, MovePlaced)
    await ann.close()
    await bob.close()


async def test_every_snapshot_to_a_racer_names_it_and_none_to_a_spectator_does(
    live_server: LiveServer,
) -> None:
    """``you`` in the lobby, the countdown, the start and the finish, each racer's own;
    the same snapshots to a spectator carry none."""
    options = RaceOptions(max_racers=3, min_racers=2, countdown=1, public=False)
    ann = await WireClient.connect(live_server.url, "ann")
    bob = await WireClient.connect(live_server.url, "bob", bot=True)
    await ann.send(CreateRace(options=options, id=ann.next_id()))
    race = (await ann.expect(RaceSnapshot)).race
    eve = await WireClient.connect(live_server.url, "eve", role=Role.SPECTATOR)
    await eve.send(Spectate(race=race, id=eve.next_id()))
    await eve.expect(RaceSnapshot)
    await bob.send(JoinRace(race=race, id=bob.next_id()))
    for racer in (ann, bob):
        await racer.expect(RaceSnapshot, state=RaceState.RUNNING)
        await racer.send(Resign(race=race, id=racer.next_id()))
    for watcher in (ann, bob, eve):
        await watcher.expect(RaceFinished)
    states = set()
    for watcher, you in ((ann, ann.racer_id), (bob, bob.racer_id), (eve, None)):
        snapshots = [m for m in watcher.received if isinstance(m, RaceSnapshot)]
        assert {s.you for s in snapshots} == {you}, watcher.welcome.name
        states |= {s.state for s in snapshots}
    assert {RaceState.LOBBY, RaceState.COUNTDOWN, RaceState.RUNNING} <= states
    for client in (ann, bob, eve):
        await client.close()
