"""Bounded abuse: a rate limit a resume does not reset, and what a connection that never
says hello can cost (frames, log lines)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from protocol import CloseCode, Error, ErrorCode, Ping, Pong, decode_server, encode
from server.logs import logger
from tests.conftest import fast_config, start_live_server
from tests.server.wire_client import TIMEOUT, WireClient


async def flood_until_closed(client: WireClient, pings: int) -> tuple[int, int]:
    """Send ``pings`` pings without waiting, then read every answer until the server
    closes the connection: (pongs, rate_limited errors)."""
    for request in range(pings):
        try:
            await client.send(Ping(id=request))
        except ConnectionClosed:
            break
    pongs = refused = 0
    with pytest.raises(ConnectionClosed):
        while True:
            answer = await client.receive()
            if isinstance(answer, Pong):
                pongs += 1
            elif isinstance(answer, Error) and answer.code is ErrorCode.RATE_LIMITED:
                refused += 1
    return pongs, refused


async def test_a_resume_continues_the_rate_limit_of_its_session(tmp_path: Path) -> None:
    """Flood until closed with 4005, resume, flood again, three times: the pings answered
    over the whole run stay within one bucket's burst and rate, as if on one connection."""
    rate, burst = 0.5, 5
    config = dataclasses.replace(
        fast_config(tmp_path / "db"), rate_per_second=rate, rate_burst=burst, rate_strikes=10
    )
    loop = asyncio.get_running_loop()
    async with start_live_server(config) as live:
        started = loop.time()
        client = await WireClient.connect(live.url, "flood")
        token = client.welcome.resume
        accepted = 0
        for _ in range(3):
            pongs, refused = await flood_until_closed(client, 60)
            assert client.connection.close_code == CloseCode.RATE_LIMITED
            assert refused > 0
            accepted += pongs
            client = await WireClient.connect(live.url, "flood", resume=token)
        elapsed = loop.time() - started
        await client.close()
    # What one bucket allows over the whole run (a fresh bucket per connection let
    # three bursts through).
    assert accepted <= burst + rate * elapsed, (accepted, elapsed)


class Lines(logging.Handler):
    """Keeps the server's log lines."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def server_log() -> Iterator[Lines]:
    lines = Lines()
    logger.addHandler(lines)
    previous = logger.level
    logger.setLevel(logging.INFO)
    yield lines
    logger.removeHandler(lines)
    logger.setLevel(previous)


async def test_frames_before_hello_are_bounded_and_close_the_connection(
    tmp_path: Path, server_log: Lines
) -> None:
    """One client that never says hello sends thousands of frames: it is closed with
    4000 once it has sent too many, and its log lines stay few."""
    config = fast_config(tmp_path / "db")
    async with start_live_server(config) as live, connect(live.url) as stranger:

        async def read_all() -> list[object]:
            answers: list[object] = []
            with contextlib.suppress(ConnectionClosed):
                while True:
                    answers.append(decode_server(await stranger.recv()))
            return answers

        reading = asyncio.create_task(read_all())
        frame = encode(Ping(id=1))  # answered with hello_required
        sent = 0
        with contextlib.suppress(ConnectionClosed):
            while sent < 5000:
                await stranger.send(frame)
                sent += 1
                await asyncio.sleep(0)
        answers = await asyncio.wait_for(reading, TIMEOUT)
        assert stranger.close_code == CloseCode.PROTOCOL_ERROR
        assert all(isinstance(answer, Error) for answer in answers)
        assert len(answers) <= config.bad_messages
    lines = [line for line in server_log.lines if '"error_sent"' in line]
    assert len(lines) <= config.logged_errors_per_connection
    (closed,) = [json.loads(line) for line in server_log.lines if '"connection_close"' in line]
    assert closed["errors_not_logged"] == len(answers) - len(lines) > 0


async def test_a_rate_limited_answer_names_the_request_it_refuses(tmp_path: Path) -> None:
    """Past the allowance, each request is answered with ``rate_limited`` carrying its
    type and id (a client waiting on its ``ping`` id hears the refusal); a frame that does
    not decode gets what could be read of it. Before ``hello`` too."""
    config = dataclasses.replace(
        fast_config(tmp_path / "db"), rate_per_second=0.1, rate_burst=2, rate_strikes=10
    )
    unreadable = b"\xc1"  # not msgpack at all
    misspelt = msgpack.packb({"type": "ping", "id": 7, "bogus": 1})  # decodes: type and id
    async with start_live_server(config) as live:
        client = await WireClient.connect(live.url, "quick")  # a fresh bucket after hello
        for request in (1, 2, 3):
            await client.send(Ping(id=request))
        await client.connection.send(unreadable)
        await client.connection.send(misspelt)
        answers = [await client.receive() for _ in range(5)]
        assert [a.reply_to for a in answers[:2] if isinstance(a, Pong)] == [1, 2]
        refusals = [(a.code, a.in_reply_to, a.reply_to) for a in answers[2:]
                    if isinstance(a, Error)]
        assert refusals == [
            (ErrorCode.RATE_LIMITED, "ping", 3),
            (ErrorCode.RATE_LIMITED, None, None),
            (ErrorCode.RATE_LIMITED, "ping", 7),
        ]
        await client.close()
        async with connect(live.url) as stranger:  # before hello: an allowance of its own
            for request in (11, 12, 13):
                await stranger.send(encode(Ping(id=request)))
            early = [decode_server(await asyncio.wait_for(stranger.recv(), TIMEOUT))
                     for _ in range(3)]
        assert [(a.code, a.in_reply_to, a.reply_to) for a in early if isinstance(a, Error)] == [
            (ErrorCode.HELLO_REQUIRED, "ping", 11),
            (ErrorCode.HELLO_REQUIRED, "ping", 12),
            (ErrorCode.RATE_LIMITED, "ping", 13),
        ]
