"""``make demo``: a local server, three bots and you, in one quick race.

Run as ``python -m client.demo``. The server runs on a free port with a throwaway
journal; the bots join a moment after the client, so that you are in the race from the
start; everything started here is stopped when the client exits.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BOTS = 3
BOT_DELAY = 1.0
"""Seconds between the client starting and the bots joining."""
SERVER_WAIT = 15.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_for_port(port: int, server: subprocess.Popen[bytes]) -> bool:
    """Whether the server listens before it exits or the wait runs out."""
    deadline = time.monotonic() + SERVER_WAIT
    while time.monotonic() < deadline and server.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.1)
    return False


def main() -> int:
    """Start the server and the bots, run the client, then stop them all."""
    foursquare = [sys.executable, "-m", "cli.main"]
    port = _free_port()
    url = f"ws://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as scratch:
        log = (Path(scratch) / "demo.log").open("wb")
        server = subprocess.Popen(
            [*foursquare, "serve", "--port", str(port), "--db", str(Path(scratch) / "demo.db")],
            stdout=log, stderr=subprocess.STDOUT,
        )
        bots: subprocess.Popen[bytes] | None = None
        try:
            if not _wait_for_port(port, server):
                print(f"The demo server did not start; its log:\n{Path(log.name).read_text()}")
                return 1
            bots = subprocess.Popen(
                ["sh", "-c", f"sleep {BOT_DELAY}; exec \"$@\"", "bots",
                 *foursquare, "bot", "--server", url, "--quick", "-n", str(BOTS)],
                stdout=log, stderr=subprocess.STDOUT,
            )
            from cli.main import main as foursquare_main

            return foursquare_main(["play", "--server", url, "--quick"])
        finally:
            for process in (bots, server):
                if process is not None and process.poll() is None:
                    process.terminate()
                    try:
                        process.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        process.kill()
            log.close()


if __name__ == "__main__":
    sys.exit(main())
