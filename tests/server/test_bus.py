"""The bus between the tiers: what crosses it is plain data, and the tiers import only it
of each other."""

from __future__ import annotations

import ast
import dataclasses
import enum
from pathlib import Path

from protocol import ErrorCode, Place, QuickRace, Role, decode_client, encode
from protocol.messages import Message
from protocol.tournament import WatchTournament
from server.bus import (
    LOBBY,
    Attach,
    Audience,
    Caller,
    CheckExpiry,
    Command,
    Deliver,
    Detach,
    Done,
    Event,
    ExpiryChecked,
    Follow,
    InProcessBus,
    Refuse,
    Request,
    TakeRace,
    ToFeed,
    ToSession,
    Unfollow,
    channel_of,
    race_feed,
    route,
    tournament_feed,
)

SERVER = Path(__file__).resolve().parents[2] / "server"

ANN = Caller("p-1", "ann", False, Role.PLAYER)

COMMANDS: list[Command] = [
    Request(ANN, Place(race="K7QX", move=1, row=0, col=0, id=3), received_at=1.5),
    Request(ANN, QuickRace(id=4), ticket=7),
    Attach(ANN, resumed=True, ticket=8),
    Attach(ANN, resumed=True, ticket=9, since=1_796_000_000.25, node="host-1-a1b2c3"),
    Detach("p-1", replaced=True),
    Detach("p-1", node="host-1-a1b2c3"),
    CheckExpiry(("p-1", "p-2")),
]

EVENTS: list[Event] = [
    Deliver(ToSession("p-1"), b"\x80", you=True, received_at=1.5),
    Deliver(ToFeed(race_feed("K7QX"), Audience.EVERYONE), b"\x80", skip="p-1"),
    Refuse("p-1", ErrorCode.NOT_A_RACER, "no", "place", 3, failure="KeyError at x.py:1"),
    Follow("p-1", tournament_feed("ABCDEF"), member=True),
    Unfollow("p-1", race_feed("K7QX"), member=False),
    Done("p-1", 8),
    ExpiryChecked(keep=("p-1",), forget=("p-2",)),
]


def plain(value: object) -> bool:
    """Whether ``value`` is data another process could be sent as it is: scalars, bytes,
    enums, tuples of them, protocol messages (which have a wire encoding) and the bus's
    own frozen dataclasses of them."""
    if value is None or isinstance(value, str | int | float | bool | bytes | enum.Enum):
        return True
    if isinstance(value, tuple):
        return all(plain(item) for item in value)
    if isinstance(value, Message):
        return True
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        params = type(value).__dataclass_params__  # type: ignore[attr-defined]
        return bool(params.frozen) and all(
            plain(getattr(value, field.name)) for field in dataclasses.fields(value)
        )
    return False


def test_every_command_and_event_is_plain_frozen_data() -> None:
    for item in [*COMMANDS, *EVENTS]:
        assert plain(item), item


def test_a_request_carries_a_message_that_survives_the_wire() -> None:
    request = COMMANDS[0]
    assert isinstance(request, Request) and isinstance(request.message, Place)
    assert decode_client(encode(request.message)) == request.message


def test_commands_are_routed_to_their_race_their_tournament_or_the_lobby() -> None:
    assert route(COMMANDS[0]) == "race:K7QX"
    assert route(Request(ANN, Place(race="k7qx", move=1, row=0, col=0))) == "race:K7QX"
    assert route(Request(ANN, WatchTournament(tournament="abcdef"))) == "tournament:ABCDEF"
    assert [route(command) for command in COMMANDS[1:]] == [LOBBY] * 6


def test_events_go_to_a_session_a_feed_or_the_lobby() -> None:
    assert [channel_of(event) for event in EVENTS] == [
        "session:p-1", "race:K7QX", "session:p-1", "session:p-1", "session:p-1",
        "session:p-1", LOBBY,
    ]


def test_the_in_process_bus_hands_each_command_and_batch_over_at_once() -> None:
    bus = InProcessBus()
    commands: list[Command] = []
    batches: list[list[Event]] = []
    bus.serve(commands.append)
    bus.listen(lambda events: batches.append(list(events)))
    bus.send(COMMANDS[0])
    bus.publish(EVENTS[:2])
    bus.publish([])  # nothing to hand over
    assert commands == [COMMANDS[0]]
    assert batches == [EVENTS[:2]]


def imports(path: Path) -> set[str]:
    """The ``server`` modules ``path`` imports (by module name), and ``websockets`` if it
    imports that."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "server" and len(parts) > 1:
                found.add(parts[1])
            elif parts[0] == "websockets":
                found.add("websockets")
    return found


#: The modules of each tier (the bus, the journal, config, logs and metrics are shared).
SOCKET_TIER = {"socket_tier", "http_routes", "connection", "fanout", "admission",
               "rate_limit", "sessions", "expiry", "metrics_listener", "player_desk",
               "daily_desk"}
RACE_TIER = {"race_tier", "host", "race", "lobby", "tournament", "tournament_host",
             "tournament_store", "outbox", "outgoing", "pars", "winnable", "search_worker",
             "seats"}


#: The bus and its implementation between processes: neither tier.
BUS = {"bus", "bus_codec", "redis_bus"}


def test_the_bus_imports_neither_tier() -> None:
    for module in BUS:
        crossing = imports(SERVER / f"{module}.py") & (SOCKET_TIER | RACE_TIER | {"app"})
        assert not crossing, f"server/{module}.py imports {crossing}"


def test_the_tiers_import_nothing_of_each_other_and_the_race_tier_no_websockets() -> None:
    for module in SOCKET_TIER:
        crossing = imports(SERVER / f"{module}.py") & RACE_TIER
        assert not crossing, f"server/{module}.py imports the race tier's {crossing}"
    for module in RACE_TIER:
        crossing = imports(SERVER / f"{module}.py") & (SOCKET_TIER | {"websockets", "app"})
        assert not crossing, f"server/{module}.py imports {crossing}"


def test_every_command_and_event_comes_back_from_the_codec_as_it_went() -> None:
    from server.bus_codec import CLASSES, pack, unpack

    items = [*COMMANDS, TakeRace("K7QX"),
             Request(ANN, WatchTournament(tournament="ABCDEF", id=9)), *EVENTS,
             Refuse("p-2", ErrorCode.RACE_FULL, "full")]
    assert unpack(pack(items)) == items
    # One of every class crosses in the list above.
    assert {type(item) for item in items} | {Caller, ToSession, ToFeed} == set(CLASSES)


def test_the_codec_refuses_a_document_it_did_not_make() -> None:
    import msgpack
    import pytest

    from server.bus_codec import unpack

    for data in (b"\xc1", msgpack.packb([[99, 1]]), msgpack.packb([[0, "p-1"]]), b"\x01"):
        with pytest.raises(ValueError):
            unpack(data)
