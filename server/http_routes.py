"""HTTP on the game port: health, metrics and the web client, beside the websocket upgrade.

Every request the port receives comes here first (``SocketTier.process_request``). A
websocket upgrade, on any path, is not answered here: it goes on to admission and the
handshake. Anything else is plain HTTP, answered from memory, and the connection closes
after the answer (the websockets library speaks no keep-alive):

- ``GET /healthz``: ``ok``, or 503 while the server stops;
- ``GET /metrics``: the Prometheus exposition, unless metrics have a port of their own
  (then 404 here);
- ``GET /``, ``/solo``, ``/race/CODE``, ``/watch/CODE``, ``/t/CODE``, ``/t/CODE/play``,
  ``/host/CODE``, ``/leaderboard``, ``/player/ID``, ``/daily``: the web client's page
  (``index.html``), which reads its address to choose a screen;
- ``GET /static/PATH``: a file of the web client, by its path under the web root.

The web client's files are read into memory once, when the server starts
(:meth:`WebFiles.load`, off the event loop), so answering never touches the disk, and a
request's path is only ever a key into that table: no file name is built from it, so no
path can climb out of the web root. ``HEAD`` is answered like ``GET`` without the body;
other methods get 405.
"""

from __future__ import annotations

import email.utils
import hashlib
import http
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from server.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from server.metrics import Metrics
from server.metrics_listener import PATH as METRICS_PATH

HEALTH_PATH = "/healthz"

#: Where the web client's files are served: ``/static/js/main.js`` is ``js/main.js``
#: under the web root.
STATIC_PREFIX = "/static/"

#: The page's own addresses, each answered with ``index.html``: the lobby, practice alone,
#: a race, a race watched, a tournament watched, a tournament entered, a tournament's host
#: console, the leaderboards, a player's profile, the daily deal. A code is what the
#: protocol allows for a race id or a tournament code, a player's id what it allows for one.
APP_PATH = re.compile(
    r"/(?:solo|daily|leaderboard|(?:race|watch|t|host)/[A-Za-z0-9_-]{1,32}|t/[A-Za-z0-9_-]{1,32}/play"
    r"|player/[A-Za-z0-9_.:-]{1,64})?"
)

#: The kinds of file served, by suffix; any other file under the web root is not served
#: (a stray ``package.json`` or editor backup stays private).
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
}

#: Sent with every file. Files are revalidated on every load (``no-cache`` with an
#: ``ETag``, answered 304 when unchanged): a server upgraded in place never leaves a
#: browser holding an old module beside a new one, and on a LAN a revalidation costs a
#: round trip of a few hundred bytes. The policy lets the page load only its own files
#: and open websockets to its own server, and no other site frame it (the host console
#: acts on a click).
SECURITY_HEADERS = (
    ("Cache-Control", "no-cache"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
)

#: Where the web client's files are in a checkout (``make run``): ``web/public``.
DEFAULT_WEB_ROOT = Path(__file__).resolve().parent.parent / "web" / "public"

NO_WEB_CLIENT = (
    "This server has no web client: its files (web/public in the source tree) were not "
    "found. Websocket clients can still connect here.\n"
)


@dataclass(frozen=True, slots=True)
class WebFile:
    """One file of the web client, as it is sent."""

    body: bytes
    content_type: str
    etag: str
    """A strong validator: the first 128 bits of the body's SHA-256, quoted."""


@dataclass(frozen=True, slots=True)
class WebFiles:
    """The web client's files in memory, by path under the web root (``js/main.js``)."""

    files: dict[str, WebFile]

    @classmethod
    def load(cls, folder: str | None) -> WebFiles:
        """Read every servable file under ``folder`` (``None``: :data:`DEFAULT_WEB_ROOT`),
        blocking: call it off the event loop.

        Hidden files and folders, symbolic links and files of other kinds are left out. A
        missing folder gives no files: the page then answers with :data:`NO_WEB_CLIENT`.
        """
        root = DEFAULT_WEB_ROOT if folder is None else Path(folder)
        files: dict[str, WebFile] = {}
        if not root.is_dir():
            return cls(files)
        for path in sorted(root.rglob("*")):
            relative = path.relative_to(root)
            if (
                path.is_symlink()
                or not path.is_file()
                or any(part.startswith(".") for part in relative.parts)
                or path.suffix not in CONTENT_TYPES
            ):
                continue
            body = path.read_bytes()
            etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
            files[relative.as_posix()] = WebFile(body, CONTENT_TYPES[path.suffix], etag)
        return cls(files)

    @property
    def page(self) -> WebFile | None:
        """``index.html``, served for every address of the app."""
        return self.files.get("index.html")


class HttpRoutes:
    """Answers the plain HTTP requests of the game port (see the module's docstring)."""

    def __init__(
        self,
        web: WebFiles,
        *,
        stopping: Callable[[], bool],
        metrics: Metrics | None,
    ) -> None:
        """``metrics`` is ``None`` when metrics are served on a port of their own."""
        self.web = web
        self._stopping = stopping
        self._metrics = metrics

    def answer(self, request: Request) -> Response | None:
        """The response to ``request``, or ``None`` for a websocket upgrade."""
        if "websocket" in request.headers.get("Upgrade", "").lower():
            return None
        method = getattr(request, "method", "GET")
        if method not in ("GET", "HEAD"):
            response = _text(http.HTTPStatus.METHOD_NOT_ALLOWED, "GET or HEAD only\n")
            response.headers["Allow"] = "GET, HEAD"
            return response
        response = self._route(request, request.path.split("?", 1)[0])
        if method == "HEAD":
            response = Response(
                response.status_code, response.reason_phrase, response.headers, b""
            )
        return response

    def _route(self, request: Request, path: str) -> Response:
        if path == HEALTH_PATH:
            if self._stopping():
                return _text(http.HTTPStatus.SERVICE_UNAVAILABLE, "stopping\n")
            return _text(http.HTTPStatus.OK, "ok\n")
        if path == METRICS_PATH:
            if self._metrics is None:  # served on its own port only
                return _text(http.HTTPStatus.NOT_FOUND, "not found\n")
            return _response(http.HTTPStatus.OK, self._metrics.render(), METRICS_CONTENT_TYPE)
        if APP_PATH.fullmatch(path):
            page = self.web.page
            if page is None:
                return _text(http.HTTPStatus.NOT_FOUND, NO_WEB_CLIENT)
            return _file(request, page)
        if path.startswith(STATIC_PREFIX):
            file = self.web.files.get(path.removeprefix(STATIC_PREFIX))
            if file is not None:
                return _file(request, file)
        return _text(http.HTTPStatus.NOT_FOUND, "not found\n")


def _file(request: Request, file: WebFile) -> Response:
    """``file``, or 304 when the browser already holds this version of it."""
    if file.etag in request.headers.get("If-None-Match", ""):
        response = _response(http.HTTPStatus.NOT_MODIFIED, b"", None)
    else:
        response = _response(http.HTTPStatus.OK, file.body, file.content_type)
    response.headers["ETag"] = file.etag
    for name, value in SECURITY_HEADERS:
        response.headers[name] = value
    return response


def _text(status: http.HTTPStatus, text: str) -> Response:
    return _response(status, text.encode(), "text/plain; charset=utf-8")


def _response(status: http.HTTPStatus, body: bytes, content_type: str | None) -> Response:
    headers = Headers(
        [
            ("Date", email.utils.formatdate(usegmt=True)),
            ("Connection", "close"),
            ("Content-Length", str(len(body))),
        ]
    )
    if content_type is not None:
        headers["Content-Type"] = content_type
    return Response(status.value, status.phrase, headers, body)
