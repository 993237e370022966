"""docs/protocol.md says what the code does: its reference section is the generated one,
and its example session is what the real server sends."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
from pathlib import Path
from typing import Any, cast

import msgpack
import pytest
from websockets.asyncio.client import connect

import protocol
from protocol import CLIENT_MESSAGES, SERVER_MESSAGES, CloseCode, ErrorCode, decode_server
from protocol.reference import VALUE_TYPES, render
from tests.conftest import fast_config, start_live_server
from tests.server.wire_client import TIMEOUT

PAGE = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def test_reference_section_is_up_to_date() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert render(page) == page, "run: python -m protocol.reference docs/protocol.md"


def test_every_message_code_and_type_is_documented() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for kind, cls in {**CLIENT_MESSAGES, **SERVER_MESSAGES}.items():
        assert f"### `{kind}`" in page
        assert f"`protocol.{cls.__name__}`" in page
        assert hasattr(protocol, cls.__name__)
    for value_type in VALUE_TYPES:
        assert f"### {value_type.__name__}" in page
    for code in ErrorCode:
        assert f"| `{code.value}` |" in page
    for close in CloseCode:
        assert f"| {close.value} |" in page


# ------------------------------------------------------------ the example session

_SESSION = re.compile(
    r"<!-- BEGIN EXAMPLE SESSION(?:: (?P<label>\w+))? [^\n]*-->\n```text\n(?P<lines>.*?)```\n"
    r"<!-- END EXAMPLE SESSION -->",
    re.DOTALL,
)
_LINE = re.compile(r"(?P<who>ann|bob) (?P<way>→|←) (?P<frame>\{.*\})")
#: Placeholders that stand for one value wherever they appear (bound when first received).
_BOUND = ("<ann>", "<bob>", "<race>", "<ann-player>", "<bob-player>", "<cursor>")
#: Placeholders that stand for any value of a type.
_KINDS: dict[str, type] = {
    "<token>": str, "<version>": str, "<commitment>": str, "<seed>": str, "<day>": str,
    "<time>": int, "<ms>": int, "<card>": int, "<targets>": list, "<progress>": list,
}
#: The page's example sessions: the main one (unlabelled) and the players' messages.
SESSIONS = ("", "players")


def example_session(label: str = "") -> list[tuple[str, str, dict[str, Any]]]:
    """The lines of the example session ``label``: who, which way (→ sent, ← received),
    the frame."""
    found = {match["label"] or "": match["lines"]
             for match in _SESSION.finditer(PAGE.read_text(encoding="utf-8"))}
    assert label in found, f"docs/protocol.md has no example session {label!r}"
    lines = []
    for text in found[label].splitlines():
        line = _LINE.fullmatch(text)
        assert line is not None, f"not a frame line: {text}"
        lines.append((line["who"], line["way"], json.loads(line["frame"])))
    return lines


def matches(expected: Any, actual: Any, bound: dict[str, Any], where: str) -> None:
    """Fail unless ``actual`` is what the doc shows as ``expected`` (see the page's rule
    for placeholders); binds the placeholders of :data:`_BOUND` on first sight."""
    if isinstance(expected, str) and expected in _BOUND:
        assert isinstance(actual, str), where
        assert bound.setdefault(expected, actual) == actual, f"{where}: {expected}"
    elif isinstance(expected, str) and expected.startswith("<"):
        assert type(actual) is _KINDS[expected], f"{where}: {actual!r} is not {expected}"
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), (where, actual)
        for key, value in expected.items():
            matches(value, actual[key], bound, f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (where, actual)
        for index, (want, got) in enumerate(zip(expected, actual, strict=True)):
            matches(want, got, bound, f"{where}[{index}]")
    else:
        assert type(actual) is type(expected) and actual == expected, (where, actual)


def same_fields(expected: Any, actual: Any, where: str) -> None:
    """Fail unless ``actual`` has ``expected``'s shape: the same keys, values of the same
    types (a ``progress``'s counts and statuses depend on timing)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(actual) == set(expected), (where, actual)
        for key, value in expected.items():
            same_fields(value, actual[key], f"{where}.{key}")
    elif not (isinstance(expected, str) and expected.startswith("<")):
        assert type(actual) is type(expected), (where, actual)


def shaped_like(shown: dict[str, Any], line: dict[str, Any], bound: dict[str, Any]) -> bool:
    """Whether a progress line received is shaped like one the page shows: the same racer
    and name, the same keys, values of the same types."""
    if line["racer"] != bound.get(shown["racer"]) or line["name"] != shown["name"]:
        return False
    try:
        same_fields(shown, line, "progress")
    except AssertionError:
        return False
    return True


def filled(frame: Any, bound: dict[str, Any]) -> Any:
    """A frame to send: the doc's, with each bound placeholder replaced by its value."""
    if isinstance(frame, dict):
        return {key: filled(value, bound) for key, value in frame.items()}
    if isinstance(frame, list):
        return [filled(value, bound) for value in frame]
    return bound[frame] if frame in _BOUND else frame


@pytest.mark.parametrize("label", SESSIONS)
async def test_the_example_session_is_what_the_server_says(tmp_path: Path, label: str) -> None:
    """Replay one of docs/protocol.md's example sessions against the real server: every
    frame received matches the page's, in order (``progress`` by its fields, wherever it
    falls)."""
    session = example_session(label)
    progress_lines = [
        line
        for _, way, frame in session
        if way == "←" and frame["type"] == "progress"
        for line in frame["racers"]
    ]
    config = dataclasses.replace(fast_config(tmp_path / "journal.db"), par_budget=0)
    bound: dict[str, Any] = {}
    async with start_live_server(config) as live, contextlib.AsyncExitStack() as stack:
        clients = {
            who: await stack.enter_async_context(connect(live.url, compression=None))
            for who in ("ann", "bob")
        }

        async def next_frame(who: str) -> dict[str, Any]:
            """The next frame ``who`` receives that is not a ``progress`` (checked on the way)."""
            while True:
                data = await asyncio.wait_for(clients[who].recv(), TIMEOUT)
                assert isinstance(data, bytes)
                decode_server(data)  # as strictly as the reference client reads it
                frame = msgpack.unpackb(data)
                if frame["type"] != "progress":
                    return cast(dict[str, Any], frame)
                same_fields({"type": "", "race": "", "racers": [], "server_time": 0}, frame, who)
                assert frame["race"] == bound["<race>"]
                for line in frame["racers"]:
                    assert any(shaped_like(shown, line, bound) for shown in progress_lines), line

        for number, (who, way, frame) in enumerate(session, start=1):
            where = f"line {number} ({who} {way} {frame['type']})"
            if way == "→":
                await clients[who].send(msgpack.packb(filled(frame, bound)))
            elif frame["type"] != "progress":
                matches(frame, await next_frame(who), bound, where)
    assert set(bound) == {name for name in _BOUND if name in json.dumps(session)}
