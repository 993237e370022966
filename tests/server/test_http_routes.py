"""Plain HTTP on the game port: the web client's page and files, beside the websocket.

Requests are written byte for byte on a raw socket, so that a path reaches the server
exactly as written (an HTTP library would tidy ``..`` or percent-escapes away first).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
from pathlib import Path

import pytest

from protocol import Welcome
from server.http_routes import DEFAULT_WEB_ROOT
from tests.conftest import LiveServer, fast_config, start_live_server
from tests.server.wire_client import WireClient


@dataclasses.dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes


async def request(
    live: LiveServer, path: str, method: str = "GET", headers: tuple[str, ...] = ()
) -> Answer:
    """Send one request as written and read the whole answer (the server then closes)."""
    assert live.server is not None
    reader, writer = await asyncio.open_connection("127.0.0.1", live.server.port)
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers, "", ""]
    writer.write("\r\n".join(lines).encode())
    raw = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in header_lines)
    return Answer(int(status_line.split(" ")[1]), {k.lower(): v for k, v in fields.items()}, body)


@pytest.mark.parametrize("path", ["/", "/solo", "/race/K7QX2MPA", "/watch/K7QX2MPA", "/t/CLUB42",
                                  "/t/CLUB42/play", "/host/CLUB42", "/?from=lan",
                                  "/leaderboard", "/player/u-3c9e1f0a7b2d"])
async def test_every_address_of_the_app_serves_the_page(live_server: LiveServer,
                                                        path: str) -> None:
    answer = await request(live_server, path)
    assert answer.status == 200
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert answer.body == (DEFAULT_WEB_ROOT / "index.html").read_bytes()
    assert answer.headers["cache-control"] == "no-cache"
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert answer.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/static/js/main.js", "text/javascript; charset=utf-8"),
        ("/static/vendor/msgpack.mjs", "text/javascript; charset=utf-8"),
        ("/static/app.css", "text/css; charset=utf-8"),
        ("/static/vendor/msgpack.LICENSE.txt", "text/plain; charset=utf-8"),
    ],
)
async def test_static_files_with_their_content_type_and_validator(
    live_server: LiveServer, path: str, content_type: str
) -> None:
    answer = await request(live_server, path)
    on_disk = (DEFAULT_WEB_ROOT / path.removeprefix("/static/")).read_bytes()
    assert (answer.status, answer.body) == (200, on_disk)
    assert answer.headers["content-type"] == content_type
    assert answer.headers["content-length"] == str(len(on_disk))
    assert answer.headers["etag"] == '"' + hashlib.sha256(on_disk).hexdigest()[:32] + '"'

    again = await request(live_server, path, headers=(f"If-None-Match: {answer.headers['etag']}",))
    assert (again.status, again.body) == (304, b"")
    assert again.headers["etag"] == answer.headers["etag"]
    stale = await request(live_server, path, headers=('If-None-Match: "0123"',))
    assert (stale.status, stale.body) == (200, on_disk)


@pytest.mark.parametrize(
    "path",
    [
        "/static/../server/app.py",
        "/static/../../pyproject.toml",
        "/static/%2e%2e/server/app.py",
        "/static/js/../../../server/config.py",
        "/static//etc/passwd",
        "/static/",
        "/static/js",
        "/race/a/b",
        "/race/" + "A" * 33,
        "/index.html",
        "/watch/../static/js/main.js",
        "/player/",
        "/player/a/b",
        "/player/" + "u" * 65,
        "/leaderboard/x",
    ],
)
async def test_nothing_outside_the_web_root_and_no_made_up_path(
    live_server: LiveServer, path: str
) -> None:
    answer = await request(live_server, path)
    assert answer.status == 404
    assert answer.body == b"not found\n"


async def test_files_of_other_kinds_hidden_files_and_links_are_not_served(
    tmp_path: Path,
) -> None:
    root = tmp_path / "web"
    (root / "js").mkdir(parents=True)
    (root / "index.html").write_text("<p>hi</p>")
    (root / "js" / "main.js").write_text("// main")
    (root / "package.json").write_text("{}")
    (root / ".secret.js").write_text("// hidden")
    (root / ".git").mkdir()
    (root / ".git" / "config.txt").write_text("hidden")
    outside = tmp_path / "outside.js"
    outside.write_text("// outside the root")
    (root / "js" / "link.js").symlink_to(outside)
    config = dataclasses.replace(fast_config(tmp_path / "f.db"), web_root=str(root))
    async with start_live_server(config) as live:
        assert (await request(live, "/")).body == b"<p>hi</p>"
        assert (await request(live, "/static/js/main.js")).body == b"// main"
        for path in ("/static/package.json", "/static/.secret.js", "/static/.git/config.txt",
                     "/static/js/link.js"):
            assert (await request(live, path)).status == 404, path


async def test_a_server_without_the_web_client_says_so(tmp_path: Path) -> None:
    config = dataclasses.replace(fast_config(tmp_path / "f.db"), web_root=str(tmp_path / "no"))
    async with start_live_server(config) as live:
        answer = await request(live, "/race/ABCD")
        assert answer.status == 404
        assert b"no web client" in answer.body
        assert (await request(live, "/healthz")).body == b"ok\n"


async def test_head_answers_without_the_body_and_other_methods_get_405(
    live_server: LiveServer,
) -> None:
    head = await request(live_server, "/static/js/main.js", method="HEAD")
    size = len((DEFAULT_WEB_ROOT / "js" / "main.js").read_bytes())
    assert (head.status, head.body, head.headers["content-length"]) == (200, b"", str(size))
    for method in ("POST", "PUT", "DELETE"):
        answer = await request(live_server, "/", method=method)
        assert answer.status == 405, method
        assert answer.headers["allow"] == "GET, HEAD"


async def test_health_and_metrics_as_before(live_server: LiveServer) -> None:
    assert (await request(live_server, "/healthz")).body == b"ok\n"
    metrics = await request(live_server, "/metrics")
    assert metrics.status == 200
    assert metrics.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert b"foursquare_connections_total" in metrics.body


async def test_the_websocket_upgrades_on_the_page_address_too(live_server: LiveServer) -> None:
    # The page connects its websocket to the address it was served from.
    client = await WireClient.connect(live_server.url + "/", "ann")
    assert isinstance(client.welcome, Welcome)
    await client.connection.close()

