"""The page's deal, rules and verification against the conformance data and the Python engine.

The page's modules (``web/public/js/engine.js``, ``verify.js``) run in Chromium, loaded
from the real server; what they compute comes back as plain data and is compared here,
with both the browser's SHA-256 and the page's own (used where the browser has none).
"""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

import msgpack
import pytest
from playwright.async_api import Page, expect

from engine import Adjacency, Card, Game, Ruleset, commitment
from protocol import RaceFinished, decode_server
from protocol.codec import encode_wire
from protocol.result import RaceResult, RacerOutcome, RacerResult, verify_result
from tests.conftest import LiveServer
from tests.web.conftest import Screenshot

CONFORMANCE = Path(__file__).resolve().parent.parent / "conformance"
DEALS: list[dict[str, Any]] = json.loads((CONFORMANCE / "deals.json").read_text())["deals"]
GAMES: list[dict[str, Any]] = json.loads((CONFORMANCE / "games.json").read_text())["games"]

#: Plays each game's moves in the page and writes down every step as games.json does.
PLAY_STEPS = """async ([games, here]) => {
  const { Game, cardName } = await import("/static/js/engine.js");
  const out = [];
  for (const { seed, rules, moves } of games) {
    const game = await Game.deal(seed, rules, { here });
    const steps = [];
    for (const move of moves) {
      const card = cardName(game.card);
      const legal = game.legalMoves();
      game.play(move);
      const tops = game.pileViews().map(([r, c, up, cards]) =>
        [r, c, cardName(cards[cards.length - 1]), up, cards.length]);
      steps.push({ card, legal, move, after: {
        status: game.status, face_down: game.faceDown, stock_left: game.stockLeft,
        score: game.score, tops } });
    }
    out.push({ seed, result: game.status, score: game.score, steps,
               over: game.card === null && game.legalMoves().length === 0 });
  }
  return out;
}"""


async def open_blank(page: Page, live: LiveServer) -> None:
    """A page of the server's origin (a secure context on loopback) without the app."""
    await page.goto(live.http_url + "/healthz")


@pytest.mark.parametrize("here", [False, True], ids=["browser-sha256", "page-sha256"])
async def test_deals_and_commitments_match_the_conformance_data(
    page: Page, live_server: LiveServer, here: bool
) -> None:
    await open_blank(page, live_server)
    dealt = await page.evaluate(
        """async ([seeds, here]) => {
          const { dealIds, commitment, cardName } = await import("/static/js/engine.js");
          const out = [];
          for (const seed of seeds) {
            out.push({ seed, stock: (await dealIds(seed, { here })).map(cardName),
                       commitment: await commitment(seed, { here }) });
          }
          return out;
        }""",
        [[case["seed"] for case in DEALS], here],
    )
    assert dealt == DEALS


@pytest.mark.parametrize("here", [False, True], ids=["browser-sha256", "page-sha256"])
async def test_whole_games_match_the_conformance_data(
    page: Page, live_server: LiveServer, here: bool
) -> None:
    await open_blank(page, live_server)
    games = [
        {"seed": case["seed"], "rules": Ruleset().to_dict(),
         "moves": [step["move"] for step in case["steps"]]}
        for case in GAMES
    ]
    played = await page.evaluate(PLAY_STEPS, [games, here])
    for case, mine in zip(GAMES, played, strict=True):
        assert mine.pop("over") is True
        assert mine == case, case["seed"]


def random_games(count: int) -> list[dict[str, Any]]:
    """Random legal games under several rulesets, played to their end by the Python engine,
    in the conformance data's form."""
    chooser = random.Random(19)
    rulesets = [
        Ruleset(),
        Ruleset(adjacency=Adjacency.ANY),
        Ruleset(grid_size=3, pile_capacity=5, face_down_limit=2),
        Ruleset(grid_size=5, pile_capacity=2, face_down_limit=7, adjacency=Adjacency.ANY),
        Ruleset(grid_size=2, pile_capacity=10, face_down_limit=0),
    ]
    games = []
    for index in range(count):
        rules = rulesets[index % len(rulesets)]
        seed = f"web-{index}-{chooser.random()}"
        game = Game.new(seed, rules)
        steps = []
        while game.card is not None:
            card, legal = str(game.card), [list(move) for move in game.legal_moves()]
            move = chooser.choice(legal)
            game.play((move[0], move[1]))
            tops = [[r, c, str(p.top), p.face_up, p.height] for (r, c), p in game.piles.items()]
            steps.append({"card": card, "legal": legal, "move": move, "after": {
                "status": game.status.value, "face_down": game.face_down,
                "stock_left": game.stock_left, "score": game.score, "tops": tops}})
        games.append({"seed": seed, "rules": rules.to_dict(), "result": game.status.value,
                      "score": game.score, "steps": steps})
    return games


async def test_random_games_under_every_kind_of_rules_match_the_engine(
    page: Page, live_server: LiveServer
) -> None:
    await open_blank(page, live_server)
    games = random_games(40)
    played = await page.evaluate(
        PLAY_STEPS,
        [[{"seed": g["seed"], "rules": g["rules"], "moves": [s["move"] for s in g["steps"]]}
          for g in games], False],
    )
    for game, mine in zip(games, played, strict=True):
        del mine["over"]
        assert mine == {key: value for key, value in game.items() if key != "rules"}


async def test_the_page_sha256_matches_on_lengths_around_every_block_edge(
    page: Page, live_server: LiveServer
) -> None:
    await open_blank(page, live_server)
    same = await page.evaluate(
        """async () => {
          const { sha256Here } = await import("/static/js/sha256.js");
          const bad = [];
          for (let n = 0; n < 300; n++) {
            const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 7 + n) & 255);
            const theirs = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
            if (theirs.join() !== sha256Here(bytes).join()) bad.push(n);
          }
          return bad;
        }"""
    )
    assert same == []


def finished_message(seed: str, racers: list[tuple[str, RacerOutcome, list[list[int]]]]) -> (
    dict[str, Any]
):
    """A ``finished`` message, as decoded from the wire, for racers who played these moves."""
    entries = []
    for index, (racer, outcome, moves) in enumerate(racers):
        game = Game.new(seed)
        for move in moves:
            game.play((move[0], move[1]))
        entries.append(RacerResult(
            racer, f"racer {index}", False, outcome, game.score,
            None if outcome is RacerOutcome.TIMED_OUT else 10.0 + index,
            game.cards_played, game.face_up, game.face_down,
            tuple((m[0], m[1]) for m in moves),
        ))
    result = RaceResult.build("R1", seed, Ruleset(), entries, 1, 2)
    return encode_wire(RaceFinished.from_result(result, started_at=1, ended_at=2))


def played_out(seed: str, chooser: random.Random, stop: int | None = None) -> list[list[int]]:
    game = Game.new(seed)
    moves: list[list[int]] = []
    while game.card is not None and (stop is None or len(moves) < stop):
        move = chooser.choice(game.legal_moves())
        game.play(move)
        moves.append(list(move))
    return moves


def tampered_results() -> list[tuple[str, dict[str, Any], str | None]]:
    """(what, finished message, commitment published before the start) cases."""
    chooser = random.Random(7)
    seed = "tamper-me"
    honest = finished_message(seed, [
        ("p-a", RacerOutcome.LOST, played_out(seed, chooser)),
        ("p-b", RacerOutcome.RESIGNED, played_out(seed, chooser, 5)),
        ("p-c", RacerOutcome.TIMED_OUT, played_out(seed, chooser, 3)),
    ])
    cases: list[tuple[str, dict[str, Any], str | None]] = [
        ("honest", honest, commitment(seed)),
        ("honest, no commitment seen", honest, None),
    ]

    def changed(what: str, change: Any, published: str | None = commitment(seed)) -> None:
        copy = json.loads(json.dumps(honest))
        change(copy)
        cases.append((what, copy, published))

    changed("another seed", lambda m: m.update(seed="other"))
    changed("another seed and its commitment",
            lambda m: m.update(seed="other", commitment=commitment("other")))
    changed("a count", lambda m: m["standings"][0].update(face_up=m["standings"][0]["face_up"] + 1))
    changed("an illegal move", lambda m: m["standings"][1]["moves"].__setitem__(1, [3, 3]))
    changed("a claimed win", lambda m: m["standings"][2].update(status="won", score=20))
    changed("the order", lambda m: m["standings"].reverse())
    changed("a published commitment of another seed", lambda m: None, commitment("other"))
    return cases


async def test_verification_agrees_with_the_python_check(
    page: Page, live_server: LiveServer
) -> None:
    await open_blank(page, live_server)
    cases = tampered_results()
    verdicts = await page.evaluate(
        """async (cases) => {
          const { verifyFinished } = await import("/static/js/verify.js");
          const out = [];
          for (const [what, finished, published] of cases) {
            out.push(await verifyFinished(finished, published));
          }
          return out;
        }""",
        cases,
    )
    for (what, message, published), verdict in zip(cases, verdicts, strict=True):
        decoded = decode_server(msgpack.packb(message))
        assert isinstance(decoded, RaceFinished)
        result = decoded.to_result()
        if published is not None:
            result = dataclasses.replace(result, commitment=published)
        python_ok = verify_result(result).ok and message["commitment"] == (
            published or message["commitment"])
        assert verdict["ok"] is python_ok, (what, verdict)
        assert bool(verdict["problems"]) is not python_ok, what
    assert [ok for ok in (v["ok"] for v in verdicts)] == [True, True] + [False] * 7


def test_card_names_are_the_engines() -> None:
    # The page writes cards as the engine does (cardName), by the same ids.
    assert [str(Card.from_id(i)) for i in (0, 9, 10, 29, 39)] == ["AC", "TC", "AD", "TH", "TS"]


async def test_solo_practice_plays_the_engines_game_without_the_server(
    page: Page, live_server: LiveServer, screenshot: Screenshot
) -> None:
    await page.goto(f"{live_server.http_url}/solo?seed=foursquare")
    await expect(page.locator("#card-words")).to_have_text("4 of spades")
    # Offline from here: the page deals and plays by itself.
    await page.context.set_offline(True)
    game = Game.new("foursquare")
    for _ in range(12):
        move = game.legal_moves()[-1]
        spot = f'#my-board .spot.target[data-row="{move[0]}"][data-col="{move[1]}"]'
        await page.locator(spot).click()
        game.play(move)
        await expect(page.locator("#played")).to_have_text(str(game.cards_played))
    assert await page.locator("#stock").inner_text() == str(game.stock_left)
    await screenshot(page, "solo")
    await page.keyboard.press("u")
    await expect(page.locator("#played")).to_have_text("11")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")
    await expect(page.locator("#played")).to_have_text("12")
    await page.click("#new-deal")
    await expect(page.locator("#played")).to_have_text("0")
    assert await page.locator("#seed").inner_text() != "foursquare"
