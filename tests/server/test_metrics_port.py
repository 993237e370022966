"""``GET /metrics`` on a port of its own (``--metrics-port``): the game port then refuses it."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path

from protocol import CreateRace, RaceOptions, RaceSnapshot
from tests.conftest import fast_config, run_server_process, start_live_server
from tests.server.exposition import exposition_samples
from tests.server.wire_client import TIMEOUT, WireClient, http_get


async def raw_request(port: int, request: bytes) -> bytes:
    """Send ``request`` as it is to the metrics port; the whole answer, until it closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), TIMEOUT)
    writer.close()
    return answer


async def test_with_a_metrics_port_only_that_port_serves_metrics(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "j.db"), metrics_port=0)
    async with start_live_server(config) as live:
        server = live.server
        assert server is not None and server.metrics_port not in (None, server.port)
        ann = await WireClient.connect(live.url, "ann")
        await ann.send(CreateRace(options=RaceOptions(max_racers=2), id=1))
        await ann.expect(RaceSnapshot)

        status, _, _ = await asyncio.to_thread(http_get, live.http_url + "/metrics")
        assert status == 404
        status, _, body = await asyncio.to_thread(http_get, live.http_url + "/healthz")
        assert (status, body) == (200, "ok\n")

        assert server.metrics_url == f"http://127.0.0.1:{server.metrics_port}/metrics"
        status, kind, metrics = await asyncio.to_thread(http_get, server.metrics_url)
        assert status == 200 and kind.startswith("text/plain; version=0.0.4")
        samples = exposition_samples(metrics)
        assert samples["foursquare_connections", ()] == 1
        assert samples["foursquare_seats_total", ()] == 1
        assert samples["foursquare_races", (("phase", "lobby"),)] == 1
        assert samples["process_resident_memory_bytes", ()] > 0
        await ann.close()


async def test_the_metrics_port_answers_anything_else_with_an_error(tmp_path: Path) -> None:
    config = dataclasses.replace(
        fast_config(tmp_path / "j.db"), metrics_port=0, metrics_request_bytes=1024
    )
    async with start_live_server(config) as live:
        assert live.server is not None and live.server.metrics_port is not None
        port = live.server.metrics_port
        answers = {
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n": b"HTTP/1.1 404 ",
            b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n": b"HTTP/1.1 405 ",
            b"hello there\r\n\r\n": b"HTTP/1.1 400 ",
            b"GET /metrics HTTP/1.1\r\nX: " + b"y" * 2000 + b"\r\n\r\n": b"HTTP/1.1 400 ",
        }
        for request, expected in answers.items():
            assert (await raw_request(port, request)).startswith(expected), request[:20]
        head = await raw_request(port, b"HEAD /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n")
        # After all that, it still serves scrapes.
        status, _, metrics = await asyncio.to_thread(http_get, live.server.metrics_url)
        assert status == 200 and ("foursquare_moves_total", ()) in exposition_samples(metrics)


def test_serve_takes_a_metrics_port_flag(tmp_path: Path) -> None:
    with run_server_process(tmp_path / "j.db", "--metrics-port", "0") as process:
        match = re.search(r"metrics on (http://127\.0\.0\.1:(\d+)/metrics)", process.banner)
        assert match is not None, process.banner
        assert match[2] != process.http_url.rsplit(":", 1)[1]
        status, _, metrics = http_get(match[1])
        assert status == 200 and ("foursquare_moves_total", ()) in exposition_samples(metrics)
        assert http_get(process.http_url + "/metrics")[0] == 404


async def test_the_metrics_port_hangs_up_on_a_client_that_says_nothing(tmp_path: Path) -> None:
    config = dataclasses.replace(
        fast_config(tmp_path / "j.db"), metrics_port=0, handshake_timeout=0.3
    )
    async with start_live_server(config) as live:
        assert live.server is not None and live.server.metrics_port is not None
        assert await raw_request(live.server.metrics_port, b"GET /metrics HTTP/1.1\r\n") == b""
