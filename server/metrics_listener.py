"""The metrics port: ``GET /metrics`` on a listener of its own, on the server's event loop.

Only used when ``ServerConfig.metrics_port`` is set. It speaks just enough HTTP/1.1 for a
scraper: one request per connection, ``GET`` or ``HEAD`` of ``/metrics`` (any query is
ignored), answered with the exposition and closed. Anything else gets 404, 405 or 400.

It runs on the event loop rather than in ``prometheus_client``'s own HTTP server, which
serves from a thread: that thread would read the server's dictionaries while the loop
changes them, and contend with the loop for the interpreter at every scrape. Here a scrape
is one callback between two others, as it is on the game port.
"""

from __future__ import annotations

import asyncio
import contextlib
import http

from server.metrics import CONTENT_TYPE, Metrics

#: The one path this listener serves.
PATH = "/metrics"


async def serve_metrics(
    metrics: Metrics, host: str, port: int, *, timeout: float, request_bytes: int
) -> asyncio.Server:
    """Listen on ``host:port`` (0: a free port) and answer scrapes of ``metrics``.

    A client has ``timeout`` seconds to send its request (at most ``request_bytes`` of
    request line and headers) and as long again to read the answer.
    """

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(timeout):
                head = await reader.readuntil(b"\r\n\r\n")
            writer.write(respond(head, metrics))
        except asyncio.LimitOverrunError:
            writer.write(_response(http.HTTPStatus.BAD_REQUEST, b"request too long\n"))
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            writer.close()  # gone, or never said anything: nobody to answer
            return
        with contextlib.suppress(TimeoutError, ConnectionError):
            async with asyncio.timeout(timeout):
                await writer.drain()
        writer.close()

    return await asyncio.start_server(answer, host, port, limit=request_bytes)


def respond(head: bytes, metrics: Metrics) -> bytes:
    """The whole HTTP response to a request whose line and headers are ``head``."""
    request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return _response(http.HTTPStatus.BAD_REQUEST, b"not an HTTP/1.x request line\n")
    method, target, _ = parts
    if target.split("?", 1)[0] != PATH:
        return _response(http.HTTPStatus.NOT_FOUND, b"not found\n")
    if method not in ("GET", "HEAD"):
        return _response(http.HTTPStatus.METHOD_NOT_ALLOWED, b"GET or HEAD only\n")
    body = metrics.render()
    return _response(http.HTTPStatus.OK, body, CONTENT_TYPE, send_body=method == "GET")


def _response(
    status: http.HTTPStatus,
    body: bytes,
    content_type: str = "text/plain; charset=utf-8",
    *,
    send_body: bool = True,
) -> bytes:
    head = (
        f"HTTP/1.1 {status.value} {status.phrase}\r\n"
        f"Content-Type: {content_type}\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("latin-1") + (body if send_body else b"")
