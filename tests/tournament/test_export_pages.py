"""A tournament larger than one frame is exported in pages: the real server on a free port,
a finished tournament of 1,200 games (4.5 MB in one message, past what a client accepts
in one frame) in its store, and real websocket clients that decode every frame with the
client's own limits; and the pages cut by the core, by count and by bytes."""

from __future__ import annotations

import dataclasses
import itertools
import sqlite3
from pathlib import Path

import msgpack
import pytest

from protocol import Error, ErrorCode, Limits, decode_server
from protocol.tournament import (
    EXPORT_PAGE_BYTES,
    EXPORT_PAGE_GAMES,
    MAX_ENTRANTS,
    ExportTournament,
    TournamentExport,
    encode_tournament,
)
from server.journal import Journal
from server.tournament import (
    Join,
    Open,
    RaceOrdered,
    RecordResult,
    StartNext,
    Tournament,
    TournamentSettings,
    hash_token,
)
from server.tournament_export import document_from, fetch_export, joined, verify_document
from server.tournament_host import export_page, tournament_export
from server.tournament_store import TournamentStore
from tests.conftest import fast_config, start_live_server
from tests.server.wire_client import WireClient
from tests.tournament.players import FakeClock, Host
from tests.tournament.racing import HOST, play_order, race_all
from tests.tournament.test_cli import export_and_verify, foursquare_err
from tests.tournament.test_store import Hosted

ENTRANTS = 400
RACE_SIZE = 16
ROUNDS = 48
GAMES = ENTRANTS // RACE_SIZE * ROUNDS
PROTOCOL_DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


@dataclasses.dataclass(frozen=True)
class Stored:
    """A finished tournament in a store file, and its export as the tournament gives it."""

    path: Path
    code: str
    export: TournamentExport


def stored_tournament(path: Path, entrants: int, race_size: int, rounds: int) -> Stored:
    """A finished tournament written to the store at ``path`` as the server does it."""
    store = TournamentStore(Journal(path))
    settings = TournamentSettings("stored cup", rounds=rounds, race_size=race_size)
    hosted = Hosted(store, settings)
    hosted.tournament.seed_source = lambda: "stored-seed"
    race_all(hosted.run, settings, entrants)
    store.journal.close()
    assert len(hosted.tournament.finished) == entrants // race_size * rounds
    return Stored(path, hosted.tournament.code, tournament_export(hosted.tournament, 0.0))


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    """A store holding a finished tournament of :data:`GAMES` games."""
    path = tmp_path_factory.mktemp("big") / "foursquare.db"
    return stored_tournament(path, ENTRANTS, RACE_SIZE, ROUNDS)


class Reader:
    """A client that asks for export pages and keeps every frame as it came."""

    def __init__(self, client: WireClient):
        self.client = client
        self.frames: list[bytes] = []

    async def ask(self, request: ExportTournament) -> object:
        """Send ``request``; its answer, decoded with the client's own limits."""
        await self.client.connection.send(encode_tournament(request))
        frame = await self.client.connection.recv()
        assert isinstance(frame, bytes)
        self.frames.append(frame)
        return decode_server(frame, Limits())

    async def send_raw(self, wire: dict[str, object]) -> Error:
        """Send a hand-made ``export_tournament`` map; the ``error`` it gets."""
        await self.client.connection.send(msgpack.packb(wire))
        answer = decode_server(await self.client.connection.recv(), Limits())
        assert isinstance(answer, Error)
        return answer


async def test_a_tournament_larger_than_a_frame_is_exported_in_pages_that_verify(
    big_store: Stored, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = big_store.code
    async with start_live_server(fast_config(big_store.path)) as live:
        reader = Reader(await WireClient.connect(live.url, "reader"))
        export = await fetch_export(code, reader.ask)
        pages = [decode_server(frame, Limits()) for frame in reader.frames]
        assert len(pages) >= 4, "4.5 MB of games takes at least five pages of 1 MiB"
        assert all(len(frame) <= EXPORT_PAGE_BYTES for frame in reader.frames)
        assert all(isinstance(page, TournamentExport) and page.games for page in pages)
        assert export.games == big_store.export.games and len(export.games) == GAMES
        assert export.state.standings == big_store.export.state.standings

        first = pages[0]
        assert isinstance(first, TournamentExport) and first.next == len(first.games)
        assert msgpack.unpackb(reader.frames[0])["next"] == first.next
        await reader.client.close()

        out = await export_and_verify(live.url, code, tmp_path / "big.json")
        assert f"{GAMES} games, {ENTRANTS} entrants" in out
        assert "verified" in out

        status, err = await foursquare_err(
            capsys, "tournament", "export", "NOSUCH", "--server", live.url
        )
        assert status == 1 and "No tournament has that code" in err


async def test_bad_cursors_are_refused_with_their_codes(big_store: Stored) -> None:
    code = big_store.code
    async with start_live_server(fast_config(big_store.path)) as live:
        reader = Reader(await WireClient.connect(live.url, "reader"))
        wire = {"type": "export_tournament", "tournament": code, "id": 5}
        negative = await reader.send_raw({**wire, "after": -1})
        assert negative.code is ErrorCode.BAD_MESSAGE
        assert "export_tournament.after" in negative.message
        assert (negative.in_reply_to, negative.reply_to) == ("export_tournament", 5)
        for wrong in ("12", 1.5, True, [3]):
            refused = await reader.send_raw({**wire, "after": wrong})
            assert refused.code is ErrorCode.BAD_MESSAGE, wrong
        past = await reader.ask(ExportTournament(tournament=code, after=GAMES + 1, id=6))
        assert isinstance(past, Error) and past.code is ErrorCode.BAD_CURSOR
        assert (past.in_reply_to, past.reply_to) == ("export_tournament", 6)
        assert f"has {GAMES} finished games" in past.message
        # At the end exactly: an empty last page.
        end = await reader.ask(ExportTournament(tournament=code, after=GAMES, id=7))
        assert isinstance(end, TournamentExport) and end.games == () and end.next is None

        # A tournament in the server's memory is paged by the same rule.
        host = await Host.start(live.url)
        fresh = await host.create(name="nothing raced yet")
        past = await reader.ask(ExportTournament(tournament=fresh, after=1, id=8))
        assert isinstance(past, Error) and past.code is ErrorCode.BAD_CURSOR
        assert "has 0 finished games" in past.message
        empty = await host.export()
        assert empty.games == () and empty.state.tournament == fresh
        for client in (reader.client, host.client):
            await client.close()


def small_games(count: int) -> Tournament:
    """A finished tournament of ``count`` two-racer games (in rounds of ten races)."""
    settings = TournamentSettings("many small", rounds=count // 10, race_size=2)
    tournament = Tournament(
        "SMALL1", "SMALL1", hash_token(HOST), settings, 0.0, lambda: "small-seed"
    )
    race_all(tournament.apply, settings, 20)
    assert len(tournament.finished) == count
    return tournament


def test_a_page_holds_at_most_its_count_of_games_and_the_pages_join_up() -> None:
    tournament = small_games(EXPORT_PAGE_GAMES + 100)
    first = export_page(tournament, 5000.0, None, reply_to=3)
    assert len(first.games) == EXPORT_PAGE_GAMES and first.next == EXPORT_PAGE_GAMES
    assert len(encode_tournament(first)) < EXPORT_PAGE_BYTES, "the count, not the bytes, cut it"
    last = export_page(tournament, 5000.0, first.next)
    assert len(last.games) == 100 and last.next is None
    whole = tournament_export(tournament, 5000.0)
    assert joined([first, last]) == whole
    assert verify_document(document_from(whole)) == []
    # A client that knows nothing of pages keeps the first, a correct record of the games
    # it holds, whose games do not add up to the standings it carries.
    partial = verify_document(document_from(first))
    assert partial and all("the standings claim" in problem for problem in partial)


def test_games_are_paged_in_the_order_they_finished() -> None:
    """Races finish out of the order they were dealt: a page boundary set before a race
    dealt early finishes still splits the games without a gap or a repeat."""
    settings = TournamentSettings("late finisher", rounds=1, race_size=2)
    seeds = itertools.repeat("late-seed")
    tournament = Tournament("LATE01", "LATE01", hash_token(HOST), settings, 0.0, seeds.__next__)
    tournament.apply(Open(HOST), 0.0)
    for name in "abcd":
        tournament.apply(Join(name, name, bot=True), 1.0)
    orders = [e for e in tournament.apply(StartNext(HOST), 10.0) if isinstance(e, RaceOrdered)]
    results = [play_order(order, settings, 10.0) for order in orders]
    tournament.apply(RecordResult(results[1]), 200.0)
    before = export_page(tournament, 200.0)
    tournament.apply(RecordResult(results[0]), 300.0)
    after = export_page(tournament, 300.0, len(before.games))
    assert [g.race for g in (*before.games, *after.games)] == [orders[1].race_id, orders[0].race_id]
    assert verify_document(document_from(joined([before, after]))) == []


def test_the_page_budget_fits_a_client_frame_and_the_docs_say_it() -> None:
    limits = Limits()
    assert limits.max_server_frame // 4 >= EXPORT_PAGE_BYTES
    assert min(MAX_ENTRANTS, limits.max_array_len) >= EXPORT_PAGE_GAMES
    said = f"at most {EXPORT_PAGE_GAMES} games (`EXPORT_PAGE_GAMES`) and at most\n1 MiB"
    assert EXPORT_PAGE_BYTES == 1024 * 1024 and said in PROTOCOL_DOC.read_text()


async def test_a_tournament_read_back_from_the_store_is_kept_for_its_linger(
    tmp_path: Path,
) -> None:
    """The pages of one export read the store once: while a finished tournament read back
    is kept, the store is not asked again (here, its row renamed away meanwhile is not
    noticed); after ``finished_linger`` it is."""
    stored = stored_tournament(tmp_path / "foursquare.db", 4, 2, 1)
    clock = FakeClock()
    config = dataclasses.replace(fast_config(stored.path), clock=clock, finished_linger=60.0)
    async with start_live_server(config) as live:
        reader = Reader(await WireClient.connect(live.url, "reader"))
        first = await reader.ask(ExportTournament(tournament=stored.code, id=1))
        assert isinstance(first, TournamentExport) and first.games == stored.export.games
        with sqlite3.connect(stored.path) as db:
            db.execute("UPDATE tournaments SET code = 'GONE99' WHERE code = ?", (stored.code,))
        clock.now += 59.0
        again = await reader.ask(ExportTournament(tournament=stored.code, id=2))
        assert isinstance(again, TournamentExport) and again.games == first.games
        clock.now += 1.0
        gone = await reader.ask(ExportTournament(tournament=stored.code, id=3))
        assert isinstance(gone, Error) and gone.code is ErrorCode.TOURNAMENT_NOT_FOUND
        await reader.client.close()
