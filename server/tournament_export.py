"""A tournament's published record: standings plus every game, and the check anyone can run.

The record is a JSON document (``kind`` ``foursquare-tournament``, ``format`` 1):

- ``tournament``: code, name, format, rounds, each race's time limit, status;
- ``standings``: the server's standings, best first;
- ``games``: every finished race as ``{"round": n, "result": {...}}``, where ``result`` is
  the race's own result record (the JSON ``foursquare verify`` reads; ``--games-dir``
  writes each one to its own file).

:func:`verify_document` checks the event from the games alone: every game re-deals and
replays (:func:`~protocol.result.verify_result`); the races of a round share one seed;
recomputing each entrant's points, stock left and time from the games with the
tournament's scoring rule (:func:`~server.tournament.score_games`) gives the published
standings, in the published order.

A server sends the export in pages (``tournament_export`` with ``next`` while more
follow): :func:`fetch_export` asks for each in turn and joins them into one.

The CSV form has one row per standing (``record`` = ``standing``) and one row per racer
per game (``record`` = ``game``), with the game's seed, commitment, ruleset and moves.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from engine import format_moves
from protocol.result import RaceResult, verify_result
from protocol.tournament import ExportTournament, TournamentExport, TournamentFormat
from server.tournament import score_games

EXPORT_KIND = "foursquare-tournament"
EXPORT_FORMAT = 1

_ROUND_OF_RACE = re.compile(r"-R(\d+)-\d+$")


def round_of(race_id: str) -> int:
    """The round a tournament race belongs to, from its id (``CODE-R2-1``); 0 for arena races."""
    match = _ROUND_OF_RACE.search(race_id)
    return int(match[1]) if match else 0


def joined(pages: Sequence[TournamentExport]) -> TournamentExport:
    """The pages of one export as one message: their games in order, and the last page's
    state (the one all those games add up to: a page's games are the tournament's
    finished races in the order they finished, an order that only grows at its end)."""
    return TournamentExport(
        state=pages[-1].state, games=tuple(game for page in pages for game in page.games)
    )


async def fetch_export(
    code: str,
    request: Callable[[ExportTournament], Awaitable[object]],
    new_id: Callable[[], int] | None = None,
) -> TournamentExport:
    """Every page of tournament ``code``'s export, joined. ``request`` sends one request
    and returns the answer to it; ``new_id`` gives each request's id (1, 2, ... unless
    given). ``ValueError`` if an answer is not a page, or a page does not move on."""
    ids = new_id or itertools.count(1).__next__
    pages: list[TournamentExport] = []
    after: int | None = None
    while True:
        ask = ExportTournament(tournament=code, after=after, id=ids())
        page = await request(ask)
        if not isinstance(page, TournamentExport):
            raise ValueError(f"the server answered export_tournament with {page!r}")
        pages.append(page)
        if page.next is None:
            return joined(pages)
        if page.next <= (after or 0):
            raise ValueError(f"the server's page after {after or 0} points back to {page.next}")
        after = page.next


def document_from(export: TournamentExport) -> dict[str, Any]:
    """The published record of a ``tournament_export`` message."""
    state = export.state
    return {
        "kind": EXPORT_KIND,
        "format": EXPORT_FORMAT,
        "tournament": {
            "code": state.tournament,
            "name": state.name,
            "format": state.format.value,
            "rounds": state.rounds,
            "time_limit": state.time_limit,
            "status": state.status.value,
        },
        "standings": [
            {
                "place": line.place,
                "tied": line.tied,
                "entrant": line.entrant,
                "name": line.name,
                "bot": line.bot,
                "state": line.state.value,
                "points": line.points,
                "stock_left": line.stock_left,
                "time": line.time_ms / 1000,
                "games": line.games,
            }
            for line in state.standings
        ],
        "games": [
            {"round": round_of(game.race), "result": game.to_result().to_dict()}
            for game in export.games
        ],
    }


def games_of(document: Mapping[str, Any]) -> list[tuple[int, RaceResult]]:
    """The games of a record, each with its round; ``ValueError`` if one is malformed."""
    if document.get("kind") != EXPORT_KIND or document.get("format") != EXPORT_FORMAT:
        raise ValueError("not a tournament record (kind foursquare-tournament, format 1)")
    return [
        (int(game["round"]), RaceResult.from_dict(game["result"])) for game in document["games"]
    ]


def verify_document(document: Mapping[str, Any]) -> list[str]:
    """Everything wrong with a tournament record; empty when it holds up."""
    try:
        games = games_of(document)
        info = document["tournament"]
        standings = list(document["standings"])
        arena = TournamentFormat(info["format"]) is TournamentFormat.ARENA
        time_limit = float(info["time_limit"])
    except (KeyError, TypeError, ValueError) as error:
        return [f"the record cannot be read: {error}"]
    problems: list[str] = []
    for _, result in games:
        problems += [f"race {result.race_id}: {p}" for p in verify_result(result).problems]
    groups: dict[object, list[RaceResult]] = defaultdict(list)
    for number, result in games:
        groups[result.race_id if arena else number].append(result)
    totals: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
    for results in groups.values():
        if not arena and len({r.seed for r in results}) > 1:
            problems.append(f"the races of round {round_of(results[0].race_id)} differ in seed")
        number = round_of(results[0].race_id)
        for entrant, game in score_games(results, number, time_limit).items():
            totals[entrant][0] += game.points
            totals[entrant][1] += game.stock_left
            totals[entrant][2] += game.time
    for line in standings:
        points, stock, time = totals.get(line["entrant"], [0, 0, 0.0])
        claimed = (line["points"], line["stock_left"])
        # Times travel in whole milliseconds: allow that rounding once per game.
        if claimed != (points, stock) or abs(line["time"] - time) > 0.001 * (1 + len(games)):
            problems.append(
                f"{line['name']} ({line['entrant']}): the standings claim {claimed[0]} points, "
                f"{claimed[1]} stock left, {line['time']:.3f} s; the games give {points:g}, "
                f"{stock:g}, {time:.3f} s"
            )
    keys = [(-line["points"], -line["stock_left"], round(line["time"], 3)) for line in standings]
    if keys != sorted(keys):
        problems.append("the standings are not in the order of points, stock left and time")
    for line, key in zip(standings, keys, strict=True):
        if line["place"] != 1 + sum(1 for other in keys if other < key):
            problems.append(f"{line['name']} ({line['entrant']}) has the wrong place")
    return problems


def to_json(document: Mapping[str, Any]) -> str:
    """The record as indented JSON."""
    return json.dumps(document, indent=2, ensure_ascii=False)


CSV_COLUMNS = (
    "record",
    "place",
    "tied",
    "entrant",
    "name",
    "bot",
    "state_or_outcome",
    "points",
    "stock_left_or_score",
    "time",
    "games_or_cards_played",
    "round",
    "race",
    "seed",
    "commitment",
    "ruleset",
    "moves",
)


def to_csv(document: Mapping[str, Any]) -> str:
    """The record as CSV: standings rows, then a row per racer per game."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for line in document["standings"]:
        writer.writerow(
            [
                "standing",
                line["place"],
                line["tied"],
                line["entrant"],
                line["name"],
                line["bot"],
                line["state"],
                line["points"],
                line["stock_left"],
                f"{line['time']:.3f}",
                line["games"],
                "",
                "",
                "",
                "",
                "",
                "",
            ]
        )
    for number, result in games_of(document):
        ruleset = json.dumps(result.ruleset.to_dict(), separators=(",", ":"))
        for place, entry in enumerate(result.racers, start=1):
            time = "" if entry.finish_time is None else f"{entry.finish_time:.3f}"
            writer.writerow(
                [
                    "game",
                    place,
                    "",
                    entry.racer_id,
                    entry.name,
                    entry.bot,
                    entry.outcome.value,
                    "",
                    "" if entry.score is None else entry.score,
                    time,
                    entry.cards_played,
                    number,
                    result.race_id,
                    result.seed,
                    result.commitment,
                    ruleset,
                    format_moves(list(entry.moves)),
                ]
            )
    return out.getvalue()
