"""From the race core's events to protocol messages (and race options both ways).

The race core speaks in seconds and its own dataclasses; the wire speaks in milliseconds
of server time and :mod:`protocol` messages. This is the one place that translates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import protocol
from protocol import RacerStatus, RaceState, ServerMessage, millis
from protocol.daily import DailyResult
from protocol.result import RaceResult
from server import race as core


def optional_millis(seconds: float | None) -> int | None:
    """:func:`millis`, passing ``None`` through."""
    return None if seconds is None else millis(seconds)


def race_options(
    wire: protocol.RaceOptions, progress_interval: float, reconnect_grace: float
) -> core.RaceOptions:
    """The race core's options for the options a host sent, with the server's own settings
    (``ValueError`` if out of range)."""
    return core.RaceOptions(
        max_racers=wire.max_racers,
        min_racers=wire.min_racers,
        time_limit=float(wire.time_limit),
        ruleset=wire.ruleset,
        spectators=wire.spectators,
        fog=wire.fog,
        public=wire.public,
        auto_start=wire.auto_start,
        countdown=float(wire.countdown),
        progress_interval=progress_interval,
        reconnect_grace=reconnect_grace,
        rated=wire.rated,
    )


def options_message(options: core.RaceOptions) -> protocol.RaceOptions:
    """The wire form of a race's options."""
    return protocol.RaceOptions(
        max_racers=options.max_racers,
        min_racers=options.min_racers,
        time_limit=max(1, round(options.time_limit)),
        ruleset=options.ruleset,
        spectators=options.spectators,
        fog=options.fog,
        public=options.public,
        auto_start=options.auto_start,
        countdown=round(options.countdown),
        rated=options.rated,
    )


def progress_entry(line: core.ProgressLine) -> protocol.ProgressEntry:
    """One racer's progress line."""
    return protocol.ProgressEntry(
        racer=line.racer_id,
        name=line.name,
        bot=line.bot,
        status=RacerStatus(line.status),
        cards_played=line.cards_played,
        face_up=line.face_up,
        face_down=line.face_down,
        score=line.score,
        finish_ms=optional_millis(line.finish_time),
        reason=line.reason,
    )


def snapshot_message(
    snapshot: core.RaceSnapshot,
    progress: tuple[core.ProgressLine, ...],
    spectators: int,
    connected: Callable[[str], bool],
    you: str | None = None,
    reply_to: int | None = None,
) -> protocol.RaceSnapshot:
    """The ``race`` message; ``you`` is set only in messages meant for one racer."""
    started = snapshot.started_at is not None
    return protocol.RaceSnapshot(
        race=snapshot.race_id,
        code=snapshot.code,
        state=RaceState(snapshot.phase.value),
        options=options_message(snapshot.options),
        commitment=snapshot.commitment,
        racers=tuple(
            protocol.RacerInfo(
                racer=r.racer_id,
                name=r.name,
                bot=r.bot,
                ready=r.ready,
                connected=connected(r.racer_id),
                out_at=optional_millis(r.out_at),
            )
            for r in snapshot.racers
        ),
        spectators=spectators,
        server_time=millis(snapshot.now),
        progress=tuple(progress_entry(line) for line in progress) if started else (),
        you=you,
        starts_at=optional_millis(snapshot.countdown_ends_at),
        started_at=optional_millis(snapshot.started_at),
        ends_at=optional_millis(snapshot.ends_at),
        reply_to=reply_to,
    )


def board_message(race_id: str, boards: core.Boards) -> protocol.Boards:
    """The ``board`` message."""
    return protocol.Boards(
        race=race_id,
        boards=tuple(
            protocol.RacerBoard(
                racer=board.racer_id,
                shown=board.cards_played,
                piles=tuple(
                    protocol.PileView(
                        row=pile.position[0],
                        col=pile.position[1],
                        face_up=pile.face_up,
                        cards=pile.cards,
                    )
                    for pile in board.piles
                ),
            )
            for board in boards.boards
        ),
        fog_line=boards.fog_line,
    )


def card_message(race_id: str, card: core.CardToPlace) -> protocol.CardToPlace:
    """The ``card`` message: the one card the racer holds now."""
    return protocol.CardToPlace(
        race=race_id,
        move=card.move_number,
        card=card.card,
        targets=card.targets,
        stock_left=card.stock_left,
    )


def placed_message(
    race_id: str, accepted: core.MoveAccepted, reply_to: int | None
) -> protocol.MovePlaced:
    """The ``placed`` message acknowledging a move."""
    line = accepted.progress
    return protocol.MovePlaced(
        race=race_id,
        move=accepted.move_number,
        card=accepted.card,
        position=accepted.position,
        flips=tuple(
            protocol.Flip(row=f.position[0], col=f.position[1], face_up=f.face_up)
            for f in accepted.flips
        ),
        face_up=line.face_up,
        face_down=line.face_down,
        stock_left=accepted.stock_left,
        status=RacerStatus(line.status),
        score=line.score,
        reason=line.reason,
        reply_to=reply_to,
    )


def sealed_result_message(
    result: RaceResult, options: core.RaceOptions, reveal_at: float
) -> DailyResult:
    """A daily room's end: its standings without anyone's moves, and no seed (both are
    revealed with the day, by ``get_daily``)."""
    finished = protocol.RaceFinished.from_result(
        result, started_at=result.started_at, ended_at=result.ended_at
    )
    assert options.daily is not None, "only a daily room's result is sealed"
    return DailyResult(
        race=result.race_id,
        day=options.daily,
        commitment=result.commitment,
        reveal_at=millis(reveal_at),
        standings=tuple(dataclasses.replace(line, moves=()) for line in finished.standings),
        started_at=result.started_at,
        ended_at=result.ended_at,
    )


def event_message(race_id: str, event: core.Event, now: float) -> ServerMessage | None:
    """The message for an event that needs no per-recipient detail; ``None`` for events
    that are not sent (``Started``) or that the caller must build (``RaceChanged``)."""
    match event:
        case core.CardToPlace():
            return card_message(race_id, event)
        case core.MoveAccepted():
            return placed_message(race_id, event, None)
        case core.Progress(lines):
            return protocol.Progress(
                race=race_id,
                racers=tuple(progress_entry(line) for line in lines),
                server_time=millis(now),
            )
        case core.Boards():
            return board_message(race_id, event)
        case core.RaceFinished(result):
            return protocol.RaceFinished.from_result(
                result, started_at=result.started_at, ended_at=result.ended_at
            )
    return None

